package redis

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// What the test seeds at a key and expects there afterwards.
type (
	// legacy is a record as sidecars before the string layout wrote it:
	// a hash {v, t} with PEXPIREAT t + retention (none for t = 0).
	legacy struct {
		v     string
		ttlAt int64
	}
	// record is a record in the string layout "<ttlAt>:<value>", with the
	// key's expiry at ttlAt + retention (none for 0).
	record struct {
		v     string
		ttlAt int64
	}
	// list is a key of another type, someone else's data under the prefix.
	list string
)

// upgradeRetention is the stores' retention in the upgrade test.
const upgradeRetention = time.Hour

// upgradeCase is one operation (or a pipeline, or a transaction) on keys
// that hold records of the former layout.
type upgradeCase struct {
	name string
	keys int  // keys[0..keys-1] of the case's namespace, in byte order
	same bool // all in one Cluster slot, else each in its own
	seed []any
	ops  func(k [][]byte) []Op
	exec bool // as one transaction (EXEC), not a pipeline (Batch)
	want []Result
	// after is what each key holds afterwards; afterComposed, when set,
	// on a Cluster (composed commands) with the keys in different slots.
	after, afterComposed []any
}

// upgradeCases: every operation on records of the former layout. now is
// the server's clock; at is the ttlAt the writes give (EXAT, so that the
// string written is known to the byte).
func upgradeCases(now int64) []upgradeCase {
	live, expired, at := now+60_000, now-1000, now+5000
	b := func(s string) []byte { return []byte(s) }
	ex := backend.Expiry{Kind: backend.ExpireAt, Millis: at}
	keep := backend.Expiry{Kind: backend.KeepTTL}
	got := func(v string, ttlAt int64, isLive bool) Result {
		return Result{Found: true, Record: backend.Record{Value: b(v), TTLAt: ttlAt, Live: isLive}}
	}
	one := func(op Op) func(k [][]byte) []Op {
		return func(k [][]byte) []Op {
			op := op
			op.NS, op.Key = "ns", k[0]
			return []Op{op}
		}
	}
	cases := []upgradeCase{
		// PK.GET / PK.GETVALUE
		{name: "get live", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpGet}),
			want: []Result{got("old", live, true)}, after: []any{legacy{"old", live}}},
		{name: "get expired", keys: 1, seed: []any{legacy{"old", expired}}, ops: one(Op{Kind: OpGet}),
			want: []Result{got("old", expired, false)}, after: []any{legacy{"old", expired}}},
		{name: "get forever", keys: 1, seed: []any{legacy{"old", 0}}, ops: one(Op{Kind: OpGet}),
			want: []Result{got("old", 0, true)}, after: []any{legacy{"old", 0}}},
		{name: "get hash lacking t", keys: 1, seed: []any{hash{"v": "old"}}, ops: one(Op{Kind: OpGet}),
			want: []Result{{}}, after: []any{hash{"v": "old"}}},

		// PK.PREPARE
		{name: "prepare over live", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpPrepare, Value: b("new"), Exp: ex}),
			want: []Result{{OK: false}}, after: []any{legacy{"old", live}}},
		{name: "prepare over forever", keys: 1, seed: []any{legacy{"old", 0}}, ops: one(Op{Kind: OpPrepare, Value: b("new")}),
			want: []Result{{OK: false}}, after: []any{legacy{"old", 0}}},
		{name: "prepare over expired", keys: 1, seed: []any{legacy{"old", expired}}, ops: one(Op{Kind: OpPrepare, Value: b("new"), Exp: ex}),
			want: []Result{{OK: true}}, after: []any{record{"new", at}}},
		{name: "prepare forever over expired", keys: 1, seed: []any{legacy{"old", expired}}, ops: one(Op{Kind: OpPrepare, Value: b("new")}),
			want: []Result{{OK: true}}, after: []any{record{"new", 0}}},
		{name: "prepare over hash lacking v", keys: 1, seed: []any{hash{"t": "0"}}, ops: one(Op{Kind: OpPrepare, Value: b("new"), Exp: ex}),
			want: []Result{{OK: true}}, after: []any{record{"new", at}}},

		// PK.ROLLBACK
		{name: "rollback live", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpRollback}),
			want: []Result{{OK: true}}, after: []any{nil}},
		{name: "rollback forever", keys: 1, seed: []any{legacy{"old", 0}}, ops: one(Op{Kind: OpRollback}),
			want: []Result{{OK: true}}, after: []any{nil}},
		{name: "rollback ifeq", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpRollback, Cond: backend.IfEq(b("old"))}),
			want: []Result{{OK: true}}, after: []any{nil}},
		{name: "rollback ifeq other", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpRollback, Cond: backend.IfEq(b("other"))}),
			want: []Result{{OK: false}}, after: []any{legacy{"old", live}}},
		{name: "rollback ifeq expired", keys: 1, seed: []any{legacy{"old", expired}}, ops: one(Op{Kind: OpRollback, Cond: backend.IfEq(b("old"))}),
			want: []Result{{OK: true}}, after: []any{nil}},

		// PK.REPREPARE
		{name: "reprepare", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Exp: ex}),
			want: []Result{{OK: true}}, after: []any{record{"new", at}}},
		{name: "reprepare ifeq", keys: 1, seed: []any{legacy{"old", 0}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Cond: backend.IfEq(b("old"))}),
			want: []Result{{OK: true}}, after: []any{record{"new", 0}}},
		{name: "reprepare keepttl", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Cond: backend.IfEq(b("old")), Exp: keep}),
			want: []Result{{OK: true}}, after: []any{record{"new", live}}},
		{name: "reprepare keepttl forever", keys: 1, seed: []any{legacy{"old", 0}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Exp: keep}),
			want: []Result{{OK: true}}, after: []any{record{"new", 0}}},
		{name: "reprepare ifeq other", keys: 1, seed: []any{legacy{"old", live}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Cond: backend.IfEq(b("other")), Exp: keep}),
			want: []Result{{OK: false}}, after: []any{legacy{"old", live}}},
		{name: "reprepare expired", keys: 1, seed: []any{legacy{"old", expired}}, ops: one(Op{Kind: OpReprepare, Value: b("new"), Exp: keep}),
			want: []Result{{OK: false}}, after: []any{legacy{"old", expired}}},

		// A pipeline: on a Cluster, one script per slot and the key change
		// across slots composed between them.
		{name: "pipeline", keys: 4, seed: []any{legacy{"a", live}, legacy{"b", expired}, legacy{"c", 0}, nil},
			ops: func(k [][]byte) []Op {
				return []Op{
					{Kind: OpGet, NS: "ns", Key: k[0]},
					{Kind: OpPrepare, NS: "ns", Key: k[1], Value: b("b2"), Exp: ex},
					{Kind: OpReprepare, NS: "ns", Key: k[2], Value: b("c2"), Cond: backend.IfEq(b("c")), Exp: keep},
					{Kind: OpMove, NS: "ns", Key: k[3], Value: b("d"), OldKey: k[0], OldValue: b("a"), Exp: ex},
					{Kind: OpGet, NS: "ns", Key: k[3]},
					{Kind: OpRollback, NS: "ns", Key: k[1], Cond: backend.IfEq(b("b2"))},
					{Kind: OpGet, NS: "ns", Key: k[2]},
				}
			},
			want:  []Result{got("a", live, true), {OK: true}, {OK: true}, {Move: backend.Moved}, got("d", at, true), {OK: true}, got("c2", 0, true)},
			after: []any{nil, nil, record{"c2", 0}, record{"d", at}}},

		// A transaction: one script, its keys in one slot.
		{name: "exec", keys: 3, same: true, exec: true, seed: []any{legacy{"a", live}, legacy{"b", expired}, legacy{"c", live}},
			ops: func(k [][]byte) []Op {
				return []Op{
					{Kind: OpGet, NS: "ns", Key: k[0]},
					{Kind: OpReprepare, NS: "ns", Key: k[0], Value: b("a2"), Cond: backend.IfEq(b("a")), Exp: keep},
					{Kind: OpPrepare, NS: "ns", Key: k[1], Value: b("b2"), Exp: ex},
					{Kind: OpPrepare, NS: "ns", Key: k[2], Value: b("c2"), Exp: ex},
					{Kind: OpRollback, NS: "ns", Key: k[2]},
					{Kind: OpMPrepare, Exp: ex, Entries: []backend.Entry{{NS: "ns", Key: k[1], Value: b("x")}, {NS: "ns", Key: k[2], Value: b("c3")}}},
					{Kind: OpGet, NS: "ns", Key: k[0]},
				}
			},
			want:  []Result{got("a", live, true), {OK: true}, {OK: true}, {OK: false}, {OK: true}, {OK: false}, got("a2", live, true)},
			after: []any{record{"a2", live}, record{"b2", at}, nil}},
	}

	// PK.REPREPARE … FROM … and PK.MPREPARE, with the keys in one slot (one
	// script everywhere) and in different slots (composed on a Cluster).
	for _, same := range []bool{false, true} {
		slots := " across slots"
		if same {
			slots = " in one slot"
		}
		move := func(oldValue string) func(k [][]byte) []Op {
			return func(k [][]byte) []Op {
				return []Op{{Kind: OpMove, NS: "ns", Key: k[0], Value: b("new"), OldKey: k[1], OldValue: b(oldValue), Exp: ex}}
			}
		}
		mprepare := func(k [][]byte) []Op {
			return []Op{{Kind: OpMPrepare, Exp: ex, Entries: []backend.Entry{
				{NS: "ns", Key: k[0], Value: b("m0")}, {NS: "ns", Key: k[1], Value: b("m1")}, {NS: "ns", Key: k[2], Value: b("m2")}}}}
		}
		cases = append(cases,
			upgradeCase{name: "move from live" + slots, keys: 2, same: same, seed: []any{nil, legacy{"old", live}}, ops: move("old"),
				want: []Result{{Move: backend.Moved}}, after: []any{record{"new", at}, nil}},
			upgradeCase{name: "move from expired" + slots, keys: 2, same: same, seed: []any{nil, legacy{"old", expired}}, ops: move("old"),
				want: []Result{{Move: backend.Moved}}, after: []any{record{"new", at}, nil}},
			upgradeCase{name: "move onto expired" + slots, keys: 2, same: same, seed: []any{legacy{"stale", expired}, legacy{"old", 0}}, ops: move("old"),
				want: []Result{{Move: backend.Moved}}, after: []any{record{"new", at}, nil}},
			upgradeCase{name: "move onto live" + slots, keys: 2, same: same, seed: []any{legacy{"taken", live}, legacy{"old", live}}, ops: move("old"),
				want: []Result{{Move: backend.NewKeyTaken}}, after: []any{legacy{"taken", live}, legacy{"old", live}}},
			// Composed, the new key is reserved, then put back when the old
			// one holds another value: the record it held, in the string
			// layout, with the same ttlAt and expiry.
			upgradeCase{name: "move from other value" + slots, keys: 2, same: same, seed: []any{legacy{"stale", expired}, legacy{"old", live}}, ops: move("other"),
				want: []Result{{Move: backend.OldKeyMismatch}}, after: []any{legacy{"stale", expired}, legacy{"old", live}},
				afterComposed: []any{record{"stale", expired}, legacy{"old", live}}},
			upgradeCase{name: "mprepare over expired" + slots, keys: 3, same: same, seed: []any{nil, legacy{"old", expired}, nil}, ops: mprepare,
				want: []Result{{OK: true}}, after: []any{record{"m0", at}, record{"m1", at}, record{"m2", at}}},
			upgradeCase{name: "mprepare meets live" + slots, keys: 3, same: same, seed: []any{legacy{"stale", expired}, nil, legacy{"held", live}}, ops: mprepare,
				want: []Result{{OK: false}}, after: []any{legacy{"stale", expired}, nil, legacy{"held", live}},
				afterComposed: []any{record{"stale", expired}, nil, legacy{"held", live}}},
			upgradeCase{name: "mprepare meets forever" + slots, keys: 3, same: same, seed: []any{nil, legacy{"held", 0}, nil}, ops: mprepare,
				want: []Result{{OK: false}}, after: []any{nil, legacy{"held", 0}, nil}},
		)
	}
	return cases
}

