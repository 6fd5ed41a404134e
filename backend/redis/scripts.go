package redis

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"strconv"
	"strings"
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

// loadScripts makes layout l's scripts with maxValue, the largest value a
// read returns (--max-value-bytes), written into their source.
func loadScripts(l Layout, maxValue int) scripts {
	src := func(s string) *script { return newScript(withMaxValue(s, maxValue)) }
	if l == LayoutWow {
		return scripts{
			block:     src(wowBlockLua),
			reserve:   src(wowReserveLua),
			unreserve: src(wowUnreserveLua),
		}
	}
	return scripts{
		block:     src(blockLua),
		reserve:   src(reserveLua),
		unreserve: src(unreserveLua),
	}
}

// maxValueLine is the line of every script that holds the read bound; the
// sources hold --max-value-bytes' default, so that with the default the
// scripts are byte for byte the embedded files (and their SHAs those of
// the files).
const maxValueLine = "\nlocal maxValue = 65536\n"

// withMaxValue is src with its read bound set to n. The bound is the
// process's configuration, fixed for its life as the script is: in the
// source, it costs no argument on every call (the Wire writes each one
// per batch), and block.lua's arguments stay as they were. Sidecars with
// different bounds on one Redis run different scripts (different SHAs),
// each its own.
func withMaxValue(src string, n int) string {
	if !strings.Contains(src, maxValueLine) {
		panic("redis: a script without its maxValue line")
	}
	return strings.Replace(src, maxValueLine, "\nlocal maxValue = "+strconv.Itoa(n)+"\n", 1)
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
