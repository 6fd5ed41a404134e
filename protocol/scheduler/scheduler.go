// Package scheduler takes runs of PK commands to the store, one way: each
// run, or the runs of a loop's connections that wait together, is parsed
// into ops on the loop (Store.ParseBatch: the refused commands answered at
// once) and submitted to the store as a backend.Submission (Store.Submit)
// under the store's one deadline; the connections are answered and
// resumed when the store finishes it (job.done). What differs between
// stores is what each declares of itself (backend.Info: Completes,
// Joins), read once, in New: whether runs join, whether the loop waits a
// moment for the answer, whether a deadline is armed.
//
// It sees a connection only as a Conn: its run's commands, where their
// replies go, and how the connection is parked, resumed and served again.
// It may not touch sockets or event loops but through transport.Loop
// (package transport), frame or write RESP (package resp, through Conn),
// spell an error reply (the catalogue: commands.Unavailable), or reach a
// store but through Store.
package scheduler

import (
	"context"
	"sync"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// Conn is a client connection as the scheduler sees it (package protocol's
// connection) while it has a run of PK commands: the run's commands, where
// their replies go, and the connection's wait for them. Commands, Big,
// Park, Unpark and Resume are called on the connection's loop; Answer and
// ResumeLater while the run is at the store, when the loop leaves the
// connection alone, on the loop or off it.
type Conn interface {
	// Commands is the run's commands, in order. They are the connection's
	// copy, valid until it is resumed.
	Commands() [][][]byte
	// Big reports whether the run is one request of megabytes (an
	// assembled one): it is a submission of its own.
	Big() bool
	// Park has the connection wait, its input unread, for room; it
	// reports whether it was not parked already, to be queued.
	Park() bool
	// Unpark serves a parked connection again, now that there is room.
	Unpark()
	// Answer writes the run's replies, replies[i] for Commands()[i], and
	// counts them as written at now. late: the deadline answered them,
	// and the store may still read the commands: the connection lets go
	// of its copy.
	Answer(replies []commands.Reply, now time.Time, late bool)
	// Resume serves the connection again, its run answered (on its loop;
	// it calls Landed).
	Resume()
	// ResumeLater has the connection's loop Resume it; called off the
	// loop.
	ResumeLater()
}

// Store is what the scheduler needs of the PK commands and the store
// (package commands' Handler, through package protocol's).
type Store interface {
	// ParseBatch parses and checks commands into their ops, answering the
	// refused ones.
	ParseBatch(cmds [][][]byte, replies []commands.Reply) commands.Parsed
	// LoadSecret loads the store's secret for the scan cursors (I/O: off
	// the loop), before Parsed.OpenScans can open them.
	LoadSecret(ctx context.Context) error
	// Submit hands a submission to the store (backend.Store.Submit).
	Submit(s *backend.Submission)
}

// Config is what the scheduler needs of the server.
type Config struct {
	// Store parses the PK commands and takes their submissions; nil for a
	// server that only counts (tests): nothing is submitted.
	Store Store
	// Info is what the store declares of itself (backend.Info): how it
	// completes a submission and whether runs join.
	Info backend.Info
	// Deadline bounds every submission to the store, whatever its path:
	// the store's own (backend.Info.Timeout) or --backend-timeout, as the
	// server decides once (protocol.Server.deadline).
	Deadline time.Duration
	// Stats has each loop's counters (store calls).
	Stats *stats.Counters
}

// Scheduler takes the runs of a server's connections to the store: one
// Loop per event loop, made on first use, and one for the portable
// transport's connections, which have none.
type Scheduler struct {
	cfg Config

	mu       sync.Mutex
	byLoop   map[transport.Loop]*Loop
	portable *Loop
}

// New is the scheduler of a server.
func New(cfg Config) *Scheduler {
	return &Scheduler{cfg: cfg, byLoop: make(map[transport.Loop]*Loop)}
}

// AtOnce reports whether the store finishes a submission inside Submit
// (backend.Info.Completes AtOnce: memory:): then a PK command is answered
// on the loop as it is read, a submission of one op that the connection
// makes itself (package protocol's conn.dispatch), and only a request of
// megabytes is a run.
func (s *Scheduler) AtOnce() bool {
	return s.cfg.Store != nil && s.cfg.Info.Completes == backend.AtOnce
}

// For is the scheduling of loop's connections' runs, made on first use.
// loop is nil for the portable transport: its connections' runs join in
// one Loop with no event loop, sent one submission at a time.
func (s *Scheduler) For(loop transport.Loop) *Loop {
	s.mu.Lock()
	defer s.mu.Unlock()
	if loop == nil {
		if s.portable == nil {
			s.portable = newLoop(&s.cfg, nil, s.cfg.Stats.ForLoop(nil))
		}
		return s.portable
	}
	l, ok := s.byLoop[loop]
	if !ok {
		l = newLoop(&s.cfg, loop, s.cfg.Stats.ForLoop(loop))
		s.byLoop[loop] = l
	}
	return l
}

// Close forgets the loops (Shutdown): nothing of the scheduler runs but
// on the loops and in the store.
func (s *Scheduler) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byLoop)
	s.portable = nil
}

