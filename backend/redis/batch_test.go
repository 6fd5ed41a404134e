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

// batchCase is a pipeline of ops on two keys, each depending on the ones
// before it, with the exact results wanted.
func batchCase(ns string) ([]Op, []Result) {
	k1, k2 := []byte("key0"), []byte("key1")
	b := func(s string) []byte { return []byte(s) }
	ops := []Op{
		{Kind: OpPrepare, NS: ns, Key: k1, Value: b("v1")},
		{Kind: OpPrepare, NS: ns, Key: k1, Value: b("v2")},
		{Kind: OpGet, NS: ns, Key: k1},
		{Kind: OpReprepare, NS: ns, Key: k1, Value: b("v3"), Cond: backend.IfEq(b("v1"))},
		{Kind: OpGet, NS: ns, Key: k1},
		{Kind: OpMove, NS: ns, Key: k2, Value: b("nv"), OldKey: k1, OldValue: b("v1")},
		{Kind: OpMove, NS: ns, Key: k2, Value: b("nv"), OldKey: k1, OldValue: b("v3")},
		{Kind: OpGet, NS: ns, Key: k1},
		{Kind: OpGet, NS: ns, Key: k2},
		{Kind: OpRollback, NS: ns, Key: k2, Cond: backend.IfEq(b("x"))},
		{Kind: OpRollback, NS: ns, Key: k2},
		{Kind: 99},
		{Kind: OpGet, NS: ns, Key: k2},
	}
	want := []Result{
		{OK: true},
		{OK: false},
		{Found: true, Record: backend.Record{Value: b("v1"), Live: true}},
		{OK: true},
		{Found: true, Record: backend.Record{Value: b("v3"), Live: true}},
		{Move: backend.OldKeyMismatch},
		{Move: backend.Moved},
		{},
		{Found: true, Record: backend.Record{Value: b("nv"), Live: true}},
		{OK: false},
		{OK: true},
		{Err: fmt.Errorf("redis: batch: unknown op kind 99")},
		{},
	}
	return ops, want
}

func requireBatch(t *testing.T, s *Store, ns string) {
	t.Helper()
	ops, want := batchCase(ns)
	res := make([]Result, len(ops))
	s.Run(context.Background(), ops, res, backend.Pipelined)
	for i := range want {
		if want[i].Err != nil {
			require.EqualError(t, res[i].Err, want[i].Err.Error(), "op %d", i)
			res[i].Err, want[i].Err = nil, nil
		}
	}
	require.Equal(t, want, res)
}

func TestBatch(t *testing.T) {
	type target struct {
		name     string
		url      string
		composed bool
	}
	f := startFake(t)
	targets := []target{{"miniredis", f.url(), false}, {"miniredis composed", f.url(), true}}
	for _, env := range []string{envStandalone, envCluster, envSentinel} {
		if url, ok := lookupServer(t, env); ok {
			targets = append(targets, target{env, url, false})
		}
	}
	ks := keyspace{prefix: "pk:"}
	require.NotEqual(t, slot(ks.recordKey("ns", []byte("key0"))), slot(ks.recordKey("ns", []byte("key1"))),
		"the batch's keys must fall in two slots for the composed case to mean anything")
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			s := openStore(t, tg.url, Config{})
			s.composed = s.composed || tg.composed
			requireBatch(t, s, "ns")
			requireBatch(t, s, "ns") // the records are gone again
		})
	}
}

// TestBatchScriptFlush runs a batch on an empty script cache: every op gets
// NOSCRIPT and is sent again with EVAL, in order.
func TestBatchScriptFlush(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{})
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, rc.ScriptFlush(context.Background()).Err())
	requireBatch(t, s, "ns")
}

// TestBatchDown checks that every op of a batch gets the failure.
func TestBatchDown(t *testing.T) {
	s := openStore(t, fmt.Sprintf("redis://127.0.0.1:%d", freePort(t)), Config{})
	ops, _ := batchCase("ns")
	res := make([]Result, len(ops))
	s.Run(context.Background(), ops, res, backend.Pipelined)
	for i, r := range res {
		require.Error(t, r.Err, "op %d", i)
		require.True(t, strings.HasPrefix(r.Err.Error(), "redis: "), "%q", r.Err)
		require.Zero(t, r.OK || r.Found || r.Move != 0, "op %d answered despite the failure", i)
	}
}

