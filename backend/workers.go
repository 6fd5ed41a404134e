package backend

import "sync/atomic"

// Workers runs a store's work off the caller on goroutines that live on
// after it: a submission handed to a worker that waits starts at once on
// a stack already grown through the store's client, where a goroutine of
// its own grew its stack again through the client each time. That cost
// the WebAssembly module about 10 µs of CPU per PK.PREPARE on redis:// at
// pipeline 1 (63 against 53 µs, scripts/bench-wasm.sh; the module has no
// event loops, so its submissions all go through the client), and natively
// about 4 % of the CPU per request when the embedded store's batches each
// had a goroutine (runtime.newproc and runtime.newstack, docs/
// benchmarks.md, "The embedded store's speed").
//
// At most max workers live on; past them (more submissions at the store
// at once than that, a hung backend holding them) a func gets a goroutine
// of its own, as before.
type Workers struct {
	work  chan func() // unbuffered: a func for a worker that waits
	alive atomic.Int32
	max   int32
	stop  chan struct{}
}

// NewWorkers returns a pool of at most max live workers; none is started
// until there is work.
func NewWorkers(max int) *Workers {
	return &Workers{work: make(chan func()), max: int32(max), stop: make(chan struct{})}
}

// Go runs f on a worker that waits, a new one, or a goroutine of its own.
func (w *Workers) Go(f func()) {
	select {
	case w.work <- f:
		return
	default:
	}
	if w.alive.Add(1) <= w.max {
		go w.worker(f)
		return
	}
	w.alive.Add(-1)
	go f()
}

func (w *Workers) worker(f func()) {
	defer w.alive.Add(-1)
	for {
		f()
		select {
		case f = <-w.work:
		case <-w.stop:
			return
		}
	}
}

// Close ends the workers once their work is done; Go still runs what it
// is given after, on goroutines of their own. Called once.
func (w *Workers) Close() { close(w.stop) }
