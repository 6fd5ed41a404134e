package protocol

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/transport"
	"github.com/prepkey/prepkey/protocol/upstream"
)

// batcher sends the PK runs of one event loop's connections to the store.
// Runs that arrive while the store works on a batch wait and go together in
// the next: one Redis pipeline, or one fsync, for many clients. So the
// batch grows with the load and no timer delays a lone request. Each
// command stays atomic on its own; commands of different connections are
// concurrent anyway, and one connection has at most one run in a batch.
//
// While the store answers quickly, the loop waits for a batch, after it
// has read all the input that is ready: on a 2-core machine that cost less
// than handing the batch to the batcher's goroutine and back (fewer thread
// wake-ups: 19 against 25 µs of CPU per request at pipeline 1,
// scripts/bench.sh). The batch itself runs on another goroutine (a job,
// handed to one of the batcher's workers: dispatch), which the Go
// scheduler runs on the loop's own thread while
// the loop waits, so the fast path wakes no other thread; the loop waits
// for it at most onLoopBudget. A batch that takes longer (a slow or hung
// disk, a failing backend) is left to its job, the loop goes on answering
// other clients, and the next batches go off the loop, to the batcher's
// goroutine; the first fast batch there brings them back. Every batch is
// answered within --backend-timeout (see job).
//
// With a Wire (backend.DriveWire: a standalone Redis), the loop does not
// wait at all: it writes the batch to its own connection to the backend
// and reads the replies when they come (package upstream). While that
// connection is down, batches go to Handler.Batch on the batcher's
// goroutine, never on the loop: the connection is down because the
// backend failed or was slow.
type batcher struct {
	handler Handler
	loop    transport.Loop
	offLoop atomic.Bool
	up      link // the loop's own connection to a DriveWire store, or nil
	srv     *Server
	timer   *time.Timer  // the loop's wait for a job; stopped while unused
	jobs    atomic.Int32 // jobs still at the store (maxJobsInFlight)
	work    chan *job    // unbuffered: a job for a worker that waits (dispatch)
	workers atomic.Int32 // workers alive (dispatch)

	onLoop []*conn // runs for the next batch on the loop; the loop's own

	// queued counts the commands of the loop's runs from submit to resume:
	// waiting, at the store, or on the loop's Redis connection. Past
	// maxLoopCmds, connections that would start a run are parked, their
	// input unread, and served in turn as runs are answered. So the memory
	// of the loop's work under way is bounded, and so is what is sent
	// ahead on its Redis connection: a command of another client waits
	// behind at most that much. The loop's own.
	queued int
	parked []*conn

	mu    sync.Mutex
	queue []*conn       // runs for the next batch off the loop
	wake  chan struct{} // holds a token while queue may be non-empty
	stop  chan struct{}
}

// onLoopBudget is how long a batch on the loop may take before the next
// ones leave the loop: a Redis round trip or an fsync takes well under it.
const onLoopBudget = 5 * time.Millisecond

func newBatcher(s *Server, loop transport.Loop) *batcher {
	b := &batcher{handler: s.handler, loop: loop, srv: s, timer: time.NewTimer(time.Hour),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), work: make(chan *job)}
	b.timer.Stop()
	if s.drive == backend.DriveWire {
		b.up = newLink(s, loop)
	}
	go b.run()
	return b
}

// link is the loop's own connection to a store driven backend.DriveWire
// (upstream.Conn); the loop hands it its gnet events as a loopConn.
type link interface {
	// Ready reports whether batches can go on it now.
	Ready() bool
	// Send writes a batch; its Answer runs on the loop.
	Send(upstream.Batch)
	// Close stops its dialling; the loops close the connection.
	Close()
}

// ready reports whether batches go on the loop's own connection.
func (b *batcher) ready() bool { return b.up != nil && b.up.Ready() }

// maxLoopCmds bounds the commands of one loop's runs under way (queued);
// each connection also has at most one run of maxRunCmds. 4096 EVALSHAs
// keep Redis busy while their replies come back, and take it a few tens of
// milliseconds; 4096 commands are one fsync of the embedded store.
const maxLoopCmds = 4096

// full reports whether a new run must wait (park) for room.
func (b *batcher) full() bool { return b.queued >= maxLoopCmds }

// park has c wait, its input unread, until runs under way are answered.
func (b *batcher) park(c *conn) {
	if c.st.park() {
		b.parked = append(b.parked, c)
	}
}

