package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// hash is the content of one Redis hash, a record of the former layout
// (or a hash lacking a field, which is no record); str is the content of a
// Redis string, the record's layout ("ttlAt:value"). nil is no key at all.
type (
	hash map[string]string
	str  string
)

// TestScriptsOnAbsentFields runs every script on a key that does not exist,
// on hashes (the former layout) that lack a field, and on strings (the
// layout) that are no record or are records of every shape. Redis turns a
// missing key or field into Lua false, never nil: a script testing "== nil"
// would take an absent record for a present one (and, say, create keys it
// should not). Each case also checks the exact keys the script leaves
// behind, and their type: a write always leaves a string.
func TestScriptsOnAbsentFields(t *testing.T) {
	const forever = "0"
	tests := []struct {
		name  string
		src   string
		op    string // block.lua's opcode: args are then the operation's, retention last
		seed  []any  // hash or str, for KEYS[1], KEYS[2]…
		args  []string
		want  any
		after []any
		nkeys int
	}{
		{name: "prepare absent", src: blockLua, op: "p", nkeys: 1,
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []any{str("0:x")}},
		{name: "prepare no t", src: blockLua, op: "p", nkeys: 1, seed: []any{hash{"v": "old"}},
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []any{str("0:x")}},
		{name: "prepare no v", src: blockLua, op: "p", nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"x", "n", "0", "0"}, want: int64(1), after: []any{str("0:x")}},

		{name: "get absent", src: blockLua, op: "g", nkeys: 1, args: []string{"0"}, want: nil, after: []any{nil}},
		{name: "get no t", src: blockLua, op: "g", nkeys: 1, seed: []any{hash{"v": "old"}},
			args: []string{"0"}, want: nil, after: []any{hash{"v": "old"}}},
		{name: "get no v", src: blockLua, op: "g", nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"0"}, want: nil, after: []any{hash{"t": forever}}},

		{name: "rollback absent", src: blockLua, op: "r", nkeys: 1, args: []string{"0", "", "0"}, want: int64(0), after: []any{nil}},
		{name: "rollback absent ifeq empty", src: blockLua, op: "r", nkeys: 1, args: []string{"1", "", "0"}, want: int64(0), after: []any{nil}},
		{name: "rollback no v ifeq empty", src: blockLua, op: "r", nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"1", "", "0"}, want: int64(0), after: []any{hash{"t": forever}}},
		{name: "rollback no t", src: blockLua, op: "r", nkeys: 1, seed: []any{hash{"v": "old"}},
			args: []string{"0", "", "0"}, want: int64(0), after: []any{hash{"v": "old"}}},

		{name: "reprepare absent", src: blockLua, op: "u", nkeys: 1,
			args: []string{"x", "0", "", "n", "0", "0"}, want: int64(0), after: []any{nil}},
		{name: "reprepare absent keepttl", src: blockLua, op: "u", nkeys: 1,
			args: []string{"x", "0", "", "k", "0", "0"}, want: int64(0), after: []any{nil}},
		{name: "reprepare no v ifeq empty", src: blockLua, op: "u", nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"x", "1", "", "n", "0", "0"}, want: int64(0), after: []any{hash{"t": forever}}},
		{name: "reprepare no t", src: blockLua, op: "u", nkeys: 1, seed: []any{hash{"v": "old"}},
			args: []string{"x", "0", "", "n", "0", "0"}, want: int64(0), after: []any{hash{"v": "old"}}},

		{name: "move both absent", src: blockLua, op: "m", nkeys: 2,
			args: []string{"x", "", "n", "0", "0"}, want: int64(2), after: []any{nil, nil}},
		{name: "move old no v ifeq empty", src: blockLua, op: "m", nkeys: 2, seed: []any{nil, hash{"t": forever}},
			args: []string{"x", "", "n", "0", "0"}, want: int64(2), after: []any{nil, hash{"t": forever}}},
		{name: "move old no t", src: blockLua, op: "m", nkeys: 2, seed: []any{nil, hash{"v": "o"}},
			args: []string{"x", "o", "n", "0", "0"}, want: int64(2), after: []any{nil, hash{"v": "o"}}},
		{name: "move new no v", src: blockLua, op: "m", nkeys: 2, seed: []any{hash{"t": forever}, hash{"v": "o", "t": forever}},
			args: []string{"x", "o", "n", "0", "0"}, want: int64(1), after: []any{str("0:x"), nil}},

		{name: "reserve absent", src: reserveLua, nkeys: 1,
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []any{str("0:x")}},
		{name: "reserve no v", src: reserveLua, nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []any{str("0:x")}},
		{name: "reserve no t", src: reserveLua, nkeys: 1, seed: []any{hash{"v": "old"}},
			args: []string{"x", "n", "0", "0"}, want: []any{int64(1)}, after: []any{str("0:x")}},

		{name: "unreserve absent empty value", src: unreserveLua, nkeys: 1,
			args: []string{"", "0", "", "0", "0"}, want: int64(0), after: []any{nil}},
		{name: "unreserve no v empty value", src: unreserveLua, nkeys: 1, seed: []any{hash{"t": forever}},
			args: []string{"", "1", "p", "5", "0"}, want: int64(0), after: []any{hash{"t": forever}}},
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
						if k < len(tt.seed) {
							switch seed := tt.seed[k].(type) {
							case hash:
								require.NoError(t, srv.c.HSet(ctx, keys[k], map[string]string(seed)).Err())
							case str:
								require.NoError(t, srv.c.Set(ctx, keys[k], string(seed), 0).Err())
							}
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
						requireKey(t, srv.c, key, tt.after[k], "KEYS[%d]", k+1)
					}
				})
			}
		})
	}
}

