package conformance

import (
	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/backend/redis"
)

// Every store satisfies the one contract (backend.Store), checked at
// compile time here where all the backends are linked. Its optional
// features are in the contract (Store.Info), never found by assertion, so
// a method whose signature drifts fails the build instead of silently
// falling out of use.
var (
	_ backend.Store = (*memory.Store)(nil)
	_ backend.Store = (*disk.Store)(nil)
	_ backend.Store = (*redis.Store)(nil)
	_ backend.Store = (*mongo.Store)(nil)
)
