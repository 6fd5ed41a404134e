package conformance

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
	"github.com/prepkey/prepkey/commands"
)

// The scan cases run PK.SCAN through commands.Handler, the way clients
// reach it: MATCH, LIVE/EXPIRED and the cursors are the Handler's, over
// what each store returns (backend/storetest tests the store's Scan
// itself, and its races).

func (e *env) handler() *commands.Handler {
	return commands.New(e.h.Store, commands.DefaultLimits, e.h.Now)
}

func (e *env) do(h *commands.Handler, args ...string) commands.Reply {
	e.t.Helper()
	raw := make([][]byte, len(args))
	for i, a := range args {
		raw[i] = []byte(a)
	}
	r, ok := h.Do(e.ctx, raw)
	require.True(e.t, ok, "%s is not a PK command", args[0])
	return r
}

// scanned is one record as PK.SCAN returned it.
type scanned = storetest.Scanned

// scanAll runs a whole iteration and returns every record returned (a
// record returned twice must be the same both times, unless allowChange)
// and the number of calls.
func (e *env) scanAll(h *commands.Handler, name string, opts ...string) (map[string]scanned, int) {
	e.t.Helper()
	got := map[string]scanned{}
	cursor := "0"
	for calls := 1; ; calls++ {
		require.Less(e.t, calls, 100000, "scan does not end")
		r := e.do(h, append([]string{"PK.SCAN", name, cursor}, opts...)...)
		require.Equal(e.t, commands.ScanPage, r.Kind, "PK.SCAN %s %s: %s", name, cursor, r.Text)
		for _, rec := range r.Records {
			ttl := rec.TTLAt
			if ttl == backend.Forever {
				ttl = -1
			}
			got[string(rec.Key)] = scanned{Value: string(rec.Value), TTLAt: ttl}
		}
		cursor = string(r.Bytes)
		if cursor == "0" {
			return got, calls
		}
	}
}

