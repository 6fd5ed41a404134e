package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// ns is the namespace of every case that does not test namespaces.
const ns = "ns"

// tableRetention is the store's retention in the contract tables: long
// enough that on real time an expired seed is still retained while the case
// runs, short enough that letting a seed lapse past it stays fast. The store
// is built before the suite knows whether its clock is movable, so both use
// it.
const tableRetention = 1500 * time.Millisecond

// clockPlan holds the durations a suite run uses. A store with a movable
// clock is tested right at the boundaries (a record stops being live at
// ttlAt exactly); a store on real time gets short durations with margins, so
// that a run against a real server stays fast.
type clockPlan struct {
	// ttl is the TTL of a seeded record that the case then lets expire.
	ttl time.Duration
	// expire is how far the clock moves after seeding to expire it.
	expire time.Duration
	// tolerance is how far a ttlAt may be from the one expected, for
	// EX/PX: zero on a movable clock, where it is exact.
	tolerance time.Duration
}

func planFor(movable bool) clockPlan {
	if movable {
		return clockPlan{
			ttl:    10 * time.Second,
			expire: 10 * time.Second,
		}
	}
	return clockPlan{
		ttl:       100 * time.Millisecond,
		expire:    300 * time.Millisecond,
		tolerance: time.Second,
	}
}

// env is one fresh store under test with helpers that fail the test on any
// store error: a store error is never an answer.
type env struct {
	t *testing.T
	h Harness
	// calls are the store's per-command calls, each one op through its
	// Run, as the sidecar runs a command alone.
	calls backend.Calls
	ctx   context.Context
	plan  clockPlan

	// want is the ttlAt that the last expiry built by after or at should
	// give; Forever until one is built.
	want ttlWant
}

// ttlWant is an expected ttlAt. An EX/PX ttlAt is exact only on a movable
// clock; an EXAT/PXAT one, computed by the suite, always is.
type ttlWant struct {
	at    int64
	exact bool
}

// suiteReadBound is the stores' read bound in the suite.
const suiteReadBound = 1 << 20

func newEnv(t *testing.T, newStore NewStore, retention time.Duration) *env {
	t.Helper()
	// The suite writes values past --max-value-bytes' default (64 KiB and
	// a byte: the command layer bounds writes, stores do not), and reads
	// them back: the shared stores' read bound (MaxValueBytes) is set
	// above them.
	h := newStore(t, backend.Options{Retention: retention, MaxValueBytes: suiteReadBound})
	require.NotNil(t, h.Store, "NewStore returned no store")
	if h.Values != nil {
		h.Store = wrapValues(h.Store, h.Values)
	}
	return &env{t: t, h: h, calls: backend.Calls{Runner: h.Store}, ctx: t.Context(), plan: planFor(h.Advance != nil)}
}

// textKeys leaves out of keys those the store cannot take
// (Harness.TextKeys), saying so in the test's log.
func (e *env) textKeys(keys []string) []string { return e.h.KeepTextKeys(e.t, keys) }

// highByte is a byte above 0x7f for a key, or, where keys are text
// (Harness.TextKeys), a character above U+007F.
func (e *env) highByte() string {
	if e.h.TextKeys == "" {
		return "\xff"
	}
	return "\u00ff"
}

// movable reports whether the store's clock can be moved by the suite.
func (e *env) movable() bool { return e.h.Movable() }

// nowMs reads the store's clock.
func (e *env) nowMs() int64 { return e.h.NowMs() }

// advance moves the store's clock by d, or sleeps d on a real clock.
func (e *env) advance(d time.Duration) { e.h.Pass(d) }

// after is the TTL option EX/PX d; it sets e.want to the ttlAt it should
// give.
func (e *env) after(d time.Duration) backend.Expiry {
	e.want = ttlWant{at: e.nowMs() + d.Milliseconds()}
	return backend.Expiry{Kind: backend.ExpireAfter, Millis: d.Milliseconds()}
}

// at is the TTL option EXAT/PXAT d from now on the store's clock; it sets
// e.want to the ttlAt it should give.
func (e *env) at(d time.Duration) backend.Expiry {
	e.want = ttlWant{at: e.nowMs() + d.Milliseconds(), exact: true}
	return backend.Expiry{Kind: backend.ExpireAt, Millis: e.want.at}
}

var (
	forever = backend.Expiry{}
	keepTTL = backend.Expiry{Kind: backend.KeepTTL}
)

func (e *env) checked() Checked { return Checked{T: e.t, Ctx: e.ctx, Calls: e.calls} }

func (e *env) prepare(ns, key, value string, exp backend.Expiry) bool {
	e.t.Helper()
	return e.checked().Prepare(ns, key, value, exp)
}

func (e *env) get(ns, key string) (backend.Record, bool) {
	e.t.Helper()
	return e.checked().Get(ns, key)
}

func (e *env) rollback(ns, key string, ifeq backend.Cond) bool {
	e.t.Helper()
	return e.checked().Rollback(ns, key, ifeq)
}

func (e *env) reprepare(ns, key, value string, ifeq backend.Cond, exp backend.Expiry) bool {
	e.t.Helper()
	ok, err := e.calls.Reprepare(e.ctx, ns, []byte(key), []byte(value), ifeq, exp)
	require.NoError(e.t, err, "Reprepare(%q, %q)", ns, key)
	return ok
}

func (e *env) move(ns, newKey, newValue, oldKey, oldValue string, exp backend.Expiry) backend.MoveResult {
	e.t.Helper()
	res, err := e.calls.Move(e.ctx, ns, []byte(newKey), []byte(newValue), []byte(oldKey), []byte(oldValue), exp)
	require.NoError(e.t, err, "Move(%q, %q from %q)", ns, newKey, oldKey)
	return res
}

// requireRecord asserts that key holds value, live or not, with the ttlAt
// wanted, and returns the record.
func (e *env) requireRecord(ns, key, value string, ttlAt ttlWant, live bool) backend.Record {
	e.t.Helper()
	rec, ok := e.get(ns, key)
	require.True(e.t, ok, "Get(%q, %q): no record, want %q", ns, key, value)
	require.Equal(e.t, []byte(value), rec.Value, "Get(%q, %q) value", ns, key)
	require.Equal(e.t, live, rec.Live, "Get(%q, %q) live", ns, key)
	e.requireTTLAt(ttlAt, rec.TTLAt, "Get(%q, %q) ttlAt", ns, key)
	return rec
}

// requireAbsent asserts that key has no record.
func (e *env) requireAbsent(ns, key string) {
	e.t.Helper()
	e.checked().RequireAbsent(ns, key)
}

// requireTTLAt compares ttlAts: exactly when the clock is movable or the
// ttlAt came from an absolute time, within the plan's tolerance otherwise.
func (e *env) requireTTLAt(want ttlWant, got int64, msgAndArgs ...any) {
	e.t.Helper()
	if want.exact || want.at == backend.Forever || got == backend.Forever || e.plan.tolerance == 0 {
		require.Equal(e.t, want.at, got, msgAndArgs...)
		return
	}
	require.InDelta(e.t, want.at, got, float64(e.plan.tolerance.Milliseconds()), msgAndArgs...)
}
