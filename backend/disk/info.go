package disk

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the store's metrics (pebble's sizes, the
// records swept); no layout check, and the server's backend timeout.
func (s *Store) Info() backend.Info { return backend.Info{Metrics: s} }
