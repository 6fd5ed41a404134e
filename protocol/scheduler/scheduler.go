// Package scheduler takes runs of PK commands to the store: it owns the
// drivers, one per event loop, that decide a run's path (answered on the
// loop, batched with other connections' runs, written on the loop's own
// connection to Redis, or a store call of its own), the batches they send
// (batch.go), the loop's bound on the work under way (loopRuns), and
// --backend-timeout on every batch (package watchdog). It chooses a loop's
// driver once, from how the store's opener says it is to be driven
// (backend.Drive), in one switch (Drivers.For).
//
// It sees a connection only as a Conn: its run's commands, where their
// replies go, and how the connection is parked, resumed and served again.
// It may not touch sockets or event loops but through transport.Loop
// (package transport), frame or write RESP (package resp, through Conn),
// spell an error reply (the catalogue: commands.Unavailable), or reach a
// store but through Store (and, for DriveWire, the loop's own connection,
// package loopconn).
package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/redis/loopconn"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// How a loop's connections reach the store: one driver per loop (or per
// connection, on the portable transport), chosen once (Drivers.For) from
// how the store declares it is to be driven (Config.Drive, the drive New
// decides). A connection asks its driver whether to answer PK commands on
// the loop (OnLoop), and hands it each run it starts (Admit, Submit); the
// driver gives the store batches (batch.go) and has the connections
// resumed with their replies. Every batch that waits on the store is
// bounded by --backend-timeout, counted as the store's silence (package
// watchdog).
//
//	drive         driver        file            path of a run
//	DriveInline   inlineDriver  drive_inline.go answered on the loop as read (Store.Do)
//	DriveBatch    batchDriver   drive_batch.go  the loop's batch: on the loop, or off it when slow
//	DriveWire     wireDriver    drive_wire.go   the loop's batch, on the loop's own Redis connection
//	DriveCalls    callsDriver   drive_calls.go  a batch of its own, one store call per command
type Driver interface {
	// OnLoop reports whether PK commands are answered on the loop as they
	// are read (the connection calls Store.Do itself), not in runs: then
	// only a request of megabytes is submitted. A connection reads it
	// once.
	OnLoop() bool
	// Admit reports whether r may start a run now. Otherwise r is parked
	// (Conn.Park), its input unread, and served again (Conn.Unpark) once the
	// runs under way leave room (Landed).
	Admit(r Conn) bool
	// Submit takes r's run (Conn.Commands) to the store; r is at the store
	// until its replies are written (Conn.Answer) and it is resumed
	// (Conn.Resume).
	Submit(r Conn)
	// Landed counts n commands of a run as answered, when the connection
	// is resumed, on the loop.
	Landed(n int)
	// Close stops the driver's goroutines and connections (Shutdown).
	Close()
}

