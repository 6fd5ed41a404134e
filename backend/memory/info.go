package memory

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the store's metrics (records swept); no
// layout check, and the server's backend timeout. It completes a
// submission at once (Submit), so there is nothing to join.
func (s *Store) Info() backend.Info {
	return backend.Info{Metrics: s, Completes: backend.AtOnce}
}