// upgradeTarget is a deployment the upgrade test runs on.
type upgradeTarget struct {
	name     string
	url      string
	composed bool // miniredis taken for a Cluster: composed key changes and MPREPAREs
	wire     bool // pipelines through the Wire (the event loops' path on standalone)
	exact    bool // the server's clock stands still (miniredis): expiries exact
}

// TestUpgradeFromHashRecords: records written by the former layout (a hash
// {v, t} with the key's expiry at t + retention) keep working after an
// upgrade, on every deployment and every path: read by PK.GET and PK.SCAN,
// a live one holds its key, and every write replaces the hash with the
// string layout (a ROLLBACK deletes it). Each case seeds hashes, runs its
// operations and checks their exact answers and what each key then holds
// (type, content and expiry). On miniredis (as is, and taken for a Cluster
// so that key changes and MPREPAREs across slots are composed), through
// the Wire, and on the real standalone, Sentinel and Cluster servers of
// scripts/redis-servers.sh.
func TestUpgradeFromHashRecords(t *testing.T) {
	f := startFake(t)
	targets := []upgradeTarget{
		{name: "miniredis", url: f.url(), exact: true},
		{name: "miniredis composed", url: f.url(), composed: true, exact: true},
		{name: "miniredis wire", url: f.url(), wire: true, exact: true},
	}
	for _, env := range []string{envStandalone, envSentinel, envCluster} {
		if url, ok := lookupServer(t, env); ok {
			targets = append(targets, upgradeTarget{name: env, url: url})
			if env == envStandalone {
				targets = append(targets, upgradeTarget{name: env + " wire", url: url, wire: true})
			}
		}
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, tg.url, Config{Options: backend.Options{Retention: upgradeRetention}})
			s.composed = s.composed || tg.composed
			rc := adminClient(t, tg.url)
			tm, err := rc.Time(ctx).Result()
			require.NoError(t, err)
			now := tm.UnixMilli()
			check := stateChecker{rc: rc, delta: 2000}
			if tg.exact {
				check.delta = 0
			}
			run := s.pipeline
			if tg.wire {
				run = wirePipeline(t, s)
			}

			for i, tc := range upgradeCases(now) {
				t.Run(tc.name, func(t *testing.T) {
					ns := fmt.Sprintf("c%d", i)
					keys := keysWithSlots(s.keys, ns, tc.keys, tc.same)
					slices.SortFunc(keys, bytes.Compare) // an MPREPARE's order across slots
					rkeys := make([]string, len(keys))
					for j, k := range keys {
						rkeys[j] = s.keys.recordKey(ns, k)
						seedKey(t, rc, rkeys[j], tc.seed[j])
					}
					ops := tc.ops(keys)
					for j := range ops {
						ops[j].NS = ns
						for e := range ops[j].Entries {
							ops[j].Entries[e].NS = ns
						}
					}
					res := make([]Result, len(ops))
					if tc.exec {
						require.NoError(t, s.Run(ctx, ops, res, backend.Isolated))
					} else {
						run(ctx, ops, res)
					}
					require.Equal(t, tc.want, res)
					after := tc.after
					if tc.afterComposed != nil && s.composed && !tc.same {
						after = tc.afterComposed
					}
					for j, rk := range rkeys {
						check.require(t, rk, after[j], "key %d", j)
					}
				})
			}

			// PK.SCAN lists the hashes with the strings, and skips what is
			// no record: a hash lacking a field, a string not of the form,
			// a key of another type.
			t.Run("scan", func(t *testing.T) {
				ns := "scan"
				seeds := map[string]any{
					"live": legacy{"a", now + 60_000}, "expired": legacy{"b", now - 1000}, "forever": legacy{"c", 0},
					"string": record{"d", now + 60_000},
					"no t":   hash{"v": "x"}, "junk": str("junk"), "list": list("x"),
				}
				for k, seed := range seeds {
					seedKey(t, rc, s.keys.recordKey(ns, []byte(k)), seed)
				}
				seen := map[string]backend.Record{}
				var pos []byte
				for pages := 0; ; pages++ {
					require.Less(t, pages, 100_000, "the scan ends")
					page, err := s.Scan(ctx, ns, pos, 100)
					require.NoError(t, err)
					for _, r := range page.Records {
						seen[string(r.Key)] = r.Record
					}
					if page.Done {
						break
					}
					pos = page.Next
				}
				require.Equal(t, map[string]backend.Record{
					"live":    {Value: []byte("a"), TTLAt: now + 60_000, Live: true},
					"expired": {Value: []byte("b"), TTLAt: now - 1000},
					"forever": {Value: []byte("c"), Live: true},
					"string":  {Value: []byte("d"), TTLAt: now + 60_000, Live: true},
				}, seen)
				for k, seed := range seeds {
					check.require(t, s.keys.recordKey(ns, []byte(k)), seed, k)
				}
			})
		})
	}
}

