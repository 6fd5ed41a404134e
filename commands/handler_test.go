package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// call is what the fake store saw.
type call struct {
	op               string
	ns               string
	key, value       string
	oldKey, oldValue string
	cond             backend.Cond
	exp              backend.Expiry
}

// fakeStore records the one call it gets and answers with what the test set.
type fakeStore struct {
	calls []call
	ok    bool
	rec   backend.Record
	found bool
	move  backend.MoveResult
	page  backend.Page
	err   error
}

func (f *fakeStore) prepare(ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	f.calls = append(f.calls, call{op: "prepare", ns: ns, key: string(key), value: string(value), exp: exp})
	return f.ok, f.err
}

func (f *fakeStore) get(ns string, key []byte) (backend.Record, bool, error) {
	f.calls = append(f.calls, call{op: "get", ns: ns, key: string(key)})
	return f.rec, f.found, f.err
}

func (f *fakeStore) rollback(ns string, key []byte, c backend.Cond) (bool, error) {
	f.calls = append(f.calls, call{op: "rollback", ns: ns, key: string(key), cond: copyCond(c)})
	return f.ok, f.err
}

func (f *fakeStore) reprepare(ns string, key, value []byte, c backend.Cond, exp backend.Expiry) (bool, error) {
	f.calls = append(f.calls, call{op: "reprepare", ns: ns, key: string(key), value: string(value), cond: copyCond(c), exp: exp})
	return f.ok, f.err
}

func (f *fakeStore) moveKey(ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	f.calls = append(f.calls, call{op: "move", ns: ns, key: string(newKey), value: string(newValue), oldKey: string(oldKey), oldValue: string(oldValue), exp: exp})
	return f.move, f.err
}

func (f *fakeStore) Ping(context.Context) error { return f.err }

// Info: no layout check, no metrics, the server's timeout.
func (f *fakeStore) Info() backend.Info { return backend.Info{} }

// Run runs ops one at a time, as a store without a batch of its own does
// (backend.RunEach); a transaction block is refused, as a store that
// cannot isolate one refuses it.
func (f *fakeStore) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return &backend.NotIsolated{Reason: "the fake store has no transactions"}
	}
	backend.RunEach(ctx, ops, res, f.one)
	return nil
}

func (f *fakeStore) RunOne(ctx context.Context, op backend.Op) backend.Result { return f.one(ctx, &op) }

// Submit runs the submission at once, on the caller.
func (f *fakeStore) Submit(s *backend.Submission) {
	backend.RunSubmission(f, s)
	s.Finish(backend.AtOnce)
}

func (f *fakeStore) one(_ context.Context, op *backend.Op) (r backend.Result) {
	switch op.Kind {
	case backend.OpPrepare:
		r.OK, r.Err = f.prepare(op.NS, op.Key, op.Value, op.Exp)
	case backend.OpGet:
		r.Record, r.Found, r.Err = f.get(op.NS, op.Key)
	case backend.OpRollback:
		r.OK, r.Err = f.rollback(op.NS, op.Key, op.Cond)
	case backend.OpReprepare:
		r.OK, r.Err = f.reprepare(op.NS, op.Key, op.Value, op.Cond, op.Exp)
	case backend.OpMove:
		r.Move, r.Err = f.moveKey(op.NS, op.Key, op.Value, op.OldKey, op.OldValue, op.Exp)
	case backend.OpMPrepare:
		r.OK, r.Err = f.mprepare(op.Entries, op.Exp)
	default:
		r.Err = backend.UnknownOp("fake", op.Kind)
	}
	return r
}

func copyCond(c backend.Cond) backend.Cond {
	if c.Value != nil {
		c.Value = append([]byte{}, c.Value...)
	}
	return c
}

// now is the sidecar clock of every test: 2026-01-01T00:00:00Z.
var now = time.UnixMilli(1767225600000)

const nowMs = 1767225600000

func do(t *testing.T, st *fakeStore, args ...string) Reply {
	t.Helper()
	h := New(st, Limits{MaxKeyBytes: 8, MaxValueBytes: 16}, func() time.Time { return now })
	raw := make([][]byte, len(args))
	for i, a := range args {
		raw[i] = []byte(a)
	}
	r, ok := h.Do(context.Background(), raw)
	require.True(t, ok, "not a PK command")
	return r
}

// e is the error reply whose line is text, with its code (lineCode).
func e(text string) Reply { return Reply{Kind: Error, Err: lineCode(text), Text: text} }

var (
	one  = Reply{Kind: Int, Int: 1}
	zero = Reply{Kind: Int}
)

func after(ms int64) backend.Expiry { return backend.Expiry{Kind: backend.ExpireAfter, Millis: ms} }
func at(ms int64) backend.Expiry    { return backend.Expiry{Kind: backend.ExpireAt, Millis: ms} }

