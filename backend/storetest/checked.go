package storetest

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// The helpers the suite's cases share with the cases outside this package
// that run on a Harness (e2e/conformance, through the server): written
// once, here.

// Checked are the per-command calls of a store under test (each one op
// through its Run, backend.Calls) that fail the test on any store error: a
// store error is never an answer.
type Checked struct {
	T     testing.TB
	Ctx   context.Context
	Calls backend.Calls
}

// Checked returns the checked calls of h's store, failing t.
func (h Harness) Checked(t testing.TB) Checked {
	return Checked{T: t, Ctx: t.Context(), Calls: backend.Calls{Runner: h.Store}}
}

// Prepare is PK.PREPARE.
func (c Checked) Prepare(ns, key, value string, exp backend.Expiry) bool {
	c.T.Helper()
	ok, err := c.Calls.Prepare(c.Ctx, ns, []byte(key), []byte(value), exp)
	require.NoError(c.T, err, "Prepare(%q, %q)", ns, key)
	return ok
}

// Get is PK.GET.
func (c Checked) Get(ns, key string) (backend.Record, bool) {
	c.T.Helper()
	rec, ok, err := c.Calls.Get(c.Ctx, ns, []byte(key))
	require.NoError(c.T, err, "Get(%q, %q)", ns, key)
	return rec, ok
}

// Rollback is PK.ROLLBACK.
func (c Checked) Rollback(ns, key string, ifeq backend.Cond) bool {
	c.T.Helper()
	ok, err := c.Calls.Rollback(c.Ctx, ns, []byte(key), ifeq)
	require.NoError(c.T, err, "Rollback(%q, %q)", ns, key)
	return ok
}

// RequireAbsent asserts that key has no record.
func (c Checked) RequireAbsent(ns, key string) {
	c.T.Helper()
	rec, ok := c.Get(ns, key)
	require.False(c.T, ok, "Get(%q, %q) = %q ttlAt %d, want no record", ns, key, rec.Value, rec.TTLAt)
}

// Movable reports whether the store's clock can be moved by the cases.
func (h Harness) Movable() bool { return h.Advance != nil }

// NowMs reads the store's clock.
func (h Harness) NowMs() int64 {
	if h.Now == nil {
		return time.Now().UnixMilli()
	}
	return h.Now().UnixMilli()
}

// Pass moves the store's clock by d, or sleeps d on a real clock.
func (h Harness) Pass(d time.Duration) {
	if h.Advance != nil {
		h.Advance(d)
		return
	}
	time.Sleep(d)
}

// KeepTextKeys leaves out of keys those the store cannot take
// (Harness.TextKeys), saying so in t's log.
func (h Harness) KeepTextKeys(t testing.TB, keys []string) []string {
	if h.TextKeys == "" {
		return keys
	}
	var kept []string
	for _, k := range keys {
		if utf8.ValidString(k) {
			kept = append(kept, k)
		} else {
			t.Logf("key %q left out: %s", k, h.TextKeys)
		}
	}
	return kept
}

// Scanned is one record as a scan returned it: its value and its ttlAt,
// -1 for a record that never expires.
type Scanned struct {
	Value string
	TTLAt int64
}

// RequireScanned checks a scan's records, by key, against want. On a real
// clock an expired record may outlive its retention while a long test
// scans, and go: it may then be missing, but nothing else may.
func RequireScanned(t testing.TB, h Harness, want, got map[string]Scanned, msgAndArgs ...any) {
	t.Helper()
	if h.Movable() {
		require.Equal(t, want, got, msgAndArgs...)
		return
	}
	for k, s := range got {
		require.Contains(t, want, k, msgAndArgs...)
		require.Equal(t, want[k], s, msgAndArgs...)
	}
	now := h.NowMs()
	for k, s := range want {
		if s.TTLAt == -1 || s.TTLAt > now {
			require.Contains(t, got, k, msgAndArgs...)
		}
	}
}
