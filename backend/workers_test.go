package backend

import (
	"sync"
	"testing"
	"time"
)

// TestWorkersLiveOn: funcs given one after another run on the one worker
// that waits (no goroutine of their own each); past max workers busy at
// once a func still runs, on a goroutine of its own; Close ends the
// waiting workers.
func TestWorkersLiveOn(t *testing.T) {
	w := NewWorkers(2)
	done := make(chan struct{}, 1)
	w.Go(func() { done <- struct{}{} })
	<-done
	// The worker lives on: it takes the next funcs as they come (a send
	// that a waiting worker receives, as Go's first try), one after
	// another, and no other worker is started.
	for i := 0; i < 100; i++ {
		select {
		case w.work <- func() { done <- struct{}{} }:
		case <-time.After(5 * time.Second):
			t.Fatalf("func %d: no worker waits for work", i)
		}
		<-done
	}
	if got := w.alive.Load(); got != 1 {
		t.Fatalf("%d workers alive after 100 funcs one after another, want 1", got)
	}

	hold := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(4)
	for i := 0; i < 4; i++ { // 2 workers and 2 goroutines of their own
		w.Go(func() { defer wg.Done(); <-hold })
	}
	waitFor(t, func() bool { return w.alive.Load() == 2 })
	close(hold)
	wg.Wait()

	w.Close()
	waitFor(t, func() bool { return w.alive.Load() == 0 })
	ran := make(chan struct{})
	w.Go(func() { close(ran) }) // after Close: a goroutine of its own
	<-ran
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
