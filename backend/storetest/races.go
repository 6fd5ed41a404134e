package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// racers is how many goroutines race for one record.
const racers = 64

// Race runs f(0..n-1) on n goroutines released together, and returns the
// indexes for which f answered true. Any error fails the test: a store
// error is never a lost race.
func Race(t *testing.T, n int, f func(i int) (bool, error)) []int {
	t.Helper()
	var (
		ready, done sync.WaitGroup
		start       = make(chan struct{})
		won         = make([]bool, n)
		errs        = make([]error, n)
	)
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			won[i], errs[i] = f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	var winners []int
	for i := range n {
		require.NoError(t, errs[i], "racer %d", i)
		if won[i] {
			winners = append(winners, i)
		}
	}
	return winners
}

// RacerValue is racer i's value, so a record names the race's winner.
func RacerValue(i int) string { return fmt.Sprintf("racer-%02d", i) }

// testRacePrepareAbsent: of 64 PREPAREs of one absent key, exactly one
// reserves it, and the record holds the winner's value.
func testRacePrepareAbsent(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	winners := Race(t, racers, func(i int) (bool, error) {
		return e.calls.Prepare(e.ctx, ns, []byte("k"), []byte(RacerValue(i)), backend.Expiry{})
	})
	require.Len(t, winners, 1, "PREPARE winners")
	e.requireRecord(ns, "k", RacerValue(winners[0]), ttlWant{}, true)
}

// testRacePrepareExpired: of 64 PREPAREs of a key whose record expired,
// exactly one replaces it.
func testRacePrepareExpired(t *testing.T, e *env) {
	require.True(t, e.prepare(ns, "k", "old", e.after(e.plan.ttl)))
	e.advance(e.plan.expire)
	winners := Race(t, racers, func(i int) (bool, error) {
		return e.calls.Prepare(e.ctx, ns, []byte("k"), []byte(RacerValue(i)), backend.Expiry{})
	})
	require.Len(t, winners, 1, "PREPARE winners")
	e.requireRecord(ns, "k", RacerValue(winners[0]), ttlWant{}, true)
}

// testRaceRollback: of 64 ROLLBACK IFEQs of one record, exactly one deletes
// it.
func testRaceRollback(t *testing.T, e *env) {
	require.True(t, e.prepare(ns, "k", "v", forever))
	winners := Race(t, racers, func(int) (bool, error) {
		return e.calls.Rollback(e.ctx, ns, []byte("k"), backend.IfEq([]byte("v")))
	})
	require.Len(t, winners, 1, "ROLLBACK winners")
	e.requireAbsent(ns, "k")
}

// testRaceReprepare: of 64 REPREPARE IFEQ v0 with distinct values, exactly
// one replaces the record, and it holds the winner's value.
func testRaceReprepare(t *testing.T, e *env) {
	require.True(t, e.prepare(ns, "k", "v0", forever))
	winners := Race(t, racers, func(i int) (bool, error) {
		return e.calls.Reprepare(e.ctx, ns, []byte("k"), []byte(RacerValue(i)), backend.IfEq([]byte("v0")), backend.Expiry{})
	})
	require.Len(t, winners, 1, "REPREPARE winners")
	e.requireRecord(ns, "k", RacerValue(winners[0]), ttlWant{}, true)
}

// testRaceMove: two key changes of one old key to two new keys, round after
// round: exactly one moves, the other is a mismatch and leaves its new key
// unreserved.
func testRaceMove(t *testing.T, e *env) {
	const rounds = 50
	for r := range rounds {
		oldKey := fmt.Sprintf("old-%d", r)
		newKeys := [2]string{fmt.Sprintf("a-%d", r), fmt.Sprintf("b-%d", r)}
		require.True(t, e.prepare(ns, oldKey, "ov", forever))
		results := make([]backend.MoveResult, 2)
		winners := Race(t, 2, func(i int) (bool, error) {
			res, err := e.calls.Move(e.ctx, ns, []byte(newKeys[i]), []byte(RacerValue(i)), []byte(oldKey), []byte("ov"), backend.Expiry{})
			results[i] = res
			return res == backend.Moved, err
		})
		require.Len(t, winners, 1, "round %d: moves %v", r, results)
		w := winners[0]
		require.Equal(t, backend.OldKeyMismatch, results[1-w], "round %d: loser", r)
		e.requireRecord(ns, newKeys[w], RacerValue(w), ttlWant{}, true)
		e.requireAbsent(ns, newKeys[1-w])
		e.requireAbsent(ns, oldKey)
	}
}

