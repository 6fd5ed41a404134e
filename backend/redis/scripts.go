package redis

import (
	"context"
	_ "embed"
	"sync"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/prepare.lua
	prepareLua string
	//go:embed lua/get.lua
	getLua string
	//go:embed lua/rollback.lua
	rollbackLua string
	//go:embed lua/reprepare.lua
	reprepareLua string
	//go:embed lua/move.lua
	moveLua string
	//go:embed lua/reserve.lua
	reserveLua string
	//go:embed lua/unreserve.lua
	unreserveLua string
)

// scripts are the Lua scripts of the PK commands. Exec runs EVALSHA and,
// when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH), EVAL,
// which runs the script and caches it again. NOSCRIPT means the script did
// not run, so the second attempt cannot apply a command twice.
type scripts struct {
	prepare, get, rollback, reprepare, move *rueidis.Lua
	// reserve and unreserve are the steps of a key change across slots.
	reserve, unreserve *rueidis.Lua
}

func loadScripts() scripts {
	return scripts{
		prepare:   rueidis.NewLuaScript(prepareLua),
		get:       rueidis.NewLuaScript(getLua),
		rollback:  rueidis.NewLuaScript(rollbackLua),
		reprepare: rueidis.NewLuaScript(reprepareLua),
		move:      rueidis.NewLuaScript(moveLua),
		reserve:   rueidis.NewLuaScript(reserveLua),
		unreserve: rueidis.NewLuaScript(unreserveLua),
	}
}

// load runs SCRIPT LOAD of every script on every node, best effort: a node
// that misses a script later is served by the NOSCRIPT fallback.
func (sc scripts) load(ctx context.Context, c rueidis.Client) {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Go(func() {
			all := []string{prepareLua, getLua, rollbackLua, reprepareLua, moveLua, reserveLua, unreserveLua}
			cmds := make(rueidis.Commands, 0, len(all))
			for _, src := range all {
				cmds = append(cmds, n.B().ScriptLoad().Script(src).Build())
			}
			n.DoMulti(ctx, cmds...)
		})
	}
	wg.Wait()
}