// wrongTypeCase is a batch whose ops meet, in the middle, a key that
// someone wrote another type at (a list: a record is a string, or a hash
// of the former layout): the ops on it fail with
// WRONGTYPE, each with its own error, and every other op runs and is
// answered exactly, before and after it (one script runs them all: an
// error that ended the script would lose the replies of the ops before it,
// which have written).
func wrongTypeCase(ns string) (ops []Op, want []Result, bad string) {
	b := func(s string) []byte { return []byte(s) }
	ten := backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000}
	wrongType := fmt.Errorf("WRONGTYPE Operation against a key holding the wrong kind of value")
	ops = []Op{
		{Kind: OpPrepare, NS: ns, Key: b("a"), Value: b("va"), Exp: ten},
		{Kind: OpPrepare, NS: ns, Key: b("bad"), Value: b("x")},
		{Kind: OpPrepare, NS: ns, Key: b("c"), Value: b("vc")},
		{Kind: OpGet, NS: ns, Key: b("a")},
		{Kind: OpGet, NS: ns, Key: b("bad")},
		{Kind: OpReprepare, NS: ns, Key: b("bad"), Value: b("y")},
		{Kind: OpRollback, NS: ns, Key: b("c"), Cond: backend.IfEq(b("vc"))},
		{Kind: OpMPrepare, Entries: []backend.Entry{{NS: ns, Key: b("d"), Value: b("vd")}, {NS: ns, Key: b("bad"), Value: b("z")}}},
		{Kind: OpGet, NS: ns, Key: b("d")},
		{Kind: OpGet, NS: ns, Key: b("c")},
	}
	want = []Result{
		{OK: true},
		{Err: fmt.Errorf("redis: prepare: %w", wrongType)},
		{OK: true},
		{Found: true, Record: backend.Record{Value: b("va"), Live: true}}, // TTLAt checked apart
		{Err: fmt.Errorf("redis: get: %w", wrongType)},
		{Err: fmt.Errorf("redis: reprepare: %w", wrongType)},
		{OK: true},
		{Err: fmt.Errorf("redis: mprepare: %w", wrongType)},
		{}, // the MPREPARE wrote none of its keys
		{},
	}
	return ops, want, "bad"
}

// requireWrongType checks res against wrongTypeCase's want, and that the
// list at the bad key is untouched.
func requireWrongType(t *testing.T, s *Store, rc goredis.Cmdable, ns string, run func(ops []Op, res []Result)) {
	t.Helper()
	ctx := context.Background()
	ops, want, bad := wrongTypeCase(ns)
	rbad := s.keys.recordKey(ns, []byte(bad))
	require.NoError(t, rc.Del(ctx, rbad).Err())
	require.NoError(t, rc.RPush(ctx, rbad, "not a record").Err())
	res := make([]Result, len(ops))
	run(ops, res)
	for i := range want {
		if want[i].Err != nil {
			require.EqualError(t, res[i].Err, want[i].Err.Error(), "op %d", i)
			res[i].Err, want[i].Err = nil, nil
		}
	}
	require.Positive(t, res[3].Record.TTLAt, "PX 10000 from Redis's clock")
	res[3].Record.TTLAt = 0
	require.Equal(t, want, res)
	v, err := rc.LRange(ctx, rbad, 0, -1).Result()
	require.NoError(t, err)
	require.Equal(t, []string{"not a record"}, v)
}

// evalshaCalls is how many EVALSHA Redis has run (INFO commandstats).
func evalshaCalls(t *testing.T, rc goredis.Cmdable) int {
	t.Helper()
	info, err := rc.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	var n int
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			_, _ = fmt.Sscanf(rest, "%d", &n)
		}
	}
	return n
}

// TestBatchWrongType: an op failing inside the batch's script does not
// take the others' replies with it, through Batch (the client's path:
// Sentinel, TLS, Cluster) and through the Wire (the event loops' own
// connections). On a real Redis the batch is one EVALSHA.
func TestBatchWrongType(t *testing.T) {
	f := startFake(t)
	type target struct{ name, url string }
	targets := []target{{"miniredis", f.url()}}
	// A server of its own: the test counts the scripts it runs.
	own := startRedis(t)
	targets = append(targets, target{"redis-server", "redis://" + own.addr()})
	if url, ok := lookupServer(t, envCluster); ok {
		targets = append(targets, target{envCluster, url})
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			// One hash tag in the prefix: the batch's keys share one slot,
			// so a Cluster runs them in one script too.
			s := openStore(t, tg.url, Config{KeyPrefix: fmt.Sprintf("{wt%d}:", time.Now().UnixNano())})
			require.NoError(t, s.Ping(context.Background()))
			var rc goredis.UniversalClient
			if tg.name == envCluster {
				rc = clusterClient(t)
			} else {
				opt, err := goredis.ParseURL(tg.url)
				require.NoError(t, err)
				rc = goredis.NewClient(opt)
				t.Cleanup(func() { _ = rc.Close() })
			}
			real := tg.name == "redis-server"
			before := 0
			if real {
				before = evalshaCalls(t, rc)
			}
			requireWrongType(t, s, rc, "batch", func(ops []Op, res []Result) { s.Run(context.Background(), ops, res, backend.Pipelined) })
			if real {
				require.Equal(t, before+1, evalshaCalls(t, rc), "one script for the batch")
			}
			if w := s.Wire(); w != nil {
				requireWrongType(t, s, rc, "wire", func(ops []Op, res []Result) {
					require.Equal(t, 1, bytes.Count(w.Append(nil, ops), []byte("EVALSHA")), "one script for the batch")
					copy(res, wireRun(t, w, ops))
				})
			}
		})
	}
}

