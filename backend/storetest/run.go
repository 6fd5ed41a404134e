package storetest

import "testing"

// Run runs the whole suite against the stores newStore builds, one fresh
// store per subtest.
//
// Where PROTOCOL.md is silent the suite holds stores to these choices:
//   - A record is live while now < ttlAt, expired from ttlAt, and has no
//     record from ttlAt+Retention on (so with Retention 0, from ttlAt),
//     whether or not the store has deleted it yet: ROLLBACK answers false
//     and a key change from it is a mismatch.
//   - A key change whose newKey is taken and whose oldKey mismatches is
//     NewKeyTaken: it is PREPARE newKey then ROLLBACK oldKey IFEQ, and the
//     PREPARE answers first.
//   - A key change that fails changes nothing: an expired, retained newKey
//     record is still there, unchanged, after a mismatch.
//   - Stores are only given namespaces the contract allows, so an encoding
//     of (namespace, key) may rely on their alphabet.
func Run(t *testing.T, newStore NewStore) {
	t.Run("Prepare", func(t *testing.T) { runRows(t, newStore, prepareRows()) })
	t.Run("Get", func(t *testing.T) { runRows(t, newStore, getRows()) })
	t.Run("Rollback", func(t *testing.T) { runRows(t, newStore, rollbackRows()) })
	t.Run("Reprepare", func(t *testing.T) { runRows(t, newStore, reprepareRows()) })
	t.Run("Move", func(t *testing.T) { runRows(t, newStore, moveRows()) })
	t.Run("MPrepare", func(t *testing.T) {
		runRows(t, newStore, mprepareRows())
		t.Run("one ttlAt for every key", func(t *testing.T) { testMPrepareOneTTLAt(t, newStore) })
		t.Run("64 binary keys", func(t *testing.T) { testMPrepareMany(t, newStore) })
	})
	t.Run("Scan", func(t *testing.T) { runScan(t, newStore) })
	t.Run("Faults", func(t *testing.T) { runFaults(t, newStore) })
	t.Run("Expiry", func(t *testing.T) {
		t.Run("boundaries", func(t *testing.T) { testBoundaries(t, newStore) })
		t.Run("real time", func(t *testing.T) { testExpiryOnRealTime(t, newStore) })
		t.Run("expired key reserved again", func(t *testing.T) { testExpiredReservedAgain(t, newStore) })
	})
	t.Run("Isolation", func(t *testing.T) { testDistinctSlots(t, newStore) })
	t.Run("BinaryValues", func(t *testing.T) { testBinaryValues(t, newStore) })
	t.Run("LongKey", func(t *testing.T) { testLongKey(t, newStore) })
	t.Run("ArgumentsCopied", func(t *testing.T) { testArgumentsCopied(t, newStore) })
	t.Run("Ping", func(t *testing.T) { testPing(t, newStore) })
	t.Run("Transactions", func(t *testing.T) {
		t.Run("isolation of Exec", func(t *testing.T) { testExecIsolation(t, newStore) })
	})
	t.Run("Submit", func(t *testing.T) { runSubmit(t, newStore) })
	t.Run("Races", func(t *testing.T) {
		t.Run("prepare absent key", func(t *testing.T) { testRacePrepareAbsent(t, newStore) })
		t.Run("prepare distinct keys", func(t *testing.T) { testRacePrepareMany(t, newStore) })
		onRecords := []struct {
			name string
			test func(*testing.T, *env)
		}{
			{"prepare expired key", testRacePrepareExpired},
			{"rollback ifeq", testRaceRollback},
			{"reprepare ifeq", testRaceReprepare},
			{"move one old key to two new keys", testRaceMove},
			{"move versus prepare of the new key", testRaceMoveVersusPrepare},
			{"move versus rollback of the old key", testRaceMoveVersusRollback},
			{"mprepares sharing one key", testRaceMPrepare},
			{"scan versus inserts and deletes", testRaceScan},
		}
		for _, tc := range onRecords {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, newStore, tableRetention)
				if e.h.SkipRaces != "" {
					t.Skip(e.h.SkipRaces)
				}
				tc.test(t, e)
			})
		}
	})
}
