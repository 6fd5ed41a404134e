package watchdog

import (
	"testing"
	"time"
)

// start starts w; the channel is closed when it expires.
func start(w *Watch, timeout time.Duration) chan struct{} {
	ch := make(chan struct{})
	w.Start(timeout, func() {
		if w.Expired() {
			close(ch)
		}
	})
	return ch
}

func expiresSoon(t *testing.T, ch chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not expire")
	}
}

func notExpired(t *testing.T, ch chan struct{}, why string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal(why)
	default:
	}
}

// TestWatchExpires: a silent store's work expires, claimed by the
// deadline: the store's answer after it is dropped (Claim false).
func TestWatchExpires(t *testing.T) {
	var w Watch
	expiresSoon(t, start(&w, 20*time.Millisecond))
	if !w.Claimed() || w.Claim() {
		t.Fatal("the store claimed work the deadline had answered")
	}
}

// TestWatchStoreFirst: the store's answer first stops the watch.
func TestWatchStoreFirst(t *testing.T) {
	var w Watch
	ch := start(&w, 20*time.Millisecond)
	if !w.Claim() {
		t.Fatal("the store's answer was not first")
	}
	time.Sleep(100 * time.Millisecond)
	notExpired(t, ch, "expired after the store answered")
}

// TestWatchProgress: a store heard from within the timeout is not timed
// out, however long the work takes; silent, it is.
func TestWatchProgress(t *testing.T) {
	var w Watch
	const timeout = 500 * time.Millisecond
	ch := start(&w, timeout)
	for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
		w.Heard(time.Now())
		time.Sleep(5 * time.Millisecond)
	}
	notExpired(t, ch, "expired while the store answered")
	expiresSoon(t, ch)
	if s := w.Silent(); s < timeout {
		t.Fatalf("expired after %s of silence, want %s", s, timeout)
	}
}

// TestWatchIdle: silence does not count while no work waits (a connection
// between batches); it does from Busy.
func TestWatchIdle(t *testing.T) {
	var w Watch
	ch := start(&w, 200*time.Millisecond)
	w.Idle()
	time.Sleep(time.Second)
	notExpired(t, ch, "expired while idle")
	w.Busy(time.Now())
	expiresSoon(t, ch)
}