var keepTTL = backend.Expiry{Kind: backend.KeepTTL}

func TestParse(t *testing.T) {
	syntax := e("ERR syntax error")
	tests := []struct {
		args []string
		want Reply
		call *call // nil: the store must not be called
	}{
		// PK.PREPARE
		{[]string{"PK.PREPARE", "ns", "k", "v"}, one, &call{op: "prepare", ns: "ns", key: "k", value: "v"}},
		{[]string{"pk.prepare", "ns", "k", ""}, one, &call{op: "prepare", ns: "ns", key: "k", value: ""}},
		{[]string{"Pk.PrePare", "ns", "k", "v", "ex", "10"}, one, &call{op: "prepare", ns: "ns", key: "k", value: "v", exp: after(10000)}},
		{[]string{"PK.PREPARE", "ns", "k", "v", "PX", "1500"}, one, &call{op: "prepare", ns: "ns", key: "k", value: "v", exp: after(1500)}},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EXAT", "1767225601"}, one, &call{op: "prepare", ns: "ns", key: "k", value: "v", exp: at(1767225601000)}},
		{[]string{"PK.PREPARE", "ns", "k", "v", "pxat", "1767225600001"}, one, &call{op: "prepare", ns: "ns", key: "k", value: "v", exp: at(nowMs + 1)}},
		{[]string{"PK.PREPARE", "ns", "k", "v", "PXAT", "1767225600000"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "0"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "-5"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "1.5"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "abc"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "9223372036854775807"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "PX", "99999999999999999999"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "PXAT", "253402300800000"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		// Numerals Redis's string2ll refuses: Redis's own error (issue 9).
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "+5"}, e("ERR value is not an integer or out of range"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "007"}, e("ERR value is not an integer or out of range"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "PX", "-0"}, e("ERR value is not an integer or out of range"), nil},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "PXAT", "+1767225601000"}, e("ERR value is not an integer or out of range"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", " 5"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "-99999999999999999999"}, e("ERR invalid expire time in 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "1", "PX", "1"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "1", "EX", "1"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "EX", "0", "EX", "1"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "KEEPTTL"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "IFEQ", "x"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k", "v", "NX"}, syntax, nil},
		{[]string{"PK.PREPARE", "ns", "k"}, e("ERR wrong number of arguments for 'pk.prepare' command"), nil},
		{[]string{"PK.PREPARE", "bad ns", "k", "v"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.PREPARE", "", "k", "v"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.PREPARE", strings.Repeat("n", 65), "k", "v"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.PREPARE", strings.Repeat("n", 64), "k", "v"}, one, &call{op: "prepare", ns: strings.Repeat("n", 64), key: "k", value: "v"}},
		{[]string{"PK.PREPARE", "A-z_0.9", "k", "v"}, one, &call{op: "prepare", ns: "A-z_0.9", key: "k", value: "v"}},
		{[]string{"PK.PREPARE", "ns:x", "k", "v"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.PREPARE", "ns", "", "v"}, e("ERR key is empty (keys are 1 to max-key-bytes (8) bytes)"), nil},
		{[]string{"PK.PREPARE", "ns", "123456789", "v"}, e("ERR key is larger than max-key-bytes (8)"), nil},
		{[]string{"PK.PREPARE", "ns", "12345678", "1234567890123456"}, one, &call{op: "prepare", ns: "ns", key: "12345678", value: "1234567890123456"}},
		{[]string{"PK.PREPARE", "ns", "k", "12345678901234567"}, e("ERR value is larger than max-value-bytes (16)"), nil},
		{[]string{"PK.PREPARE", "ns", "\x00\r\n", "\xff\x00"}, one, &call{op: "prepare", ns: "ns", key: "\x00\r\n", value: "\xff\x00"}},
		// PK.GET / PK.GETVALUE
		{[]string{"PK.GET", "ns", "k", "extra"}, e("ERR wrong number of arguments for 'pk.get' command"), nil},
		{[]string{"PK.GET", "ns"}, e("ERR wrong number of arguments for 'pk.get' command"), nil},
		{[]string{"PK.GETVALUE", "ns", "k", "x"}, e("ERR wrong number of arguments for 'pk.getvalue' command"), nil},
		{[]string{"PK.GETVALUE", "n/s", "k"}, e("ERR invalid namespace name"), nil},
		{[]string{"PK.GET", "ns", "123456789"}, e("ERR key is larger than max-key-bytes (8)"), nil},
		// PK.ROLLBACK
		{[]string{"PK.ROLLBACK", "ns", "k"}, one, &call{op: "rollback", ns: "ns", key: "k"}},
		{[]string{"PK.ROLLBACK", "ns", "k", "ifeq", "v"}, one, &call{op: "rollback", ns: "ns", key: "k", cond: backend.IfEq([]byte("v"))}},
		{[]string{"PK.ROLLBACK", "ns", "k", "IFEQ", ""}, one, &call{op: "rollback", ns: "ns", key: "k", cond: backend.IfEq([]byte{})}},
		{[]string{"PK.ROLLBACK", "ns", "k", "IFEQ"}, syntax, nil},
		{[]string{"PK.ROLLBACK", "ns", "k", "IFEQ", "a", "IFEQ", "b"}, syntax, nil},
		{[]string{"PK.ROLLBACK", "ns", "k", "EX", "1"}, syntax, nil},
		{[]string{"PK.ROLLBACK", "ns", "k", "IFEQ", "12345678901234567"}, e("ERR value is larger than max-value-bytes (16)"), nil},
		{[]string{"PK.ROLLBACK", "ns"}, e("ERR wrong number of arguments for 'pk.rollback' command"), nil},
		// PK.REPREPARE
		{[]string{"PK.REPREPARE", "ns", "k", "v"}, one, &call{op: "reprepare", ns: "ns", key: "k", value: "v"}},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "KEEPTTL"}, one, &call{op: "reprepare", ns: "ns", key: "k", value: "v", exp: keepTTL}},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "keepttl", "IFEQ", "o"}, one, &call{op: "reprepare", ns: "ns", key: "k", value: "v", cond: backend.IfEq([]byte("o")), exp: keepTTL}},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "IFEQ", "o", "PX", "5"}, one, &call{op: "reprepare", ns: "ns", key: "k", value: "v", cond: backend.IfEq([]byte("o")), exp: after(5)}},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "KEEPTTL", "EX", "5"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "KEEPTTL", "KEEPTTL"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "PX", "0"}, e("ERR invalid expire time in 'pk.reprepare' command"), nil},
		{[]string{"PK.REPREPARE", "ns", "k", "v", "IFEQ"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "k"}, e("ERR wrong number of arguments for 'pk.reprepare' command"), nil},
		// key change
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "old", "IFEQ", "ov"}, one, &call{op: "move", ns: "ns", key: "new", value: "v", oldKey: "old", oldValue: "ov"}},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "ifeq", "ov", "from", "old", "EX", "2"}, one, &call{op: "move", ns: "ns", key: "new", value: "v", oldKey: "old", oldValue: "ov", exp: after(2000)}},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "old"}, e("ERR FROM needs IFEQ oldValue"), nil},
		{[]string{"PK.REPREPARE", "ns", "same", "v", "FROM", "same", "IFEQ", "x"}, e("ERR FROM key must differ from the new key"), nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "old", "IFEQ", "x", "KEEPTTL"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "a", "FROM", "b", "IFEQ", "x"}, syntax, nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "123456789", "IFEQ", "x"}, e("ERR key is larger than max-key-bytes (8)"), nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "", "IFEQ", "x"}, e("ERR key is empty (keys are 1 to max-key-bytes (8) bytes)"), nil},
		{[]string{"PK.REPREPARE", "ns", "new", "v", "FROM", "old", "IFEQ", "12345678901234567"}, e("ERR value is larger than max-value-bytes (16)"), nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			st := &fakeStore{ok: true, move: backend.Moved}
			require.Equal(t, tt.want, do(t, st, tt.args...))
			if tt.call == nil {
				require.Empty(t, st.calls)
				return
			}
			require.Equal(t, []call{*tt.call}, st.calls)
		})
	}
}

