package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// Transactions are tested here on the store's Run with backend.Isolated
// (its isolation); MULTI
// and EXEC over connections, whose queueing and replies are the server's,
// are tested on every backend in e2e/conformance.

// isolates reports whether the harness's store runs a block on keys (in
// ns) as one isolated unit.
func (e *env) isolates(keys []string) bool {
	if e.h.Isolates == nil || len(keys) == 0 {
		return true
	}
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		bs[i] = []byte(k)
	}
	return e.h.Isolates(ns, bs)
}

// blockKeys are the two keys of the isolation races.
func (e *env) blockKeys() (string, string) {
	if e.h.BlockKeys[0] == "" {
		return "a", "b"
	}
	return e.h.BlockKeys[0], e.h.BlockKeys[1]
}

// testExecIsolation races, on the store's Run (Isolated), a block PREPARE a +
// PREPARE b against a block PREPARE b + PREPARE a: isolated, one block
// takes both keys and the other none, never one key each (which two blocks
// interleaving op by op gives, each winning its first key). It releases
// many more racers together than connections could (e2e/conformance races
// the same blocks through MULTI/EXEC): it catches the narrow windows of a
// store in memory.
func testExecIsolation(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	a, b := e.blockKeys()
	if !e.isolates([]string{a, b}) {
		t.Skip("the store does not isolate a block on these keys")
	}
	const rounds = 50
	for round := range rounds {
		winners := Race(t, racers, func(i int) (bool, error) {
			v := []byte(RacerValue(i))
			first, second := []byte(a), []byte(b)
			if i%2 == 1 {
				first, second = second, first
			}
			ops := []backend.Op{
				{Kind: backend.OpPrepare, NS: ns, Key: first, Value: v},
				{Kind: backend.OpPrepare, NS: ns, Key: second, Value: v},
			}
			res := make([]backend.Result, len(ops))
			if err := e.h.Store.Run(e.ctx, ops, res, backend.Isolated); err != nil {
				return false, err
			}
			if res[0].OK != res[1].OK {
				return false, fmt.Errorf("block %s got one key of two: %v, %v", v, res[0].OK, res[1].OK)
			}
			return res[0].OK, nil
		})
		require.Len(t, winners, 1, "round %d: blocks that took both keys", round)
		v := RacerValue(winners[0])
		e.requireRecord(ns, a, v, ttlWant{}, true)
		e.requireRecord(ns, b, v, ttlWant{}, true)
		require.True(t, e.rollback(ns, a, always))
		require.True(t, e.rollback(ns, b, always))
	}
}
