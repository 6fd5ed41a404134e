package protocol

import (
	"context"
	"fmt"

	"github.com/prepkey/prepkey/protocol/transport"
)

// Liveness through the event loops (the admin port's /healthz): net/http
// answering proves only that net/http runs, and a loop stuck in a callback
// (a store call that does not return on it, a bug) serves none of its
// clients while the process looks alive (issue 30).

// sawLoop notes an event loop that serves a client, for Alive. Only gnet's
// loops are noted: the portable transport's "loop" is a connection's own.
func (s *Server) sawLoop(l transport.Loop) {
	s.mu.Lock()
	if _, ok := s.loopSet[l]; !ok {
		s.loopSet[l] = len(s.loopSet)
	}
	s.mu.Unlock()
}

// Alive reports whether every event loop that has served a client runs
// tasks: it queues a no-op on each (transport.Loop.Later, run after the
// loop's round of I/O) and waits for all of them until ctx ends. A loop
// busy or stuck past ctx's deadline is an error naming it.
func (s *Server) Alive(ctx context.Context) error {
	s.mu.Lock()
	loops := make(map[transport.Loop]int, len(s.loopSet))
	for l, i := range s.loopSet {
		loops[l] = i
	}
	s.mu.Unlock()
	done := make(chan int, len(loops))
	for l, i := range loops {
		if err := l.Later(func() { done <- i }); err != nil {
			return fmt.Errorf("event loop %d: %w", i, err)
		}
	}
	answered := make(map[int]bool, len(loops))
	for range loops {
		select {
		case i := <-done:
			answered[i] = true
		case <-ctx.Done():
			for _, i := range loops {
				if !answered[i] {
					return fmt.Errorf("event loop %d did not run a task: %w", i, ctx.Err())
				}
			}
		}
	}
	return nil
}