// scanKeys are binary keys with glob metacharacters, CR LF, NUL and
// bytes above 0x7f, and the escapes of the Redis key layout.
var scanKeys = []string{
	"alice", "bob", "a*b", "a?b", "a[b]c", `a\b`, "[", "]", "*", "?", `\`,
	"\x00", "\x00\x00", "\r\n", "\xff\xfe", "%", "%25", "}", "{x}", "é", "a b",
	"k:1", "k:2", "k:10",
}

func runScan(t *testing.T, newStore storetest.NewStore) {
	t.Run("every record, every COUNT", func(t *testing.T) { testScanAll(t, newStore) })
	t.Run("MATCH on binary keys", func(t *testing.T) { testScanMatch(t, newStore) })
	t.Run("LIVE and EXPIRED", func(t *testing.T) { testScanLiveExpired(t, newStore) })
	t.Run("cursors", func(t *testing.T) { testScanCursors(t, newStore) })
	t.Run("empty namespace", func(t *testing.T) {
		e := newEnv(t, newStore)
		require.True(t, e.prepare(e.name("other"), "k", "v", forever))
		got, _ := e.scanAll(e.handler(), e.ns)
		require.Empty(t, got)
	})
}

// seedScan reserves scanKeys in ns (live forever, live with a TTL, and
// expired but retained, in turn), records in other namespaces whose names
// extend e.ns, and one lapsed record; it returns what a scan of ns must
// return.
func seedScan(e *env) map[string]scanned {
	require.True(e.t, e.prepare(e.ns, "lapsed", "gone", e.after(e.ttl)))
	e.advance(retention + e.expire)
	want := map[string]scanned{}
	var expiring []string
	for i, k := range e.textKeys(scanKeys) {
		v := "v\x00" + k
		switch i % 3 {
		case 0:
			require.True(e.t, e.prepare(e.ns, k, v, forever))
			want[k] = scanned{Value: v, TTLAt: -1}
		case 1:
			require.True(e.t, e.prepare(e.ns, k, v, e.at(time.Hour)))
			want[k] = scanned{Value: v, TTLAt: e.wantAt}
		case 2:
			require.True(e.t, e.prepare(e.ns, k, v, e.after(e.ttl)))
			expiring = append(expiring, k)
		}
	}
	for _, other := range []string{"n", "ns2", "ns.x", "NS", "n_s"} {
		require.True(e.t, e.prepare(e.name(other), "alice", "not "+e.ns, forever))
	}
	e.advance(e.expire)
	for _, k := range expiring {
		rec, ok := e.get(e.ns, k)
		require.True(e.t, ok)
		require.False(e.t, rec.Live)
		want[k] = scanned{Value: string(rec.Value), TTLAt: rec.TTLAt}
	}
	return want
}

func testScanAll(t *testing.T, newStore storetest.NewStore) {
	e := newEnv(t, newStore)
	want := seedScan(e)
	h := e.handler()
	for _, count := range []int{1, 2, 7, 1000} {
		got, _ := e.scanAll(h, e.ns, "COUNT", strconv.Itoa(count))
		e.requireScanned(want, got, "COUNT %d", count)
	}
	got, _ := e.scanAll(h, e.ns)
	e.requireScanned(want, got, "default COUNT")
}

// requireScanned checks a scan's records against want (storetest's).
func (e *env) requireScanned(want, got map[string]scanned, msgAndArgs ...any) {
	e.t.Helper()
	storetest.RequireScanned(e.t, e.h, want, got, msgAndArgs...)
}

func testScanMatch(t *testing.T, newStore storetest.NewStore) {
	e := newEnv(t, newStore)
	want := seedScan(e)
	h := e.handler()
	for _, tc := range []struct {
		pattern string
		keys    []string
	}{
		{`a\*b`, []string{"a*b"}},
		{`a?b`, []string{"a*b", "a?b", "a b", `a\b`}},
		{`a\?b`, []string{"a?b"}},
		{`\[`, []string{"["}},
		{`[\[\]]`, []string{"[", "]"}},
		{`\\`, []string{`\`}},
		{`\*`, []string{"*"}},
		{"\x00*", []string{"\x00", "\x00\x00"}},
		{"\r\n", []string{"\r\n"}},
		{"\xff?", []string{"\xff\xfe"}},
		{"%*", []string{"%", "%25"}},
		{"}", []string{"}"}},
		{"k:?", []string{"k:1", "k:2"}},
		{"k:[0-9]*", []string{"k:1", "k:2", "k:10"}},
		{"nothing*", nil},
		// Issue 23's abusive shapes: a class of 4000 bytes, many '*', a
		// run long enough that a page reads fewer records than COUNT.
		{"*[" + strings.Repeat("0", 4000) + "12]", []string{"k:1", "k:2", "k:10"}},
		{strings.Repeat("*[ak]", 300) + "*", nil},
		{"*:" + strings.Repeat("*", 3000) + "[0-9]", []string{"k:1", "k:2", "k:10"}},
		{"*" + strings.Repeat("[a-z:]", 200) + "*", nil},
	} {
		if len(e.textKeys([]string{tc.pattern})) == 0 {
			continue
		}
		for _, count := range []string{"1", "1000"} {
			got, _ := e.scanAll(h, e.ns, "MATCH", tc.pattern, "COUNT", count)
			wantHere := map[string]scanned{}
			for _, k := range tc.keys {
				wantHere[k] = want[k]
			}
			e.requireScanned(wantHere, got, "MATCH %q COUNT %s", tc.pattern, count)
		}
	}
}

func testScanLiveExpired(t *testing.T, newStore storetest.NewStore) {
	e := newEnv(t, newStore)
	want := seedScan(e)
	h := e.handler()
	live, expired := map[string]scanned{}, map[string]scanned{}
	for k, s := range want {
		if s.TTLAt == -1 || s.TTLAt > e.nowMs() {
			live[k] = s
		} else {
			expired[k] = s
		}
	}
	require.NotEmpty(t, live)
	require.NotEmpty(t, expired)
	// EXPIRED first, with large pages: on a real clock the expired records
	// lapse (tableRetention) while a slow scan runs.
	got, _ := e.scanAll(h, e.ns, "expired", "COUNT", "1000")
	e.requireScanned(expired, got, "EXPIRED")
	require.NotEmpty(t, got, "EXPIRED")
	got, _ = e.scanAll(h, e.ns, "EXPIRED", "COUNT", "2")
	e.requireScanned(expired, got, "EXPIRED COUNT 2")
	got, _ = e.scanAll(h, e.ns, "LIVE", "COUNT", "2")
	require.Equal(t, live, got)
	got, _ = e.scanAll(h, e.ns, "COUNT", "1000", "MATCH", "a*", "EXPIRED")
	for k := range got {
		require.Contains(t, expired, k)
		require.Equal(t, byte('a'), k[0])
	}
}

func testScanCursors(t *testing.T, newStore storetest.NewStore) {
	e := newEnv(t, newStore)
	for i := range 30 {
		require.True(t, e.prepare(e.ns, fmt.Sprintf("k%02d", i), "v", forever))
		require.True(t, e.prepare(e.name("ns2"), fmt.Sprintf("k%02d", i), "w", forever))
	}
	h := e.handler()
	r := e.do(h, "PK.SCAN", e.ns, "0", "COUNT", "5")
	require.Equal(t, commands.ScanPage, r.Kind, r.Text)
	cursor := string(r.Bytes)
	if cursor == "0" {
		t.Skip("the store answered 30 records in one page of COUNT 5 (miniredis ignores COUNT)")
	}

	invalid := []string{
		"1", "-1", "abc", "", "00", cursor + "A", cursor[:len(cursor)-1],
		flip(cursor, 2), flip(cursor, len(cursor)/2), flip(cursor, len(cursor)-2),
		// Version 2: a cursor starts with version byte 1, so its second
		// character is one of Q-f; "Ag" is byte 2 whatever follows. (This
		// case was "AQ" + cursor[2:], which is the cursor itself whenever
		// its position's first four bits are zero: a flaky failure.)
		"Ag" + cursor[2:],
	}
	for _, c := range invalid {
		require.NotEqual(t, cursor, c, "an invalid cursor must differ from the good one")
		r := e.do(h, "PK.SCAN", e.ns, c)
		require.Equal(t, commands.Reply{Kind: commands.Error, Err: commands.ErrInvalidCursor, Text: "ERR invalid cursor"}, r, "cursor %q", c)
	}
	// A cursor handed out for ns is not good for another namespace.
	r = e.do(h, "PK.SCAN", e.name("ns2"), cursor)
	require.Equal(t, commands.Reply{Kind: commands.Error, Err: commands.ErrInvalidCursor, Text: "ERR invalid cursor"}, r)

	// A cursor is the store's, not the Handler's: another Handler (as
	// after a restart of the sidecar) takes it and goes on.
	r = e.do(e.handler(), "PK.SCAN", e.ns, cursor, "COUNT", "1000")
	require.Equal(t, commands.ScanPage, r.Kind, r.Text)
	for _, rec := range r.Records {
		require.Equal(t, "v", string(rec.Value))
	}
	// The same cursor again gives the same records (cursors are
	// positions, not iterator state), here everything left; in another
	// order maybe (Redis's SCAN while its table rehashes).
	again := e.do(h, "PK.SCAN", e.ns, cursor, "COUNT", "1000")
	keys := func(recs []backend.ScanRecord) map[string]bool {
		m := map[string]bool{}
		for _, r := range recs {
			m[string(r.Key)] = true
		}
		return m
	}
	require.Equal(t, keys(r.Records), keys(again.Records))
}

// flip changes one character of a cursor to another of base64url's.
func flip(c string, i int) string {
	b := []byte(c)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