func TestReplies(t *testing.T) {
	failure := errors.New("redis: dial tcp 127.0.0.1:1: connect:\r\nrefused")
	refused := fmt.Errorf("mongo: prepare: %w", &backend.Refusal{Text: "ERR value is not valid JSON (layout=wow)"})
	tests := []struct {
		name  string
		store fakeStore
		args  []string
		want  Reply
	}{
		{"prepare taken", fakeStore{ok: false}, []string{"PK.PREPARE", "ns", "k", "v"}, zero},
		{"prepare failure is never :0", fakeStore{err: failure}, []string{"PK.PREPARE", "ns", "k", "v"}, e("UNAVAILABLE redis: dial tcp 127.0.0.1:1: connect:  refused")},
		{"get live", fakeStore{found: true, rec: backend.Record{Value: []byte("v"), Live: true}}, []string{"PK.GET", "ns", "k"}, Reply{Kind: Bulk, Bytes: []byte("v")}},
		{"get expired", fakeStore{found: true, rec: backend.Record{Value: []byte("v"), TTLAt: 5}}, []string{"PK.GET", "ns", "k"}, Reply{Kind: Nil}},
		{"get absent", fakeStore{}, []string{"PK.GET", "ns", "k"}, Reply{Kind: Nil}},
		{"get failure", fakeStore{err: failure}, []string{"PK.GET", "ns", "k"}, e("UNAVAILABLE redis: dial tcp 127.0.0.1:1: connect:  refused")},
		{"getvalue forever", fakeStore{found: true, rec: backend.Record{Value: []byte("v"), Live: true}}, []string{"PK.GETVALUE", "ns", "k"}, Reply{Kind: Record, Bytes: []byte("v"), Int: -1}},
		{"getvalue expired", fakeStore{found: true, rec: backend.Record{Value: []byte("v"), TTLAt: 5}}, []string{"PK.GETVALUE", "ns", "k"}, Reply{Kind: Record, Bytes: []byte("v"), Int: 5}},
		{"getvalue absent", fakeStore{}, []string{"PK.GETVALUE", "ns", "k"}, Reply{Kind: NilArray}},
		{"rollback none", fakeStore{}, []string{"PK.ROLLBACK", "ns", "k"}, zero},
		{"rollback failure", fakeStore{err: failure}, []string{"PK.ROLLBACK", "ns", "k"}, e("UNAVAILABLE redis: dial tcp 127.0.0.1:1: connect:  refused")},
		{"reprepare none", fakeStore{}, []string{"PK.REPREPARE", "ns", "k", "v"}, zero},
		{"reprepare failure", fakeStore{err: failure}, []string{"PK.REPREPARE", "ns", "k", "v"}, e("UNAVAILABLE redis: dial tcp 127.0.0.1:1: connect:  refused")},
		{"move taken", fakeStore{move: backend.NewKeyTaken}, []string{"PK.REPREPARE", "ns", "n", "v", "FROM", "o", "IFEQ", "x"}, zero},
		{"move mismatch", fakeStore{move: backend.OldKeyMismatch}, []string{"PK.REPREPARE", "ns", "n", "v", "FROM", "o", "IFEQ", "x"}, e("MISMATCH old key has no record with that value")},
		{"move failure", fakeStore{err: failure, move: backend.Moved}, []string{"PK.REPREPARE", "ns", "n", "v", "FROM", "o", "IFEQ", "x"}, e("UNAVAILABLE redis: dial tcp 127.0.0.1:1: connect:  refused")},
		// A store's refusal of the arguments is its error, even wrapped.
		{"prepare refused", fakeStore{err: refused}, []string{"PK.PREPARE", "ns", "k", "v"}, e("ERR value is not valid JSON (layout=wow)")},
		{"get refused", fakeStore{err: refused}, []string{"PK.GET", "ns", "k"}, e("ERR value is not valid JSON (layout=wow)")},
		{"move refused", fakeStore{err: refused}, []string{"PK.REPREPARE", "ns", "n", "v", "FROM", "o", "IFEQ", "x"}, e("ERR value is not valid JSON (layout=wow)")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, do(t, &tt.store, tt.args...))
		})
	}
}

