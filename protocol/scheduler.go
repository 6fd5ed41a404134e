package protocol

import (
	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/protocol/transport"
)

// How a loop's connections reach the store: one driver per loop (or per
// connection, on the portable transport), chosen once (driverFor) from how
// the store declares it is to be driven (Server.drive, driveOf). A
// connection asks its driver whether to answer PK commands on the loop
// (onLoop), and hands it each run it starts (admit, submit); the driver
// gives the store batches (batch.go) and has the connections resumed with
// their replies. Every batch that waits on the store is bounded by
// --backend-timeout, counted as the store's silence (package watchdog).
//
//	drive         driver        file            path of a run
//	DriveInline   inlineDriver  drive_inline.go answered on the loop as read (Handler.Do)
//	DriveBatch    batchDriver   drive_batch.go  the loop's batch: on the loop, or off it when slow
//	DriveWire     wireDriver    drive_wire.go   the loop's batch, on the loop's own Redis connection
//	DriveCalls    callsDriver   drive_calls.go  a batch of its own, one store call per command
type driver interface {
	// onLoop reports whether PK commands are answered on the loop as they
	// are read (conn.dispatch, Handler.Do), not in runs: then only a
	// request of megabytes (conn.serveBig) is submitted. A connection
	// reads it once (conn.inline).
	onLoop() bool
	// admit reports whether c may start a run now. Otherwise c is parked,
	// its input unread, and served again once the runs under way leave
	// room (landed).
	admit(c *conn) bool
	// submit takes c's run (c.runArgs) to the store; c is at the store
	// (conn.goBusy) until its replies are written and it is resumed.
	submit(c *conn)
	// landed counts n commands of a run as answered, when the connection
	// is resumed, on the loop.
	landed(n int)
	// close stops the driver's goroutines and connections (Shutdown).
	close()
}

// driverFor is the driver of loop's connections, made on first use: the
// one place that chooses a run's path from Server.drive. loop is nil for
// the portable transport, which has no loop that could wait on a batch:
// there each run of a store that batches is a batch of its own.
func (s *Server) driverFor(loop transport.Loop) driver {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.drivers[loop]; ok && loop != nil {
		return d
	}
	var d driver
	switch {
	case s.drive == backend.DriveInline:
		d = inlineDriver{s}
	case s.drive == backend.DriveCalls:
		d = &callsDriver{s: s, perCall: 1}
	case loop == nil:
		d = &callsDriver{s: s, perCall: maxCallCmds}
	case s.drive == backend.DriveWire:
		d = newWireDriver(s, loop)
	default: // backend.DriveBatch
		d = newBatchDriver(s, loop)
	}
	if loop != nil {
		s.drivers[loop] = d
	}
	return d
}

// loopRuns bounds the commands of one loop's runs under way, from submit
// to resume: waiting for a batch, at the store, or on the loop's Redis
// connection. Past maxLoopCmds, connections that would start a run are
// parked, their input unread, and served in turn as runs are answered. So
// the memory of the loop's work under way is bounded, and so is what is
// sent ahead on its Redis connection: a command of another client waits
// behind at most that much. The loop's own.
type loopRuns struct {
	queued int
	parked []*conn
}

// maxLoopCmds bounds the commands of one loop's runs under way (queued);
// each connection also has at most one run of maxRunCmds. 4096 EVALSHAs
// keep Redis busy while their replies come back, and take it a few tens of
// milliseconds; 4096 commands are one fsync of the embedded store.
const maxLoopCmds = 4096

// admit reports whether a run may start; otherwise c waits, parked.
func (l *loopRuns) admit(c *conn) bool {
	if l.queued < maxLoopCmds {
		return true
	}
	if c.st.park() {
		l.parked = append(l.parked, c)
	}
	return false
}

// landed counts n commands of a run as answered and serves parked
// connections, oldest first, while there is room.
func (l *loopRuns) landed(n int) {
	l.queued -= n
	for len(l.parked) > 0 && l.queued < maxLoopCmds {
		c := l.parked[0]
		l.parked[0] = nil
		l.parked = l.parked[1:]
		c.st.unpark()
		c.serveAgain()
	}
	if len(l.parked) == 0 {
		l.parked = l.parked[:0:0] // let a burst's slice go
	}
}