// TestBlockSpan: a block.lua call holds at most maxBlockOps operations (a
// key change counts 2, an MPREPARE its keys) and maxBlockBytes of keys
// and values, at least one op, and never a scan.
func TestBlockSpan(t *testing.T) {
	prep := func(n, size int) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = Op{Kind: OpPrepare, NS: "ns", Key: []byte("k"), Value: make([]byte, size)}
		}
		return ops
	}
	require.Equal(t, maxBlockOps, blockSpan(prep(300, 1)))
	require.Equal(t, 5, blockSpan(prep(5, 1)))
	require.Equal(t, maxBlockOps/2, blockSpan(append(prep(0, 0), slices.Repeat([]Op{{Kind: OpMove, Key: []byte("a"), OldKey: []byte("b")}}, maxBlockOps)...)))
	entries := make([]backend.Entry, maxBlockOps-1)
	require.Equal(t, 2, blockSpan(append(prep(1, 1), Op{Kind: OpMPrepare, Entries: entries}, Op{Kind: OpGet})))
	require.Equal(t, 2, blockSpan(prep(10, 100<<10)), "256 KiB of values")
	require.Equal(t, 1, blockSpan(prep(2, 2<<20)), "one op however large")
	require.Equal(t, 2, blockSpan(append(prep(2, 1), Op{Kind: backend.OpScan}, prep(1, 1)[0])))
	require.Equal(t, 0, blockSpan([]Op{{Kind: backend.OpScan}}))
}

// TestBatchLong: a batch longer than a block is several block.lua calls,
// in one round trip, answered in order, through Batch and the Wire.
func TestBatchLong(t *testing.T) {
	own := startRedis(t)
	rc := own.client(t)
	s := openStore(t, "redis://"+own.addr(), Config{})
	n := 2*maxBlockOps + 10
	batch := func(ns string) ([]Op, []Result) {
		var ops []Op
		var want []Result
		for i := range n {
			k := fmt.Appendf(nil, "k%d", i/2) // each key twice: won, then held
			ops = append(ops, Op{Kind: OpPrepare, NS: ns, Key: k, Value: []byte("v")})
			want = append(want, Result{OK: i%2 == 0})
		}
		return ops, want
	}
	before := evalshaCalls(t, rc)
	ops, want := batch("b")
	res := make([]Result, n)
	s.Run(context.Background(), ops, res, backend.Pipelined)
	require.Equal(t, want, res)
	require.Equal(t, before+3, evalshaCalls(t, rc))

	ops, want = batch("w")
	require.Equal(t, 3, bytes.Count(s.Wire().Append(nil, ops), []byte("EVALSHA")))
	require.Equal(t, want, wireRun(t, s.Wire(), ops))
}

// TestPlanBlocks: a batch is one block.lua call on standalone and
// Sentinel; on a Cluster one per slot, the ops of a slot in their order.
func TestPlanBlocks(t *testing.T) {
	at := func(blocks []block) [][]int {
		var out [][]int
		for _, b := range blocks {
			out = append(out, b.at)
		}
		return out
	}
	p := func(key string) Op { return Op{Kind: OpPrepare, NS: "ns", Key: []byte(key), Value: []byte("v")} }
	ks := keyspace{prefix: "pk:"}
	require.NotEqual(t, slot(ks.recordKey("ns", []byte("a"))), slot(ks.recordKey("ns", []byte("b"))))
	ops := []Op{p("a"), p("b"), p("a"), {Kind: 99}, {Kind: OpGet, NS: "ns", Key: []byte("b")}}

	s := openStore(t, "redis://127.0.0.1:1", Config{KeyPrefix: "pk:"})
	res := make([]Result, len(ops))
	require.Equal(t, [][]int{{0, 1, 2, 4}}, at(s.planBlocks(ops, res)))
	require.EqualError(t, res[3].Err, "redis: batch: unknown op kind 99")

	c := openStore(t, "redis+cluster://127.0.0.1:1", Config{KeyPrefix: "pk:"})
	require.Equal(t, [][]int{{0, 2}, {1, 4}}, at(c.planBlocks(ops, make([]Result, len(ops)))))

	// A hash tag in the prefix puts every key in one slot: one call.
	tagged := openStore(t, "redis+cluster://127.0.0.1:1", Config{KeyPrefix: "{app}:"})
	require.Equal(t, [][]int{{0, 1, 2, 4}}, at(tagged.planBlocks(ops, make([]Result, len(ops)))))
}
