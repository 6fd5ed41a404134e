package redis

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
	s.Batch(context.Background(), ops, res)
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
	s.Batch(context.Background(), ops, res)
	for i, r := range res {
		require.Error(t, r.Err, "op %d", i)
		require.True(t, strings.HasPrefix(r.Err.Error(), "redis: "), "%q", r.Err)
		require.Zero(t, r.OK || r.Found || r.Move != 0, "op %d answered despite the failure", i)
	}
}
