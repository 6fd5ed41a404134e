package commands

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// execStore answers a Run of a transaction block (backend.Isolated) with
// err, or with res.
type execStore struct {
	fakeStore
	ops []backend.Op
	res []backend.Result
	err error
}

func (s *execStore) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso != backend.Isolated {
		return s.fakeStore.Run(ctx, ops, res, iso)
	}
	s.ops = append(s.ops, ops...)
	copy(res, s.res)
	return s.err
}

func TestExec(t *testing.T) {
	block := [][][]byte{args("PK.PREPARE", "ns", "a", "v"), args("PK.GET", "ns", "a"), args("PK.PREPARE", "ns", "b", "v", "EXAT", "1")}
	tests := []struct {
		name      string
		store     backend.Store
		wantAbort string
		want      []Reply
	}{
		{name: "runs", store: &execStore{res: []backend.Result{{OK: true}, {Found: true, Record: backend.Record{Value: []byte("v"), Live: true}}}},
			want: []Reply{{Kind: Int, Int: 1}, {Kind: Bulk, Bytes: []byte("v")}, e("ERR invalid expire time in 'pk.prepare' command")}},
		{name: "not isolated", store: &execStore{err: &backend.NotIsolated{Reason: "CROSSSLOT Keys in request don't hash to the same slot"}},
			wantAbort: "EXECABORT Transaction discarded: CROSSSLOT Keys in request don't hash to the same slot"},
		{name: "store failure", store: &execStore{err: errors.New("down")}, wantAbort: "UNAVAILABLE down"},
		{name: "one op refused", store: &execStore{res: []backend.Result{{Err: &backend.Refusal{Text: "ERR key is not valid UTF-8 (layout=wow)"}}, {}}},
			want: []Reply{e("ERR key is not valid UTF-8 (layout=wow)"), {Kind: Nil}, e("ERR invalid expire time in 'pk.prepare' command")}},
		{name: "one op failed", store: &execStore{res: []backend.Result{{OK: true}, {Err: errors.New("corrupt")}}}, wantAbort: "UNAVAILABLE corrupt"},
		{name: "no transactions", store: &fakeStore{}, wantAbort: "EXECABORT Transaction discarded: the fake store has no transactions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := New(tt.store, DefaultLimits, nil)
			replies := make([]Reply, len(block))
			abort, ok := h.Exec(t.Context(), block, replies)
			if tt.wantAbort != "" {
				require.False(t, ok)
				require.Equal(t, e(tt.wantAbort), abort)
				return
			}
			require.True(t, ok)
			require.Equal(t, tt.want, replies)
			require.Len(t, tt.store.(*execStore).ops, 2, "the refused command does not reach the store")
		})
	}
	// A block without PK commands does not reach the store.
	s := &execStore{err: errors.New("must not be called")}
	_, ok := New(s, DefaultLimits, nil).Exec(t.Context(), nil, nil)
	require.True(t, ok)
	require.Empty(t, s.ops)
}

func TestCheck(t *testing.T) {
	h := New(&fakeStore{}, DefaultLimits, nil)
	_, ok := h.Check(args("PK.PREPARE", "ns", "a", "v", "EX", "10"))
	require.True(t, ok)
	r, ok := h.Check(args("PK.PREPARE", "ns", "a", "v", "EXAT", "1"))
	require.False(t, ok)
	require.Equal(t, e("ERR invalid expire time in 'pk.prepare' command"), r)
	r, ok = h.Check(args("pk.get", "bad ns", "a"))
	require.False(t, ok)
	require.Equal(t, e("ERR invalid namespace name"), r)
	require.Empty(t, h.store.(*fakeStore).calls, "Check runs nothing")
}
