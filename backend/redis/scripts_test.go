package redis

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// hash is the content of one Redis hash; nil is no key at all.
type hash map[string]string

// TestScriptsOnAbsentFields runs every script on a key that does not exist
// and on hashes that lack a field. Redis turns a missing key or field into
// Lua false, never nil: a script testing "== nil" would take an absent
// record for a present one (and, say, create keys it should not). Each case
// also checks the exact keys the script leaves behind.
func TestScriptsOnAbsentFields(t *testing.T) {
	const forever = "0"
	tests := []struct {
		name  string
		src   string
		op    string // block.lua's opcode: args are then the operation's, retention last
		seed  []hash // for KEYS[1], KEYS[2]
		args  []string
		want  any
		after []hash
		nkeys int
	}{
		{name: "prepare absent", src: blockLua, op: "p", nkeys: 1,
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []hash{{"v": "x", "t": forever}}},
		{name: "prepare no t", src: blockLua, op: "p", nkeys: 1, seed: []hash{{"v": "old"}},
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []hash{{"v": "x", "t": forever}}},
		{name: "prepare no v", src: blockLua, op: "p", nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []hash{{"v": "x", "t": forever}}},

		{name: "get absent", src: blockLua, op: "g", nkeys: 1, args: []string{"0"}, want: nil, after: []hash{nil}},
		{name: "get no t", src: blockLua, op: "g", nkeys: 1, seed: []hash{{"v": "old"}},
			args: []string{"0"}, want: nil, after: []hash{{"v": "old"}}},
		{name: "get no v", src: blockLua, op: "g", nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"0"}, want: nil, after: []hash{{"t": forever}}},

		{name: "rollback absent", src: blockLua, op: "r", nkeys: 1, args: []string{"0", "", "0"}, want: int64(0), after: []hash{nil}},
		{name: "rollback absent ifeq empty", src: blockLua, op: "r", nkeys: 1, args: []string{"1", "", "0"}, want: int64(0), after: []hash{nil}},
		{name: "rollback no v ifeq empty", src: blockLua, op: "r", nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"1", "", "0"}, want: int64(0), after: []hash{{"t": forever}}},
		{name: "rollback no t", src: blockLua, op: "r", nkeys: 1, seed: []hash{{"v": "old"}},
			args: []string{"0", "", "0"}, want: int64(0), after: []hash{{"v": "old"}}},

		{name: "reprepare absent", src: blockLua, op: "u", nkeys: 1,
			args: []string{"x", "0", "", "n", "0", "0"}, want: int64(0), after: []hash{nil}},
		{name: "reprepare absent keepttl", src: blockLua, op: "u", nkeys: 1,
			args: []string{"x", "0", "", "k", "0", "0"}, want: int64(0), after: []hash{nil}},
		{name: "reprepare no v ifeq empty", src: blockLua, op: "u", nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"x", "1", "", "n", "0", "0"}, want: int64(0), after: []hash{{"t": forever}}},
		{name: "reprepare no t", src: blockLua, op: "u", nkeys: 1, seed: []hash{{"v": "old"}},
			args: []string{"x", "0", "", "n", "0", "0"}, want: int64(0), after: []hash{{"v": "old"}}},

		{name: "move both absent", src: blockLua, op: "m", nkeys: 2,
			args: []string{"x", "", "n", "0", "0"}, want: int64(2), after: []hash{nil, nil}},
		{name: "move old no v ifeq empty", src: blockLua, op: "m", nkeys: 2, seed: []hash{nil, {"t": forever}},
			args: []string{"x", "", "n", "0", "0"}, want: int64(2), after: []hash{nil, {"t": forever}}},
		{name: "move old no t", src: blockLua, op: "m", nkeys: 2, seed: []hash{nil, {"v": "o"}},
			args: []string{"x", "o", "n", "0", "0"}, want: int64(2), after: []hash{nil, {"v": "o"}}},
		{name: "move new no v", src: blockLua, op: "m", nkeys: 2, seed: []hash{{"t": forever}, {"v": "o", "t": forever}},
			args: []string{"x", "o", "n", "0", "0"}, want: int64(1), after: []hash{{"v": "x", "t": forever}, nil}},

		{name: "reserve absent", src: reserveLua, nkeys: 1,
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []hash{{"v": "x", "t": forever}}},
		{name: "reserve no v", src: reserveLua, nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []hash{{"v": "x", "t": forever}}},
		{name: "reserve no t", src: reserveLua, nkeys: 1, seed: []hash{{"v": "old"}},
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []hash{{"v": "x", "t": forever}}},

		{name: "unreserve absent empty value", src: unreserveLua, nkeys: 1,
			args: []string{"", "0", "", "0", "0"}, want: int64(0), after: []hash{nil}},
		{name: "unreserve no v empty value", src: unreserveLua, nkeys: 1, seed: []hash{{"t": forever}},
			args: []string{"", "1", "p", "5", "0"}, want: int64(0), after: []hash{{"t": forever}}},
	}
	for _, srv := range scriptServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					ctx := context.Background()
					keys := make([]string, tt.nkeys)
					for k := range keys {
						// One hash tag: the two keys of move share a slot.
						keys[k] = fmt.Sprintf("pktest:{%s:%d:%d}%d", t.Name(), time.Now().UnixNano(), i, k)
						if k < len(tt.seed) && tt.seed[k] != nil {
							require.NoError(t, srv.c.HSet(ctx, keys[k], map[string]string(tt.seed[k])).Err())
						}
						t.Cleanup(func() { srv.c.Del(context.Background(), keys[k]) })
					}
					args, want := tt.args, tt.want
					if tt.op != "" { // as the store sends it: a block of one
						args = append([]string{args[len(args)-1], tt.op}, args[:len(args)-1]...)
						want = []any{want}
					}
					got, err := srv.c.Eval(ctx, tt.src, keys, args).Result()
					if want == nil {
						require.ErrorIs(t, err, goredis.Nil)
					} else {
						require.NoError(t, err)
						require.Equal(t, want, got)
					}
					for k, key := range keys {
						h, err := srv.c.HGetAll(ctx, key).Result()
						require.NoError(t, err)
						if tt.after[k] == nil {
							require.Empty(t, h, "KEYS[%d] must not exist", k+1)
						} else {
							require.Equal(t, map[string]string(tt.after[k]), h, "KEYS[%d]", k+1)
						}
					}
				})
			}
		})
	}
}

type scriptServer struct {
	name string
	c    *goredis.Client
}

// scriptServers are the servers the scripts are tested on: miniredis
// always, a real redis-server when PREPKEY_REDIS_URL is set.
func scriptServers(t *testing.T) []scriptServer {
	f := startFake(t)
	servers := []scriptServer{{"miniredis", goredis.NewClient(&goredis.Options{Addr: f.Addr()})}}
	if url, ok := lookupServer(t, envStandalone); ok {
		opt, err := goredis.ParseURL(url)
		require.NoError(t, err)
		servers = append(servers, scriptServer{"redis-server", goredis.NewClient(opt)})
	}
	for _, s := range servers {
		t.Cleanup(func() { _ = s.c.Close() })
	}
	return servers
}