// testRacePrepareMany: racers each reserve their own keys at once, and
// every one of them is there afterwards; stores with striped locks or
// batched writes must not lose or mix up concurrent writes to distinct keys.
func testRacePrepareMany(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	const perRacer = 8
	key := func(i, j int) string { return fmt.Sprintf("k-%d-%d", i, j) }
	winners := Race(t, racers, func(i int) (bool, error) {
		for j := range perRacer {
			ok, err := e.calls.Prepare(e.ctx, ns, []byte(key(i, j)), []byte(RacerValue(i)), backend.Expiry{})
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	})
	require.Len(t, winners, racers, "racers that reserved all their keys")
	for i := range racers {
		for j := range perRacer {
			e.requireRecord(ns, key(i, j), RacerValue(i), ttlWant{}, true)
		}
	}
}

// testRaceMoveVersusPrepare: a key change to newKey races a PREPARE of
// newKey, round after round: exactly one of them gets newKey, and a move
// that loses leaves oldKey as it was.
func testRaceMoveVersusPrepare(t *testing.T, e *env) {
	const rounds = 50
	for r := range rounds {
		oldKey, newKey := fmt.Sprintf("old-%d", r), fmt.Sprintf("new-%d", r)
		require.True(t, e.prepare(ns, oldKey, "ov", forever))
		var res backend.MoveResult
		winners := Race(t, 2, func(i int) (bool, error) {
			if i == 0 {
				var err error
				res, err = e.calls.Move(e.ctx, ns, []byte(newKey), []byte("moved"), []byte(oldKey), []byte("ov"), backend.Expiry{})
				return res == backend.Moved, err
			}
			return e.calls.Prepare(e.ctx, ns, []byte(newKey), []byte("prepared"), backend.Expiry{})
		})
		require.Len(t, winners, 1, "round %d: move %v", r, res)
		if winners[0] == 0 {
			e.requireRecord(ns, newKey, "moved", ttlWant{}, true)
			e.requireAbsent(ns, oldKey)
			continue
		}
		require.Equal(t, backend.NewKeyTaken, res, "round %d: losing move", r)
		e.requireRecord(ns, newKey, "prepared", ttlWant{}, true)
		e.requireRecord(ns, oldKey, "ov", ttlWant{}, true)
	}
}

// testRaceMoveVersusRollback: a key change from oldKey races a ROLLBACK
// IFEQ of oldKey, round after round: exactly one of them releases oldKey,
// and a move that loses leaves newKey unreserved.
func testRaceMoveVersusRollback(t *testing.T, e *env) {
	const rounds = 50
	for r := range rounds {
		oldKey, newKey := fmt.Sprintf("old-%d", r), fmt.Sprintf("new-%d", r)
		require.True(t, e.prepare(ns, oldKey, "ov", forever))
		var res backend.MoveResult
		winners := Race(t, 2, func(i int) (bool, error) {
			if i == 0 {
				var err error
				res, err = e.calls.Move(e.ctx, ns, []byte(newKey), []byte("nv"), []byte(oldKey), []byte("ov"), backend.Expiry{})
				return res == backend.Moved, err
			}
			return e.calls.Rollback(e.ctx, ns, []byte(oldKey), backend.IfEq([]byte("ov")))
		})
		require.Len(t, winners, 1, "round %d: move %v", r, res)
		e.requireAbsent(ns, oldKey)
		if winners[0] == 0 {
			e.requireRecord(ns, newKey, "nv", ttlWant{}, true)
			continue
		}
		require.Equal(t, backend.OldKeyMismatch, res, "round %d: losing move", r)
		e.requireAbsent(ns, newKey)
	}
}
