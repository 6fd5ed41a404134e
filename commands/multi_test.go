package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

func TestParseMPrepare(t *testing.T) {
	syntax := e("ERR syntax error")
	mp := func(ns, key, value string, exp backend.Expiry) call {
		return call{op: "mprepare", ns: ns, key: key, value: value, exp: exp}
	}
	triples := func(n int) []string {
		out := []string{"PK.MPREPARE", fmt.Sprint(n)}
		for i := range n {
			out = append(out, "ns", fmt.Sprintf("k%d", i), "v")
		}
		return out
	}
	tests := []struct {
		args  []string
		want  Reply
		calls []call // nil: the store must not be called
	}{
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v"}, one, []call{mp("ns", "k", "v", backend.Expiry{})}},
		{[]string{"pk.mprepare", "2", "user", "alice", "42", "email", "a@x", "42", "ex", "60"}, one,
			[]call{mp("user", "alice", "42", after(60000)), mp("email", "a@x", "42", after(60000))}},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "NS", "k", "", "PXAT", "1767225600001"}, one,
			[]call{mp("ns", "k", "v", at(nowMs+1)), mp("NS", "k", "", at(nowMs+1))}},
		{triples(64), one, nil}, // checked below: 64 calls
		// arity and syntax
		{[]string{"PK.MPREPARE", "1", "ns", "k"}, e("ERR wrong number of arguments for 'pk.mprepare' command"), nil},
		{[]string{"PK.MPREPARE"}, e("ERR wrong number of arguments for 'pk.mprepare' command"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "0", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "-1", "ns", "k", "v"}, syntax, nil},
		{triples(65), syntax, nil},
		{[]string{"PK.MPREPARE", "01", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "+1", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", " 1", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1.0", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "one", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "99999999999999999999", "ns", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "ns2"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "ns2", "k", "v"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "EX"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "EX", "1", "PX", "1"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "KEEPTTL"}, syntax, nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "IFEQ", "v"}, syntax, nil},
		// each triple as PK.PREPARE, then duplicates, then the TTL
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "bad ns", "k", "v"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "ns", "", "v"}, e("ERR key is empty (keys are 1 to max-key-bytes (8) bytes)"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "123456789", "v", "ns", "k", "v"}, e("ERR key is larger than max-key-bytes (8)"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "ns", "j", "12345678901234567"}, e("ERR value is larger than max-value-bytes (16)"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "ns", "k", "w"}, e("ERR duplicate key in 'pk.mprepare'"), nil},
		{[]string{"PK.MPREPARE", "3", "a", "k", "v", "b", "k", "v", "a", "k", "x"}, e("ERR duplicate key in 'pk.mprepare'"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k", "v", "ns", "k", "w", "EX", "0"}, e("ERR duplicate key in 'pk.mprepare'"), nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "EX", "0"}, e("ERR invalid expire time in 'pk.mprepare' command"), nil},
		{[]string{"PK.MPREPARE", "1", "ns", "k", "v", "PXAT", "1767225600000"}, e("ERR invalid expire time in 'pk.mprepare' command"), nil},
		{[]string{"PK.MPREPARE", "2", "ns", "k\x00", "v", "ns", "k", "v"}, one, []call{mp("ns", "k\x00", "v", backend.Expiry{}), mp("ns", "k", "v", backend.Expiry{})}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			st := &fakeStore{ok: true}
			require.Equal(t, tt.want, do(t, st, tt.args...))
			switch {
			case tt.want.Kind != Int || tt.want.Int != 1:
				require.Empty(t, st.calls)
			case tt.calls == nil:
				require.Len(t, st.calls, 64)
			default:
				require.Equal(t, tt.calls, st.calls)
			}
		})
	}
}

func TestMPrepareReplies(t *testing.T) {
	require.Equal(t, zero, do(t, &fakeStore{}, "PK.MPREPARE", "1", "ns", "k", "v"))
	require.Equal(t, e("UNAVAILABLE down"), do(t, &fakeStore{err: fmt.Errorf("down")}, "PK.MPREPARE", "1", "ns", "k", "v"))
}

