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
	//go:embed lua/block.lua
	blockLua string
	//go:embed lua/record.lua
	recordLua string
	//go:embed lua/reserve.lua
	reserveBody string
	//go:embed lua/unreserve.lua
	unreserveBody string
	//go:embed lua/wow_block.lua
	wowBlockLua string
	//go:embed lua/wow_record.lua
	wowRecordLua string
)

// Every PK operation runs in block.lua, self-contained. The two steps of a
// key change across Cluster slots (rare) are record.lua (the record rules
// as functions) followed by their body.
// Wow's layout (layout=wow) has scripts of its own with the same
// arguments and answers: wow_block.lua, and wow_record.lua's rules under the
// same two bodies. So the Go side of every call is the same in both
// layouts, and neither layout's scripts test which layout they are in.
var (
	reserveLua   = recordLua + reserveBody
	unreserveLua = recordLua + unreserveBody

	wowReserveLua   = wowRecordLua + reserveBody
	wowUnreserveLua = wowRecordLua + unreserveBody
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
	// block runs a list of operations as one script: every command, batch
	// and transaction.
	block *script
	// reserve and unreserve are the steps of a key change across slots.
	reserve, unreserve *script
}

func loadScripts(l Layout) scripts {
	if l == LayoutWow {
		return scripts{
			block:     newScript(wowBlockLua),
			reserve:   newScript(wowReserveLua),
			unreserve: newScript(wowUnreserveLua),
		}
	}
	return scripts{
		block:     newScript(blockLua),
		reserve:   newScript(reserveLua),
		unreserve: newScript(unreserveLua),
	}
}

func (sc scripts) all() []*script {
	return []*script{sc.block, sc.reserve, sc.unreserve}
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
