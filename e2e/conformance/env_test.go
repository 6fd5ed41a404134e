package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// The helpers of the server-level cases: one fresh store of a backend's
// harness, with calls that fail the test on any store error
// (storetest.Checked) and the clock and keys helpers of backend/storetest
// (Harness.Movable, NowMs, Pass, KeepTextKeys), plus what the cases here
// need of their own (a namespace of the env's own, isolated blocks).

// retention is the stores' retention: long enough that on real time an
// expired seed is still retained while a case runs (storetest's
// tableRetention).
const retention = 1500 * time.Millisecond

// env is one fresh store under test.
type env struct {
	t   *testing.T
	h   storetest.Harness
	ctx context.Context
	// checked are the store's calls that fail the test on a store error.
	checked storetest.Checked
	// ns is the namespace of every case, and prefix the head of every
	// namespace the case uses: a head of the env's own, so that on a
	// server shared with other tests (layout=wow, whose Redis keys have no
	// prefix a test could own) no two envs see each other's records.
	ns, prefix string
	// ttl is the TTL of a seeded record that a case then lets expire, and
	// expire how far the clock moves to expire it: at the boundary on a
	// movable clock, with margins on real time (storetest's clock plan).
	ttl, expire time.Duration
	// wantAt is the ttlAt the last expiry built by at gives.
	wantAt int64
}

func newEnv(t *testing.T, newStore storetest.NewStore) *env {
	t.Helper()
	h := storetest.Open(t, newStore, retention)
	prefix := fmt.Sprintf("t%x_", time.Now().UnixNano())
	e := &env{t: t, h: h, ctx: t.Context(), checked: h.Checked(t), ns: prefix + "ns", prefix: prefix,
		ttl: 100 * time.Millisecond, expire: 300 * time.Millisecond}
	if e.movable() {
		e.ttl, e.expire = 10*time.Second, 10*time.Second
	}
	return e
}

// name is namespace n of this env (its head, then n).
func (e *env) name(n string) string { return e.prefix + n }

// movable reports whether the store's clock can be moved by the case.
func (e *env) movable() bool { return e.h.Movable() }

// nowMs reads the store's clock.
func (e *env) nowMs() int64 { return e.h.NowMs() }

// advance moves the store's clock by d, or sleeps d on a real clock.
func (e *env) advance(d time.Duration) { e.h.Pass(d) }

// after is the TTL option EX/PX d.
func (e *env) after(d time.Duration) backend.Expiry {
	return backend.Expiry{Kind: backend.ExpireAfter, Millis: d.Milliseconds()}
}

// at is the TTL option EXAT/PXAT d from now on the store's clock; it sets
// e.wantAt to the ttlAt it gives.
func (e *env) at(d time.Duration) backend.Expiry {
	e.wantAt = e.nowMs() + d.Milliseconds()
	return backend.Expiry{Kind: backend.ExpireAt, Millis: e.wantAt}
}

var (
	forever = backend.Expiry{}
	always  = backend.Cond{}
)

func (e *env) prepare(ns, key, value string, exp backend.Expiry) bool {
	e.t.Helper()
	return e.checked.Prepare(ns, key, value, exp)
}

func (e *env) get(ns, key string) (backend.Record, bool) {
	e.t.Helper()
	return e.checked.Get(ns, key)
}

func (e *env) rollback(ns, key string, ifeq backend.Cond) bool {
	e.t.Helper()
	return e.checked.Rollback(ns, key, ifeq)
}

// requireLive asserts that key holds value, live, forever.
func (e *env) requireLive(ns, key, value string) {
	e.t.Helper()
	rec, ok := e.get(ns, key)
	require.True(e.t, ok, "Get(%q, %q): no record, want %q", ns, key, value)
	require.Equal(e.t, []byte(value), rec.Value, "Get(%q, %q) value", ns, key)
	require.True(e.t, rec.Live, "Get(%q, %q) live", ns, key)
	require.Equal(e.t, backend.Forever, rec.TTLAt, "Get(%q, %q) ttlAt", ns, key)
}

// requireAbsent asserts that key has no record.
func (e *env) requireAbsent(ns, key string) {
	e.t.Helper()
	e.checked.RequireAbsent(ns, key)
}

// textKeys leaves out of keys those the store cannot take
// (Harness.TextKeys), saying so in the test's log.
func (e *env) textKeys(keys []string) []string { return e.h.KeepTextKeys(e.t, keys) }

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
	return e.h.Isolates(e.ns, bs)
}

// blockKeys are the two keys of the isolation races: "a" and "b" when
// the store isolates a block on them, else two keys it does (on a Cluster,
// two of one slot: one key in 16,384 shares key0's, so a million keys hold
// one all but surely), else "a" and "b" again (the store isolates no
// block, and the race is skipped).
func (e *env) blockKeys() (string, string) {
	if e.isolates([]string{"a", "b"}) {
		return "a", "b"
	}
	for i := 1; i < 1<<20; i++ {
		if k := fmt.Sprintf("key%d", i); e.isolates([]string{"key0", k}) {
			return "key0", k
		}
	}
	return "a", "b"
}
