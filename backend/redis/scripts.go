package redis

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"sync"

	"github.com/redis/rueidis"
)

var (
	//go:embed lua/record.lua
	recordLua string
	//go:embed lua/ops.lua
	opsLua string
	//go:embed lua/prepare.lua
	prepareBody string
	//go:embed lua/get.lua
	getBody string
	//go:embed lua/rollback.lua
	rollbackBody string
	//go:embed lua/reprepare.lua
	reprepareBody string
	//go:embed lua/move.lua
	moveBody string
	//go:embed lua/reserve.lua
	reserveBody string
	//go:embed lua/unreserve.lua
	unreserveBody string
	//go:embed lua/block.lua
	blockBody string
)

// Each script is record.lua (the shared record rules) followed by its body,
// so that EVALSHA runs one self-contained source. The scripts of the PK
// operations have ops.lua (each operation as a function) in between, and
// block.lua runs a list of those operations.
var (
	prepareLua   = recordLua + opsLua + prepareBody
	getLua       = recordLua + opsLua + getBody
	rollbackLua  = recordLua + opsLua + rollbackBody
	reprepareLua = recordLua + opsLua + reprepareBody
	moveLua      = recordLua + opsLua + moveBody
	blockLua     = recordLua + opsLua + blockBody
	reserveLua   = recordLua + reserveBody
	unreserveLua = recordLua + unreserveBody
)

// script is one Lua script. Its Exec runs EVALSHA and, when the server
// answers NOSCRIPT (after a restart or SCRIPT FLUSH), EVAL, which runs the
// script and caches it again. NOSCRIPT means the script did not run, so
// the second attempt cannot apply a command twice.
type script struct {
	src string
	sha string
	*rueidis.Lua
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:]), Lua: rueidis.NewLuaScript(src)}
}

// scripts are the Lua scripts of the PK commands.
type scripts struct {
	prepare, get, rollback, reprepare, move *script
	// block runs a list of operations as one script (EXEC).
	block *script
	// reserve and unreserve are the steps of a key change across slots.
	reserve, unreserve *script
}

func loadScripts() scripts {
	return scripts{
		prepare:   newScript(prepareLua),
		get:       newScript(getLua),
		rollback:  newScript(rollbackLua),
		reprepare: newScript(reprepareLua),
		move:      newScript(moveLua),
		block:     newScript(blockLua),
		reserve:   newScript(reserveLua),
		unreserve: newScript(unreserveLua),
	}
}

func (sc scripts) all() []*script {
	return []*script{sc.prepare, sc.get, sc.rollback, sc.reprepare, sc.move, sc.block, sc.reserve, sc.unreserve}
}

// load runs SCRIPT LOAD of every script on every node, best effort: a node
// that misses a script later is served by the NOSCRIPT fallback.
func (sc scripts) load(ctx context.Context, c rueidis.Client) {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Go(func() {
			var cmds rueidis.Commands
			for _, s := range sc.all() {
				cmds = append(cmds, n.B().ScriptLoad().Script(s.src).Build())
			}
			n.DoMulti(ctx, cmds...)
		})
	}
	wg.Wait()
}
