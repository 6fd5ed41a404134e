package scheduler

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// batchDriver drives a store that batches (backend.DriveBatch: file:, and
// Redis through rueidis): it sends the PK runs of one event loop's
// connections to the store as batches. Runs that arrive while the store
// works on a batch wait and go together in the next: one Redis pipeline,
// or one fsync, for many clients. So the batch grows with the load and no
// timer delays a lone request. Each command stays atomic on its own;
// commands of different connections are concurrent anyway, and one
// connection has at most one run in a batch.
//
// While the store answers quickly, the loop waits for a batch, after it
// has read all the input that is ready: on a 2-core machine that cost less
// than handing the batch to the driver's goroutine and back (fewer thread
// wake-ups: 19 against 25 µs of CPU per request at pipeline 1,
// scripts/bench.sh). The batch itself runs on another goroutine (one of
// the driver's workers: dispatch), which the Go scheduler runs on the
// loop's own thread while the loop waits, so the fast path wakes no other
// thread; the loop waits for it at most OnLoopBudget. A batch that takes
// longer (a slow or hung disk, a failing backend) is left to itself, the
// loop goes on answering other clients, and the next batches go off the
// loop, to the driver's goroutine (run); the first fast batch there brings
// them back. Every batch is answered within --backend-timeout (batch).
//
// The wire driver (drive_wire.go) uses its off-loop path while the loop's
// own Redis connection is down.
type batchDriver struct {
	loopRuns // the loop's runs under way, and who waits for room

	cfg     *Config
	loop    transport.Loop
	stats   *stats.Loop // the loop's counters
	offLoop atomic.Bool
	timer   *time.Timer      // the loop's wait for a batch; stopped while unused
	atStore atomic.Int32     // batches still at the store (maxAtStore)
	work    chan *storeBatch // unbuffered: a batch for a worker that waits (dispatch)
	workers atomic.Int32     // workers alive (dispatch)

	pending []Conn // runs for the next batch on the loop; the loop's own

	mu    sync.Mutex
	queue []Conn        // runs for the next batch off the loop
	wake  chan struct{} // holds a token while queue may be non-empty
	stop  chan struct{}
}

// OnLoopBudget is how long a batch on the loop may take before the next
// ones leave the loop: a Redis round trip or an fsync takes well under it.
const OnLoopBudget = 5 * time.Millisecond

func newBatchDriver(cfg *Config, loop transport.Loop) *batchDriver {
	d := &batchDriver{loop: loop, cfg: cfg, stats: cfg.Stats.ForLoop(loop), timer: time.NewTimer(time.Hour),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), work: make(chan *storeBatch)}
	d.timer.Stop()
	go d.run()
	return d
}

func (*batchDriver) OnLoop() bool { return false }

// Submit queues r's run; called on the loop.
func (d *batchDriver) Submit(r Conn) {
	d.queued += len(r.Commands())
	if d.offLoop.Load() {
		d.queueOffLoop(r)
		return
	}
	d.queueOnLoop(r, d.runOnLoop)
}

// queueOnLoop adds r's run to the loop's next batch. The round's first run
// schedules flush, which runs once the loop has served the input that is
// ready now, with every run submitted meanwhile (takePending).
func (d *batchDriver) queueOnLoop(r Conn, flush func()) {
	d.pending = append(d.pending, r)
	if len(d.pending) == 1 {
		_ = d.loop.Later(flush)
	}
}

// takePending returns the runs queued on the loop. The batch keeps that
// slice until they are resumed: the next round's is new, sized for a
// round like this one.
func (d *batchDriver) takePending() []Conn {
	runs := d.pending
	d.pending = make([]Conn, 0, 2*len(runs))
	return runs
}

// runOnLoop sends the runs submitted meanwhile as one batch and waits for
// it, at most OnLoopBudget.
func (d *batchDriver) runOnLoop() {
	b := &storeBatch{batch: newBatch(d.takePending(), d.stats)}
	b.start(d.cfg, d.loop, d, maxCallCmds, true)
	if !b.wait(d.timer, OnLoopBudget) {
		d.offLoop.Store(true)
	}
}

// queueOffLoop queues runs for the driver's goroutine.
func (d *batchDriver) queueOffLoop(runs ...Conn) {
	d.mu.Lock()
	d.queue = append(d.queue, runs...)
	first := len(d.queue) == len(runs)
	d.mu.Unlock()
	if first {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// run sends the batches that are off the loop, one at a time: each waits
// for the previous one's answer, which comes within the backend timeout.
func (d *batchDriver) run() {
	for {
		select {
		case <-d.wake:
		case <-d.stop:
			return
		}
		d.mu.Lock()
		runs := d.queue
		// The batch keeps runs until they are resumed: a new slice, sized
		// for a batch like this one.
		d.queue = make([]Conn, 0, 2*len(runs))
		d.mu.Unlock()
		if len(runs) == 0 {
			continue
		}
		// A quick answer brings the next batches back on the loop (finish).
		b := &storeBatch{batch: newBatch(runs, d.stats)}
		b.start(d.cfg, d.loop, d, maxCallCmds, false)
		select {
		case <-b.answered:
		case <-d.stop:
			return
		}
	}
}

// dispatch hands b to one of the driver's workers that waits for a batch,
// or to a new one when none waits (the others are at the store, maybe held
// there by a hung disk). A worker lives on after its batch: at pipeline 1
// a goroutine per batch, its stack grown again through pebble's commit
// each time, cost about 4 % of the sidecar's CPU (runtime.newproc and
// runtime.newstack; docs/benchmarks.md, "The embedded store's speed"). At
// most maxAtStore workers live on; past them (a batch that ends while the
// next is dispatched) a batch gets a goroutine of its own.
func (d *batchDriver) dispatch(b *storeBatch) {
	select {
	case d.work <- b:
		return
	default:
	}
	if d.workers.Add(1) <= maxAtStore {
		go d.worker(b)
		return
	}
	d.workers.Add(-1)
	go b.run(d.cfg.Store)
}

// worker runs batches until the driver stops.
func (d *batchDriver) worker(b *storeBatch) {
	defer d.workers.Add(-1)
	for {
		b.run(d.cfg.Store)
		select {
		case b = <-d.work:
		case <-d.stop:
			return
		}
	}
}

func (d *batchDriver) Close() { close(d.stop) }