// adminClient is a go-redis client on the deployment behind a store URL,
// for seeding and checking keys: on a Cluster it routes each key to its
// node, on Sentinel it finds the master.
func adminClient(t *testing.T, url string) goredis.UniversalClient {
	tg, err := parseURL(url)
	require.NoError(t, err)
	var c goredis.UniversalClient
	switch tg.topology {
	case Cluster:
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: tg.addrs, Username: tg.username, Password: tg.password})
	case Sentinel:
		c = goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: tg.master, SentinelAddrs: tg.addrs,
			Username: tg.username, Password: tg.password, DB: tg.db})
	default:
		c = goredis.NewClient(&goredis.Options{Addr: tg.addrs[0], Username: tg.username, Password: tg.password, DB: tg.db})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// seedKey writes seed at rkey (nil: nothing), as the former sidecars or
// another program wrote it; the key is deleted when the test ends.
func seedKey(t *testing.T, rc goredis.UniversalClient, rkey string, seed any) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { rc.Del(context.Background(), rkey) })
	hour := upgradeRetention.Milliseconds()
	switch seed := seed.(type) {
	case nil:
	case legacy: // what the former block.lua wrote: HSET v t, PEXPIREAT t + retention
		require.NoError(t, rc.HSet(ctx, rkey, "v", seed.v, "t", itoa(seed.ttlAt)).Err())
		if seed.ttlAt != 0 {
			require.NoError(t, rc.PExpireAt(ctx, rkey, time.UnixMilli(seed.ttlAt+hour)).Err())
		}
	case record: // what block.lua writes (PX ttlAt + retention - now)
		require.NoError(t, rc.Set(ctx, rkey, itoa(seed.ttlAt)+":"+seed.v, 0).Err())
		if seed.ttlAt != 0 {
			require.NoError(t, rc.PExpireAt(ctx, rkey, time.UnixMilli(seed.ttlAt+hour)).Err())
		}
	case hash:
		require.NoError(t, rc.HSet(ctx, rkey, map[string]string(seed)).Err())
	case str:
		require.NoError(t, rc.Set(ctx, rkey, string(seed), 0).Err())
	case list:
		require.NoError(t, rc.RPush(ctx, rkey, string(seed)).Err())
	default:
		t.Fatalf("seedKey: %T", seed)
	}
}