// Conn is a client connection as a driver sees it (package protocol's
// connection) while it has a run of PK commands: the run's commands, where
// their replies go, and the connection's wait for them. Commands, Big, Park, Unpark and Resume are
// called on the connection's loop; Answer and ResumeLater while the run is
// at the store, when the loop leaves the connection alone, on the loop or
// off it.
type Conn interface {
	// Commands is the run's commands, in order. They are the connection's
	// copy, valid until it is resumed.
	Commands() [][][]byte
	// Big reports whether the run is one request of megabytes (an
	// assembled one), which the loop is not to encode.
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

// Store is what the drivers need of the PK commands (package commands'
// Handler, through package protocol's).
type Store interface {
	// Do runs one command (a request of megabytes where the loop answers
	// the others itself).
	Do(ctx context.Context, args [][]byte) (r commands.Reply, ok bool)
	// Batch runs several commands, in order, so a store can serve them in
	// one round trip or one fsync.
	Batch(ctx context.Context, cmds [][][]byte, replies []commands.Reply)
	// ParseBatch parses and checks commands into their ops, answering
	// the refused ones, for the loop's own connection (DriveWire), which
	// takes ops to the store.
	ParseBatch(cmds [][][]byte, replies []commands.Reply) commands.Parsed
}

// Config is what the drivers need of the server.
type Config struct {
	// Drive is how the store's opener says PK commands are to reach it
	// (protocol.Config.Drive); New decides from it.
	Drive backend.Drive
	// Store runs the PK commands; nil for a server that only counts
	// (tests), driven backend.DriveCalls.
	Store Store
	// Wire is how each loop reaches a store driven backend.DriveWire over
	// a connection of its own (package loopconn); without it such a store
	// is driven backend.DriveBatch.
	Wire loopconn.Wire
	// Deadline bounds every submission to the store, whatever its path:
	// the store's own (backend.Info.Timeout) or --backend-timeout, as the
	// server decides once (protocol.Server.deadline).
	Deadline time.Duration
	// Stats has each loop's counters (store calls) and the count of the
	// loops' connections to the store.
	Stats  *stats.Counters
	Logger *slog.Logger
	// Closing reports whether the server is shutting down: a loop's
	// connection to the store lost then is not dialled again.
	Closing func() bool
}

// Drivers is a server's drivers, one per loop, made on first use.
type Drivers struct {
	cfg Config
	// drive is how PK commands reach the store, decided once (New); only
	// For reads it.
	drive backend.Drive

	mu     sync.Mutex
	byLoop map[transport.Loop]Driver
	// portable is the portable transport's connections' driver of a store
	// that batches, made on first use (drive_portable.go).
	portable Driver
}

// New is the drivers of a server. It is the one place that decides how PK
// commands reach the store: as the store's opener says (Config.Drive),
// except that DriveWire without a Config.Wire is driven backend.DriveBatch,
// its path while the loop's connection is down. For reads that, once per
// loop, to choose the driver of its runs.
func New(cfg Config) *Drivers {
	d := cfg.Drive
	switch {
	case cfg.Store == nil: // a server that only counts (tests)
		d = backend.DriveCalls
	case d == backend.DriveWire && cfg.Wire == nil:
		d = backend.DriveBatch
	}
	return &Drivers{cfg: cfg, drive: d, byLoop: make(map[transport.Loop]Driver)}
}

// For is the driver of loop's connections, made on first use: the one
// place that chooses a run's path from the drive. loop is nil for the
// portable transport, which has no loop that could wait on a batch: there
// each run of a store that batches is a batch of its own.
func (ds *Drivers) For(loop transport.Loop) Driver {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if d, ok := ds.byLoop[loop]; ok && loop != nil {
		return d
	}
	var d Driver
	switch {
	case ds.drive == backend.DriveInline:
		d = inlineDriver{ds.cfg.Store}
	case ds.drive == backend.DriveCalls:
		d = &callsDriver{cfg: &ds.cfg, stats: ds.cfg.Stats.ForLoop(loop), perCall: 1}
	case loop == nil:
		if ds.portable == nil {
			ds.portable = newPortableDriver(&ds.cfg)
		}
		d = ds.portable
	case ds.drive == backend.DriveWire:
		d = newWireDriver(&ds.cfg, loop)
	default: // backend.DriveBatch
		d = newBatchDriver(&ds.cfg, loop)
	}
	if loop != nil {
		ds.byLoop[loop] = d
	}
	return d
}

// Close stops every loop's driver (Shutdown).
func (ds *Drivers) Close() {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, d := range ds.byLoop {
		d.Close()
	}
	if ds.portable != nil {
		ds.portable.Close()
		ds.portable = nil
	}
	clear(ds.byLoop)
}

// Gauge is what one loop's driver that batches (DriveBatch, DriveWire)
// holds at one moment, read on its loop: for the tests that watch its
// paths through real connections.
type Gauge struct {
	OffLoop  bool // the next batches go off the loop (after a slow one)
	OffQueue int  // runs waiting for the next batch off the loop
	Workers  int  // workers alive (batchDriver.dispatch)
	UnderWay int  // commands of the loop's runs under way (MaxLoopCmds)
	Parked   int  // connections parked, waiting for room
	Wire     bool // a wire driver: LinkUp is its connection's
	LinkUp   bool // batches can go on the loop's own connection to the store
}

// Gauges reads the gauges of every loop's driver that batches, each on its
// loop. It waits for the loops: not to be called on one.
func (ds *Drivers) Gauges() []Gauge {
	ds.mu.Lock()
	drivers := make([]Driver, 0, len(ds.byLoop))
	for _, d := range ds.byLoop {
		drivers = append(drivers, d)
	}
	if ds.portable != nil {
		drivers = append(drivers, ds.portable)
	}
	ds.mu.Unlock() // a loop takes the lock to open a connection (For)
	var gs []Gauge
	for _, d := range drivers {
		var b *batchDriver
		var w *wireDriver
		switch d := d.(type) {
		case portableDriver: // no loop: its batches are all off one
			d.d.mu.Lock()
			gs = append(gs, Gauge{OffLoop: true, OffQueue: len(d.d.queue), Workers: int(d.d.workers.Load())})
			d.d.mu.Unlock()
			continue
		case *batchDriver:
			b = d
		case *wireDriver:
			b, w = d.batchDriver, d
		default:
			continue
		}
		read := make(chan Gauge, 1)
		err := b.loop.Later(func() {
			g := Gauge{OffLoop: b.offLoop.Load(), Workers: int(b.workers.Load()),
				UnderWay: b.queued, Parked: len(b.parked), Wire: w != nil}
			b.mu.Lock()
			g.OffQueue = len(b.queue)
			b.mu.Unlock()
			if w != nil {
				g.LinkUp = w.up.Ready()
			}
			read <- g
		})
		if err == nil {
			gs = append(gs, <-read)
		}
	}
	return gs
}

// loopRuns bounds the commands of one loop's runs under way, from submit
// to resume: waiting for a batch, at the store, or on the loop's Redis
// connection. Past MaxLoopCmds, connections that would start a run are
// parked, their input unread, and served in turn as runs are answered. So
// the memory of the loop's work under way is bounded, and so is what is
// sent ahead on its Redis connection: a command of another client waits
// behind at most that much. The loop's own.
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

// Admit reports whether a run may start; otherwise r waits, parked.
func (l *loopRuns) Admit(r Conn) bool {
	if l.queued < MaxLoopCmds {
		return true
	}
	if r.Park() {
		l.parked = append(l.parked, r)
	}
	return false
}

// Landed counts n commands of a run as answered and serves parked
// connections, oldest first, while there is room.
func (l *loopRuns) Landed(n int) {
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
