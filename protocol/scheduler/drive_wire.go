package scheduler

import (
	"github.com/prepkey/prepkey/backend/redis/loopconn"
	"github.com/prepkey/prepkey/protocol/transport"
)

// wireDriver drives a standalone Redis (backend.DriveWire): the loop does
// not wait at all. It writes each batch to its own connection to the
// store and reads the replies when they come (package loopconn), so no
// goroutine waits on Redis and several batches are on their way at once.
// While that connection is down (Redis failed or was slow, or the loop
// still dials), batches take the batch driver's path off the loop, to
// Store.Batch on its goroutine, never on the loop.
type wireDriver struct {
	*batchDriver // the runs under way, and the path while the connection is down
	up           link
}

func newWireDriver(cfg *Config, loop transport.Loop) *wireDriver {
	return &wireDriver{batchDriver: newBatchDriver(cfg, loop), up: newLink(cfg, loop)}
}

// link is the loop's own connection to a store driven backend.DriveWire
// (loopconn.Conn, link.go); the loop hands it its gnet events as a
// transport.LoopConn.
type link interface {
	// Ready reports whether batches can go on it now.
	Ready() bool
	// Send writes a batch; its Answer runs on the loop.
	Send(loopconn.Batch)
	// Close stops its dialling and watching; the loops close the
	// connection.
	Close()
}

// Submit queues r's run; called on the loop.
func (w *wireDriver) Submit(r Conn) {
	w.queued += len(r.Commands())
	if r.Big() || !w.up.Ready() {
		// A request of megabytes (an assembled one, conn.serveBig) is not
		// written by the loop: encoding it and copying it into the
		// connection's output took the loop seconds (issue 23, N1), while
		// the Redis client does it on a goroutine. And while the
		// connection is down the loop never waits on the backend.
		w.queueOffLoop(r)
		return
	}
	w.queueOnLoop(r, w.send)
}

// send writes the runs submitted meanwhile as one batch.
func (w *wireDriver) send() {
	runs := w.takePending()
	if !w.up.Ready() { // the connection went down since they were queued
		w.queueOffLoop(runs...)
		return
	}
	w.up.Send(newWireBatch(w, runs))
}

func (w *wireDriver) Close() {
	w.batchDriver.Close()
	w.up.Close()
}