// stateChecker checks what a key holds: type, content and, for a record,
// its Redis expiry (ttlAt + retention, none for a forever record), exact
// to the millisecond on a server whose clock stands still, within delta
// ms on a real one (PX counts from the moment Redis runs the SET).
type stateChecker struct {
	rc    goredis.UniversalClient
	delta int64
}

func (c stateChecker) require(t *testing.T, rkey string, want any, msg ...any) {
	t.Helper()
	ctx := context.Background()
	msg = append([]any{"%s: " + msg[0].(string), rkey}, msg[1:]...)
	wantExpiry := func(ttlAt int64, delta int64) {
		t.Helper()
		exp, exact, err := pexpireTime(ctx, c.rc, rkey)
		require.NoError(t, err)
		if !exact {
			delta++
		}
		if ttlAt == 0 {
			require.Equal(t, int64(-1), exp, msg...)
			return
		}
		require.InDelta(t, ttlAt+upgradeRetention.Milliseconds(), exp, float64(delta), msg...)
	}
	switch want := want.(type) {
	case legacy: // left as the former sidecar wrote it, to the millisecond
		requireKey(t, c.rc, rkey, hash{"v": want.v, "t": itoa(want.ttlAt)}, msg...)
		wantExpiry(want.ttlAt, 0)
	case record:
		requireKey(t, c.rc, rkey, str(itoa(want.ttlAt)+":"+want.v), msg...)
		wantExpiry(want.ttlAt, c.delta)
	case list:
		typ, err := c.rc.Type(ctx, rkey).Result()
		require.NoError(t, err)
		require.Equal(t, "list", typ, msg...)
	default:
		requireKey(t, c.rc, rkey, want, msg...)
	}
}

