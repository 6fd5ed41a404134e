// Package watchdog bounds work at a store by --backend-timeout, counted as
// the store's silence: package protocol's batches and EXEC blocks, and the
// event loop's own connection to Redis (package loopconn). It lives under
// backend, beside the stores whose deadline it keeps, so that a store's own
// way of completing (backend/redis/loopconn) does not import the server.
package watchdog

import (
	"sync"
	"sync/atomic"
	"time"
)

// Watch expires work once the store has been silent for its timeout: since
// Start, or since it was last heard from (Heard), while work waits on it.
// The first of the store and the deadline claims the work (Claim): the
// work's replies are written by whichever comes first, and the other's are
// dropped. Progress moves the deadline without touching the timer: when
// the timer fires before the deadline, it is set again for the rest, so a
// store that answers a deep pipeline call after call costs one timer, not
// one per call.
//
// Start, Heard, Idle, Busy and Silent run on the work's own goroutine (or
// loop); Expired on the timer's (Start's fire); Claim and Claimed
// anywhere.
type Watch struct {
	timeout time.Duration
	begun   time.Time
	heard   atomic.Int64 // when the store was last heard from, in ns since begun
	idle    atomic.Bool  // no work waits on the store: its silence does not count
	claimed atomic.Bool
	mu      sync.Mutex
	timer   *time.Timer // under mu
}

// Start watches the store for timeout: fire runs, on a goroutine of its
// own, each time the timeout may have passed, and calls Expired, which
// tells whether it has. (One func for both, so that watching a batch costs
// one closure, as it did before there was a Watch.) A Watch may be started
// again once claimed (a connection dialled again).
func (w *Watch) Start(timeout time.Duration, fire func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timeout, w.begun = timeout, time.Now()
	w.heard.Store(0)
	w.idle.Store(false)
	w.claimed.Store(false)
	w.timer = time.AfterFunc(timeout, fire)
}

// Heard notes that the store answered at now: the deadline moves to
// timeout from now.
func (w *Watch) Heard(now time.Time) { w.heard.Store(int64(now.Sub(w.begun))) }

// Idle notes that no work waits on the store: a long-lived watch (a
// connection between batches) does not count the store's silence then.
// From Start, work waits.
func (w *Watch) Idle() { w.idle.Store(true) }

// Busy notes that work was given to the store at now while none waited:
// its silence counts from then.
func (w *Watch) Busy(now time.Time) {
	w.Heard(now)
	w.idle.Store(false)
}

// minIdleCheck bounds how often the timer of an idle watch fires.
const minIdleCheck = 10 * time.Millisecond

// Silent is how long the store has been silent.
func (w *Watch) Silent() time.Duration {
	return time.Since(w.begun) - time.Duration(w.heard.Load())
}

// Expired is called by Start's fire: it reports whether the store has
// been silent for the timeout while work waits on it, and then claims the
// work for the deadline (the caller answers it: -UNAVAILABLE); otherwise
// it sets the timer again for the rest, and fire runs again then.
func (w *Watch) Expired() bool {
	w.mu.Lock()
	if w.claimed.Load() {
		w.mu.Unlock()
		return false
	}
	silent := w.Silent()
	if w.idle.Load() || silent < w.timeout {
		rest := w.timeout - silent
		if w.idle.Load() {
			rest = max(w.timeout, minIdleCheck)
		}
		w.timer.Reset(rest)
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	return w.Claim()
}

// Claim claims the work, for the store (its answer) or the deadline: it
// reports whether the caller is the first, who writes the replies. The
// timer is stopped.
func (w *Watch) Claim() bool {
	if !w.claimed.CompareAndSwap(false, true) {
		return false
	}
	w.mu.Lock()
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	return true
}

// Claimed reports whether the work is claimed: expired, while the store
// still works on it (it sends no more).
func (w *Watch) Claimed() bool { return w.claimed.Load() }