func TestParseScan(t *testing.T) {
	syntax := e("ERR syntax error")
	tests := []struct {
		args  []string
		want  Reply
		count string // the COUNT the store gets; "" when it must not be called
	}{
		{[]string{"PK.SCAN", "ns", "0"}, Reply{Kind: ScanPage, Bytes: []byte("0")}, "10"},
		{[]string{"pk.scan", "ns", "0", "count", "1"}, Reply{Kind: ScanPage, Bytes: []byte("0")}, "1"},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "1000", "MATCH", "*", "LIVE"}, Reply{Kind: ScanPage, Bytes: []byte("0")}, "1000"},
		{[]string{"PK.SCAN", "ns", "0", "expired", "match", "a"}, Reply{Kind: ScanPage, Bytes: []byte("0")}, "10"},
		{[]string{"PK.SCAN", "ns"}, e("ERR wrong number of arguments for 'pk.scan' command"), ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "0"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "1001"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "-1"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "ten"}, e("ERR value is not an integer or out of range"), ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "1.5"}, e("ERR value is not an integer or out of range"), ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "99999999999999999999"}, e("ERR value is not an integer or out of range"), ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "5", "COUNT", "5"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "MATCH"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "MATCH", "a", "MATCH", "b"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "LIVE", "EXPIRED"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "LIVE", "LIVE"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "TYPE", "hash"}, syntax, ""},
		{[]string{"PK.SCAN", "ns", "0", "COUNT", "x", "BOGUS"}, e("ERR value is not an integer or out of range"), ""},
		{[]string{"PK.SCAN", "ns", "0", "BOGUS", "COUNT", "x"}, syntax, ""},
		{[]string{"PK.SCAN", "n s", "0"}, e("ERR invalid namespace name"), ""},
		{[]string{"PK.SCAN", "ns", "1"}, e("ERR invalid cursor"), ""},
		{[]string{"PK.SCAN", "ns", ""}, e("ERR invalid cursor"), ""},
		{[]string{"PK.SCAN", "ns", "0", "MATCH", strings.Repeat("*", 33)}, e("ERR pattern is larger than 4 x max-key-bytes (32)"), ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			st := &fakeStore{page: backend.Page{Done: true}}
			require.Equal(t, tt.want, do(t, st, tt.args...))
			if tt.count == "" {
				require.Empty(t, st.calls)
				return
			}
			require.Equal(t, []call{{op: "scan", ns: "ns", value: tt.count}}, st.calls)
		})
	}
}

// TestScanCursor: a page's position goes out as a cursor that only this
// store's secret and this namespace open, and comes back as the same
// position; the filters apply after the store read.
func TestScanCursor(t *testing.T) {
	recs := []backend.ScanRecord{
		{Key: []byte("a*"), Record: backend.Record{Value: []byte("1"), Live: true}},
		{Key: []byte("b"), Record: backend.Record{Value: []byte("2"), TTLAt: 5}},
		{Key: []byte("ab"), Record: backend.Record{Value: []byte("3"), TTLAt: 5}},
	}
	st := &fakeStore{page: backend.Page{Records: recs, Next: []byte("pos\x00\xff")}}
	h := New(st, Limits{MaxKeyBytes: 8, MaxValueBytes: 16}, nil)
	run := func(args ...string) Reply {
		raw := make([][]byte, len(args))
		for i, a := range args {
			raw[i] = []byte(a)
		}
		st.page.Records = append([]backend.ScanRecord(nil), recs...)
		r, ok := h.Do(context.Background(), raw)
		require.True(t, ok)
		return r
	}
	r := run("PK.SCAN", "ns", "0", "MATCH", "a*")
	require.Equal(t, ScanPage, r.Kind)
	require.Equal(t, []backend.ScanRecord{recs[0], recs[2]}, r.Records)
	cursor := string(r.Bytes)
	require.Regexp(t, `^[A-Za-z0-9_-]+$`, cursor)

	r = run("PK.SCAN", "ns", cursor, "EXPIRED")
	require.Equal(t, []backend.ScanRecord{recs[1], recs[2]}, r.Records)
	require.Equal(t, call{op: "scan", ns: "ns", key: "pos\x00\xff", value: "10"}, st.calls[len(st.calls)-1])
	r = run("PK.SCAN", "ns", cursor, "LIVE", "MATCH", `a\*`)
	require.Equal(t, []backend.ScanRecord{recs[0]}, r.Records)

	calls := len(st.calls)
	require.Equal(t, e("ERR invalid cursor"), run("PK.SCAN", "ns2", cursor))
	require.Equal(t, e("ERR invalid cursor"), run("PK.SCAN", "ns", flip(cursor, 3)))
	other := New(&fakeStore{page: st.page}, DefaultLimits, nil)
	other.sec.key = []byte("another store's secret, 32 bytes")
	r, _ = other.Do(context.Background(), [][]byte{[]byte("PK.SCAN"), []byte("ns"), []byte(cursor)})
	require.Equal(t, e("ERR invalid cursor"), r)
	require.Len(t, st.calls, calls, "the store read for an invalid cursor")

	st.page = backend.Page{Done: true}
	r = run("PK.SCAN", "ns", cursor)
	require.Equal(t, []byte("0"), r.Bytes)
}

func flip(c string, i int) string {
	b := []byte(c)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// TestCallsAnswerScanNotRun: the loop's Redis connection answers a scan's
// place in its batch with a zero Result before the scan runs through
// Batch; answering it must not fail (it is replaced, never sent).
func TestCallsAnswerScanNotRun(t *testing.T) {
	h := New(&fakeStore{}, DefaultLimits, nil)
	cmds := [][][]byte{
		{[]byte("PK.SCAN"), []byte("ns"), []byte("0")},
		{[]byte("PK.GET"), []byte("ns"), []byte("k")},
	}
	replies := make([]Reply, len(cmds))
	calls := h.ParseBatch(cmds, replies)
	require.Len(t, calls.Ops, 2)
	calls.Answer(make([]backend.Result, 2), replies)
	require.Equal(t, Reply{Kind: ScanPage}, replies[0])
	require.Equal(t, Nil, replies[1].Kind)
}