// wirePipeline runs a pipeline through the store's Wire on a connection of
// its own, as an event loop does: the requests written at once, the
// replies read as they come, and what Read hands back (NOSCRIPT, a scan)
// through Batch.
func wirePipeline(t *testing.T, s *Store) func(ctx context.Context, ops []Op, res []Result) {
	w := s.Wire()
	require.NotNil(t, w)
	return func(ctx context.Context, ops []Op, res []Result) {
		wireExchange(t, ctx, w, ops, res, func(ops []Op, res []Result) { s.Run(ctx, ops, res, backend.Pipelined) })
	}
}

// pexpireTimeLua is PEXPIRETIME for Redis before 7.0: the server's clock
// plus PTTL, both read in one script. The two readings may fall in two
// milliseconds, so the answer is exact to 1 ms.
const pexpireTimeLua = `local p = redis.call('PTTL', KEYS[1])
if p < 0 then return p end
local tm = redis.call('TIME')
return tonumber(tm[1]) * 1000 + math.floor(tonumber(tm[2]) / 1000) + p`

// pexpireTime returns a key's expiry as Unix ms (-1 none, -2 no key), and
// whether it is exact: PEXPIRETIME is Redis 7.0's, so on Redis 6 it is
// computed from PTTL (docs/redis.md, Versions tested).
func pexpireTime(ctx context.Context, rc goredis.UniversalClient, key string) (int64, bool, error) {
	exp, err := rc.Do(ctx, "PEXPIRETIME", key).Int64()
	if err == nil || !strings.Contains(err.Error(), "unknown command") {
		return exp, true, err
	}
	exp, err = rc.Eval(ctx, pexpireTimeLua, []string{key}).Int64()
	return exp, false, err
}