// landed counts n commands of a run as answered and serves parked
// connections, oldest first, while there is room.
func (b *batcher) landed(n int) {
	b.queued -= n
	for len(b.parked) > 0 && !b.full() {
		c := b.parked[0]
		b.parked[0] = nil
		b.parked = b.parked[1:]
		c.st.unpark()
		c.serveAgain()
	}
	if len(b.parked) == 0 {
		b.parked = b.parked[:0:0] // let a burst's slice go
	}
}

// submit queues c's run (c.runArgs); called on the loop.
func (b *batcher) submit(c *conn) {
	b.queued += len(c.runArgs)
	if c.bigRun && b.up != nil {
		// A request of megabytes (an assembled one, conn.serveBig) is not
		// written by the loop: encoding it and copying it into the
		// connection's output took the loop seconds (issue 23, N1), while
		// the Redis client does it on a goroutine.
		b.queueOffLoop(c)
		return
	}
	if b.ready() || (b.up == nil && !b.offLoop.Load()) {
		b.onLoop = append(b.onLoop, c)
		if len(b.onLoop) == 1 {
			// Runs once the loop has served the input that is ready now.
			_ = b.loop.Later(b.runOnLoop)
		}
		return
	}
	// While a Wire's connection is down (the backend is away or slow, or
	// the loop is still dialling) the loop never waits on the backend.
	b.queueOffLoop(c)
}

// queueOffLoop queues runs for the batcher's goroutine.
func (b *batcher) queueOffLoop(conns ...*conn) {
	b.mu.Lock()
	b.queue = append(b.queue, conns...)
	first := len(b.queue) == len(conns)
	b.mu.Unlock()
	if first {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

func (b *batcher) runOnLoop() {
	conns := b.onLoop
	b.onLoop = make([]*conn, 0, 2*len(conns))
	switch {
	case b.ready():
		b.up.Send(&wireBatch{conns: conns, cmds: runsOf(conns)})
		return
	case b.up != nil: // the connection went down since they were queued
		b.queueOffLoop(conns...)
		return
	}
	if !startJob(b.srv, b.loop, conns, b, true).wait(b.timer, onLoopBudget) {
		b.offLoop.Store(true)
	}
}

// run sends the batches that are off the loop, one at a time: each waits
// for the previous one's answer, which comes within the backend timeout.
func (b *batcher) run() {
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			return
		}
		b.mu.Lock()
		conns := b.queue
		// The job keeps conns until they are resumed: a new slice, sized
		// for a batch like this one.
		b.queue = make([]*conn, 0, 2*len(conns))
		b.mu.Unlock()
		if len(conns) == 0 {
			continue
		}
		// A quick answer brings the next batches back on the loop (finish).
		j := startJob(b.srv, b.loop, conns, b, false)
		select {
		case <-j.answered:
		case <-b.stop:
			return
		}
	}
}

// wireBatch is the runs of conns sent on the loop's own connection to the
// store.
type wireBatch struct {
	conns []*conn
	cmds  [][][]byte
}

func (w *wireBatch) Commands() [][][]byte { return w.cmds }

func (w *wireBatch) Stored(n int, took time.Duration) { w.conns[0].stats.StoreCall(n, took) }

// Answer writes the replies to the connections' output and resumes them.
func (w *wireBatch) Answer(replies []commands.Reply) {
	writeReplies(w.conns, replies)
	resumeAll(w.conns)
}

// runsOf is the commands of conns' runs, one after the other.
func runsOf(conns []*conn) [][][]byte {
	n := 0
	for _, c := range conns {
		n += len(c.runArgs)
	}
	cmds := make([][][]byte, 0, n)
	for _, c := range conns {
		cmds = append(cmds, c.runArgs...)
	}
	return cmds
}

// writeReplies writes replies, in the order of runsOf(conns), to each
// connection's out.
func writeReplies(conns []*conn, replies []commands.Reply) {
	recordRuns(conns, replies)
	i := 0
	for _, c := range conns {
		for range c.runArgs {
			c.out.Reply(replies[i])
			i++
		}
	}
}

func resumeAll(conns []*conn) {
	for _, c := range conns {
		c.resume()
	}
}

func (b *batcher) close() {
	close(b.stop)
	if b.up != nil {
		b.up.Close()
	}
}
