package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// testBoundaries walks one record through its life a millisecond at a time
// around each boundary: live before ttlAt, expired from ttlAt, gone from
// ttlAt+retention. Only a movable clock can hit a millisecond.
func testBoundaries(t *testing.T, newStore NewStore) {
	for _, retention := range []time.Duration{0, time.Millisecond, time.Hour} {
		t.Run("retention "+retention.String(), func(t *testing.T) {
			e := newEnv(t, newStore, retention)
			if !e.movable() {
				t.Skip("the store's clock cannot be moved to a millisecond")
			}
			const ttl = 5 * time.Second
			require.True(t, e.prepare(ns, "k", "v", e.after(ttl)))
			want := e.want

			e.advance(ttl - time.Millisecond)
			e.requireRecord(ns, "k", "v", want, true)
			require.False(t, e.prepare(ns, "k", "w", forever), "PREPARE a millisecond before ttlAt")

			e.advance(time.Millisecond)
			if retention > 0 {
				e.requireRecord(ns, "k", "v", want, false)
				e.advance(retention - time.Millisecond)
				e.requireRecord(ns, "k", "v", want, false)
				e.advance(time.Millisecond)
			}
			e.requireAbsent(ns, "k")
		})
	}
}

// testExpiryOnRealTime is testBoundaries with margins instead of
// milliseconds, for stores whose clock cannot be moved (Redis, MongoDB).
func testExpiryOnRealTime(t *testing.T, newStore NewStore) {
	for _, retention := range []time.Duration{0, 600 * time.Millisecond} {
		t.Run("retention "+retention.String(), func(t *testing.T) {
			e := newEnv(t, newStore, retention)
			if e.movable() {
				t.Skip("covered to the millisecond by boundaries")
			}
			require.True(t, e.prepare(ns, "k", "v", e.after(300*time.Millisecond)))
			want := e.want
			e.requireRecord(ns, "k", "v", want, true)

			e.advance(500 * time.Millisecond)
			if retention > 0 {
				e.requireRecord(ns, "k", "v", want, false)
				e.advance(retention)
			}
			e.requireAbsent(ns, "k")
		})
	}
}

// testExpiredReservedAgain checks that a key whose record expired can be
// reserved, changed and released again like a new one, and that the new
// record then expires by its own ttlAt.
func testExpiredReservedAgain(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	require.True(t, e.prepare(ns, "k", "v1", e.after(e.plan.ttl)))
	e.advance(e.plan.expire)
	require.True(t, e.prepare(ns, "k", "v2", e.after(e.plan.ttl)))
	want := e.want
	require.True(t, e.reprepare(ns, "k", "v3", ifeq("v2"), keepTTL))
	e.requireRecord(ns, "k", "v3", want, true)
	e.advance(e.plan.expire)
	e.requireRecord(ns, "k", "v3", want, false)
	require.False(t, e.reprepare(ns, "k", "v4", always, forever))
	require.True(t, e.prepare(ns, "k", "v4", forever))
	e.requireRecord(ns, "k", "v4", ttlWant{at: backend.Forever}, true)
}
