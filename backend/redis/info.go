package redis

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the layout's check (layout=wow), the
// store's metrics, and, with ?wait=N, the deadline of a call that waits
// for replicas: the backend timeout for the writes plus wait-timeout for
// WAIT (the store's own client is bounded so, deadlines), which the server
// must not cut short (docs/redis.md). A submission completes on its
// loop's own connection (OnLoop: a standalone Redis with UseLoopConns), or
// from the client's goroutines (Elsewhere), and connections' runs join in
// one pipeline.
func (s *Store) Info() backend.Info {
	info := backend.Info{ArgCheck: s.ArgCheck(), Metrics: s, Completes: backend.Elsewhere, Joins: true}
	if s.loops != nil {
		// From a loop, on its own connection (Submit): the server never
		// waits for it there.
		info.Completes = backend.OnLoop
	}
	if s.target.wait > 0 {
		info.Timeout = s.timeout + s.waitTimeout
	}
	return info
}
