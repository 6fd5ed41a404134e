package mongo

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the layout's argument check and the
// store's metrics. A submission completes from a goroutine of its own, one
// call per op, and each connection's run is a submission of its own
// (Submit).
func (s *Store) Info() backend.Info {
	return backend.Info{ArgCheck: s.ArgCheck(), Metrics: s, Completes: backend.Elsewhere}
}