// requireKey checks what key holds: nothing (want nil), a hash or a
// string.
func requireKey(t *testing.T, c goredis.Cmdable, key string, want any, msg ...any) {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, key).Result()
	require.NoError(t, err)
	switch want := want.(type) {
	case nil:
		require.Equal(t, "none", typ, msg...)
	case hash:
		require.Equal(t, "hash", typ, msg...)
		h, err := c.HGetAll(ctx, key).Result()
		require.NoError(t, err)
		require.Equal(t, map[string]string(want), h, msg...)
	case str:
		require.Equal(t, "string", typ, msg...)
		v, err := c.Get(ctx, key).Result()
		require.NoError(t, err)
		require.Equal(t, string(want), v, msg...)
	default:
		t.Fatalf("requireKey: %T", want)
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

// TestScriptsNumbers: times computed in the script reach Redis as integer
// text, whatever the number: a ttlAt of 16 digits in the record (Lua's own
// tostring gives 14 significant digits: "1.0017…e+15", which fails here on
// redis-server) and a PX of exactly 10^15 ms. Redis 7.0 (the one tested)
// would take that PX as a bare Lua number too (%.17g); Redis 7.2 and later
// convert numbers in a shortest form, which may write a round one with an
// exponent, so block.lua formats it itself.
func TestScriptsNumbers(t *testing.T) {
	const e15 = int64(1_000_000_000_000_000)
	for _, srv := range scriptServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			ctx := context.Background()
			key := fmt.Sprintf("pktest:{%s:%d}", t.Name(), time.Now().UnixNano())
			t.Cleanup(func() { srv.c.Del(context.Background(), key) })
			tm, err := srv.c.Time(ctx).Result()
			require.NoError(t, err)
			got, err := srv.c.Eval(ctx, blockLua, []string{key}, []string{"0", "p", "x", "a", itoa(e15)}).Result()
			require.NoError(t, err)
			require.Equal(t, []any{int64(1)}, got)
			v, err := srv.c.Get(ctx, key).Result()
			require.NoError(t, err)
			ttlAt, value, ok := strings.Cut(v, ":")
			require.True(t, ok, v)
			require.Equal(t, "x", value)
			at, err := strconv.ParseInt(ttlAt, 10, 64)
			require.NoError(t, err, "ttlAt %q is an integer", ttlAt)
			require.InDelta(t, tm.UnixMilli()+e15, at, 5000)
			if srv.name == "miniredis" {
				return // it keeps a TTL as a time.Duration, which 10^15 ms overflow
			}
			pttl, err := srv.c.Do(ctx, "PTTL", key).Int64() // not PTTL(): the same overflow in go-redis
			require.NoError(t, err)
			require.InDelta(t, e15, pttl, 5000)
		})
	}
}
