package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// The scan cases here are the store's own: Scan, page after page from the
// start, returns every record of the namespace (live, or expired but
// retained) with its value and ttlAt, and nothing of another namespace, at
// every count. PK.SCAN's cursors, MATCH and LIVE/EXPIRED are the server's
// (commands.Handler, over what the store returns): e2e/conformance runs
// them on every backend.

// scanAll runs a whole scan of namespace name, count records a page,
// and returns every record returned and the number of calls.
func (e *env) scanAll(name string, count int) (map[string]Scanned, int) {
	e.t.Helper()
	got := map[string]Scanned{}
	var pos []byte
	for calls := 1; ; calls++ {
		require.Less(e.t, calls, 100000, "scan does not end")
		page, err := e.h.Store.Scan(e.ctx, name, pos, count)
		require.NoError(e.t, err, "Scan %s from %q", name, pos)
		for _, rec := range page.Records {
			ttl := rec.TTLAt
			if ttl == backend.Forever {
				ttl = -1
			}
			got[string(rec.Key)] = Scanned{string(rec.Value), ttl}
		}
		if page.Done {
			require.Empty(e.t, page.Next, "a done page has no next position")
			return got, calls
		}
		require.NotEmpty(e.t, page.Next, "a page that is not done has a next position")
		pos = page.Next
	}
}

// scanKeys are binary keys with glob metacharacters, CR LF, NUL and
// bytes above 0x7f, and the escapes of the Redis key layout.
var scanKeys = []string{
	"alice", "bob", "a*b", "a?b", "a[b]c", `a\b`, "[", "]", "*", "?", `\`,
	"\x00", "\x00\x00", "\r\n", "\xff\xfe", "%", "%25", "}", "{x}", "é", "a b",
	"k:1", "k:2", "k:10",
}

func runScan(t *testing.T, newStore NewStore) {
	t.Run("every record, every COUNT", func(t *testing.T) { testScanAll(t, newStore) })
	t.Run("positions", func(t *testing.T) { testScanPositions(t, newStore) })
	t.Run("empty namespace", func(t *testing.T) {
		e := newEnv(t, newStore, tableRetention)
		require.True(t, e.prepare("other", "k", "v", forever))
		got, _ := e.scanAll(ns, backend.DefaultScanCount)
		require.Empty(t, got)
	})
}

// seedScan reserves scanKeys in ns (live forever, live with a TTL, and
// expired but retained, in turn), records in other namespaces whose names
// extend ns, and one lapsed record; it returns what a scan of ns must
// return.
func seedScan(e *env) map[string]Scanned {
	require.True(e.t, e.prepare(ns, "lapsed", "gone", e.after(e.plan.ttl)))
	e.advance(tableRetention + e.plan.expire)
	want := map[string]Scanned{}
	var expiring []string
	for i, k := range e.textKeys(scanKeys) {
		v := "v\x00" + k
		switch i % 3 {
		case 0:
			require.True(e.t, e.prepare(ns, k, v, forever))
			want[k] = Scanned{v, -1}
		case 1:
			require.True(e.t, e.prepare(ns, k, v, e.at(time.Hour)))
			want[k] = Scanned{v, e.want.at}
		case 2:
			require.True(e.t, e.prepare(ns, k, v, e.after(e.plan.ttl)))
			expiring = append(expiring, k)
		}
	}
	for _, other := range []string{"n", "ns2", "ns.x", "NS", "n_s"} {
		require.True(e.t, e.prepare(other, "alice", "not "+ns, forever))
	}
	e.advance(e.plan.expire)
	for _, k := range expiring {
		rec, ok := e.get(ns, k)
		require.True(e.t, ok)
		require.False(e.t, rec.Live)
		want[k] = Scanned{string(rec.Value), rec.TTLAt}
	}
	return want
}

func testScanAll(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	want := seedScan(e)
	for _, count := range []int{1, 2, 7, backend.DefaultScanCount, backend.MaxScanCount} {
		got, _ := e.scanAll(ns, count)
		e.requireScanned(want, got, "count %d", count)
	}
}

// testScanPositions: a position is a place in the namespace, not iterator
// state: the same position twice gives the same records (here everything
// after it; in another order maybe, as Redis's SCAN while its table
// rehashes), and a position the store handed out for one namespace reads
// that namespace only.
func testScanPositions(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	for i := range 30 {
		require.True(t, e.prepare(ns, fmt.Sprintf("k%02d", i), "v", forever))
		require.True(t, e.prepare("ns2", fmt.Sprintf("k%02d", i), "w", forever))
	}
	page, err := e.h.Store.Scan(e.ctx, ns, nil, 5)
	require.NoError(t, err)
	if page.Done {
		t.Skip("the store answered 30 records in one page of count 5 (miniredis ignores COUNT)")
	}
	rest := func() map[string]bool {
		keys := map[string]bool{}
		pos := page.Next
		for calls := 0; ; calls++ {
			require.Less(t, calls, 1000, "scan does not end")
			p, err := e.h.Store.Scan(e.ctx, ns, pos, backend.MaxScanCount)
			require.NoError(t, err)
			for _, r := range p.Records {
				require.Equal(t, "v", string(r.Value), "key %q is of namespace %s", r.Key, ns)
				keys[string(r.Key)] = true
			}
			if p.Done {
				return keys
			}
			pos = p.Next
		}
	}
	first := rest()
	require.Equal(t, first, rest())
	for _, r := range page.Records {
		first[string(r.Key)] = true
	}
	require.Len(t, first, 30, "the first page and the rest hold every key")
}

// requireScanned checks a scan's records against want (RequireScanned).
func (e *env) requireScanned(want, got map[string]Scanned, msgAndArgs ...any) {
	e.t.Helper()
	RequireScanned(e.t, e.h, want, got, msgAndArgs...)
}

// testRaceScan: scans, page after page, while other goroutines insert and
// delete records around the stable ones: every stable record (present for
// the whole scan) is returned, with its value.
func testRaceScan(t *testing.T, e *env) {
	const stable = 200
	want := map[string]Scanned{}
	for i := range stable {
		k := fmt.Sprintf("k%04d", 2*i)
		require.True(t, e.prepare(ns, k, "stable", forever))
		want[k] = Scanned{"stable", -1}
	}
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
		ops  atomic.Int64
		errs = make(chan error, 4)
	)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				// Keys between and around the stable ones.
				k := []byte(fmt.Sprintf("k%04d", (2*(i*7+w*101)+1)%(2*stable+20)))
				if _, err := e.calls.Prepare(e.ctx, ns, k, []byte("churn"), backend.Expiry{}); err != nil {
					errs <- err
					return
				}
				if _, err := e.calls.Rollback(e.ctx, ns, k, backend.IfEq([]byte("churn"))); err != nil {
					errs <- err
					return
				}
				ops.Add(1)
			}
		})
	}
	// The scans go on until the churn has run while they did: a scan of
	// memory: takes microseconds, and on a busy machine all three could
	// end before the writers were first scheduled (7 runs of 40 once).
	before := ops.Load()
	for round := 0; ; round++ {
		for _, count := range []int{1, 3, 17} {
			got, _ := e.scanAll(ns, count)
			for k, s := range want {
				require.Equal(t, s, got[k], "COUNT %d: stable record %q", count, k)
			}
			for k, s := range got {
				if _, ok := want[k]; !ok {
					require.Equal(t, "churn", s.Value, "key %q", k)
				}
			}
		}
		if ops.Load() > before {
			break
		}
		require.Less(t, round, 1000, "no insert or delete ran during the scans")
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}
