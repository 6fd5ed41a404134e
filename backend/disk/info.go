package disk

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the store's metrics. A submission
// completes from a goroutine of the store's (Submit), and the runs of
// several connections join in one (one commit, one fsync).
func (s *Store) Info() backend.Info {
	return backend.Info{Metrics: s, Completes: backend.Elsewhere, Joins: true}
}
