package conformance

import (
	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/backend/redis"
	"github.com/prepkey/prepkey/backend/storetest"
	"github.com/prepkey/prepkey/commands"
)

// What the server takes from each store, checked at compile time here,
// where the server's packages may be linked (the backends' own tests link
// none): the command layer finds its optional interface (ArgRules) by
// assertion, so a method whose signature drifted would silently fall out
// of it.
var (
	// storetest.Store is commands.Store's method set, both ways, and
	// backend.Runner is its Run.
	_ commands.Store  = storetest.Store(nil)
	_ storetest.Store = commands.Store(nil)
	_ backend.Runner  = commands.Store(nil)

	_ commands.Store = (*memory.Store)(nil)
	_ commands.Store = (*disk.Store)(nil)

	_ commands.Store    = (*redis.Store)(nil)
	_ commands.ArgRules = (*redis.Store)(nil)

	_ commands.Store    = (*mongo.Store)(nil)
	_ commands.ArgRules = (*mongo.Store)(nil)
)