// Gauge is what one loop's scheduling holds at one moment, read on its
// loop: for the tests that watch its paths through real connections.
type Gauge struct {
	OffLoop  bool // the loop no longer waits for its submissions (after a slow one)
	Pending  int  // runs waiting for the next submission
	UnderWay int  // commands of the loop's runs under way (MaxLoopCmds)
	Parked   int  // connections parked, waiting for room
	Late     int  // submissions the deadline answered, still at the store (maxAtStore)
}

// Gauges reads the gauges of every loop, each on its loop. It waits for
// the loops: not to be called on one.
func (s *Scheduler) Gauges() []Gauge {
	s.mu.Lock()
	loops := make([]*Loop, 0, len(s.byLoop)+1)
	for _, l := range s.byLoop {
		loops = append(loops, l)
	}
	portable := s.portable
	s.mu.Unlock() // a loop takes the lock to open a connection (For)
	var gs []Gauge
	if portable != nil {
		portable.mu.Lock()
		gs = append(gs, portable.gauge())
		portable.mu.Unlock()
	}
	for _, l := range loops {
		read := make(chan Gauge, 1)
		if l.loop.Later(func() { read <- l.gauge() }) == nil {
			gs = append(gs, <-read)
		}
	}
	return gs
}

func (l *Loop) gauge() Gauge {
	return Gauge{OffLoop: l.offLoop.Load(), Pending: len(l.pending), UnderWay: l.queued,
		Parked: len(l.parked), Late: int(l.late.Load())}
}

// loopRuns bounds the commands of one loop's runs under way, from submit
// to resume: waiting for a submission or at the store. Past MaxLoopCmds,
// connections that would start a run are parked, their input unread, and
// served in turn as runs are answered. So the memory of the loop's work
// under way is bounded, and so is what is sent ahead on a Redis
// connection: a command of another client waits behind at most that much.
// The loop's own.
type loopRuns struct {
	queued int
	parked []Conn
}

// MaxLoopCmds bounds the commands of one loop's runs under way (queued);
// each connection also has at most one run of its own bound (package
// protocol's maxRunCmds). 4096 EVALSHAs keep Redis busy while their
// replies come back, and take it a few tens of milliseconds; 4096 commands
// are one fsync of the embedded store.
const MaxLoopCmds = 4096

// admit reports whether a run may start; otherwise r waits, parked.
func (l *loopRuns) admit(r Conn) bool {
	if l.queued < MaxLoopCmds {
		return true
	}
	if r.Park() {
		l.parked = append(l.parked, r)
	}
	return false
}

// landed counts n commands of a run as answered and serves parked
// connections, oldest first, while there is room.
func (l *loopRuns) landed(n int) {
	l.queued -= n
	for len(l.parked) > 0 && l.queued < MaxLoopCmds {
		r := l.parked[0]
		l.parked[0] = nil
		l.parked = l.parked[1:]
		r.Unpark()
	}
	if len(l.parked) == 0 {
		l.parked = l.parked[:0:0] // let a burst's slice go
	}
}
