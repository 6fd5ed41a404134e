package mongo

import "github.com/prepkey/prepkey/backend"

// Info implements backend.Store: the layout's check (layout=wow), the
// store's metrics, and the server's backend timeout.
func (s *Store) Info() backend.Info { return backend.Info{ArgCheck: s.ArgCheck(), Metrics: s} }