func TestNotPK(t *testing.T) {
	h := New(&fakeStore{}, DefaultLimits, nil)
	for _, name := range []string{"GET", "pk.", "pk.preparex", strings.Repeat("x", 100)} {
		_, ok := h.Do(context.Background(), [][]byte{[]byte(name), []byte("a")})
		require.False(t, ok, name)
	}
}

func TestUnknownCommand(t *testing.T) {
	args := [][]byte{[]byte("foo"), []byte("a"), []byte("b\r\nc")}
	require.Equal(t, e("ERR unknown command 'foo', with args beginning with: 'a' 'b  c' "), UnknownCommand(args))
	require.Equal(t, e("ERR unknown command 'foo', with args beginning with: "), UnknownCommand(args[:1]))
	long := [][]byte{[]byte("x"), []byte(strings.Repeat("a", 200)), []byte("b")}
	r := UnknownCommand(long)
	require.Equal(t, fmt.Sprintf("ERR unknown command 'x', with args beginning with: '%s' ", strings.Repeat("a", 128)), r.Text)
}

func (f *fakeStore) mprepare(entries []backend.Entry, exp backend.Expiry) (bool, error) {
	for _, e := range entries {
		f.calls = append(f.calls, call{op: "mprepare", ns: e.NS, key: string(e.Key), value: string(e.Value), exp: exp})
	}
	return f.ok, f.err
}

func (f *fakeStore) Scan(_ context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	f.calls = append(f.calls, call{op: "scan", ns: ns, key: string(pos), value: fmt.Sprint(count)})
	return f.page, f.err
}

func (f *fakeStore) Secret(context.Context) ([]byte, error) {
	return []byte("0123456789abcdef0123456789abcdef"), f.err
}
