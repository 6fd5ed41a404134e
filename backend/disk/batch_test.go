package disk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// Op constructors, to keep the tables short.
func opPrepare(key, value string, exp backend.Expiry) backend.Op {
	return backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: []byte(key), Value: []byte(value), Exp: exp}
}

func opGet(key string) backend.Op {
	return backend.Op{Kind: backend.OpGet, NS: "ns", Key: []byte(key)}
}

func opRollback(key string, ifeq backend.Cond) backend.Op {
	return backend.Op{Kind: backend.OpRollback, NS: "ns", Key: []byte(key), Cond: ifeq}
}

func opReprepare(key, value string, ifeq backend.Cond, exp backend.Expiry) backend.Op {
	return backend.Op{Kind: backend.OpReprepare, NS: "ns", Key: []byte(key), Value: []byte(value), Cond: ifeq, Exp: exp}
}

func opMove(newKey, newValue, oldKey, oldValue string, exp backend.Expiry) backend.Op {
	return backend.Op{Kind: backend.OpMove, NS: "ns", Key: []byte(newKey), Value: []byte(newValue),
		OldKey: []byte(oldKey), OldValue: []byte(oldValue), Exp: exp}
}

func ifeq(v string) backend.Cond { return backend.IfEq([]byte(v)) }

func keepTTL() backend.Expiry { return backend.Expiry{Kind: backend.KeepTTL} }

// Result constructors.
var (
	yes      = backend.Result{OK: true}
	no       = backend.Result{}
	notFound = backend.Result{}
)

func found(value string, ttlAt int64, live bool) backend.Result {
	return backend.Result{Found: true, Record: backend.Record{Value: []byte(value), TTLAt: ttlAt, Live: live}}
}

func moved(r backend.MoveResult) backend.Result { return backend.Result{Move: r} }

// failed is a wanted result with an error of this text.
func failed(msg string) backend.Result { return backend.Result{Err: errors.New(msg)} }

// requireResults compares results exactly, errors by their text.
func requireResults(t *testing.T, want, got []backend.Result) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		if w.Err != nil || g.Err != nil {
			require.Error(t, g.Err, "op %d", i)
			require.Error(t, w.Err, "op %d: unexpected error %v", i, g.Err)
			require.EqualError(t, g.Err, w.Err.Error(), "op %d", i)
			w.Err, g.Err = nil, nil
		}
		require.Equal(t, w, g, "op %d", i)
	}
}

// syncCounter counts the WAL's fsyncs.
type syncCounter struct{ n atomic.Int64 }

func (c *syncCounter) String() string { return "wal-sync-counter" }

func (c *syncCounter) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		if strings.HasSuffix(op.Path, ".log") {
			c.n.Add(1)
		}
	}
	return nil
}

// TestBatch runs pipelines whose ops depend on each other, on the same and
// on different keys, and checks every result, the records left, the expiry
// index and how many fsyncs the pipeline cost.
func TestBatch(t *testing.T) {
	const retention = time.Hour
	t0 := newFakeClock().Now().UnixMilli()
	type tc struct {
		name    string
		setup   []backend.Op  // run one at a time first
		advance time.Duration // then the clock moves
		ops     []backend.Op  // then the batch runs
		want    []backend.Result
		syncs   int64 // fsyncs of the batch
		records int   // records left
	}
	cases := []tc{
		{
			name:    "prepare get prepare",
			ops:     []backend.Op{opPrepare("k", "v1", forever()), opGet("k"), opPrepare("k", "v2", forever()), opGet("k")},
			want:    []backend.Result{yes, found("v1", 0, true), no, found("v1", 0, true)},
			syncs:   1,
			records: 1,
		},
		{
			name: "different keys",
			ops: []backend.Op{
				opPrepare("a", "1", forever()), opPrepare("b", "2", after(time.Second)), opPrepare("c", "3", at(t0+5000)),
				opGet("b"), opGet("c"), opGet("d"),
			},
			want:    []backend.Result{yes, yes, yes, found("2", t0+1000, true), found("3", t0+5000, true), notFound},
			syncs:   1,
			records: 3,
		},
		{
			name: "prepare rollback prepare",
			ops: []backend.Op{
				opPrepare("k", "v1", after(time.Minute)), opRollback("k", backend.Cond{}), opGet("k"),
				opRollback("k", backend.Cond{}), opPrepare("k", "v2", forever()), opGet("k"),
			},
			want:    []backend.Result{yes, yes, notFound, no, yes, found("v2", 0, true)},
			syncs:   1,
			records: 1,
		},
		{
			name:  "ifeq",
			setup: []backend.Op{opPrepare("k", "v1", forever())},
			ops: []backend.Op{
				opRollback("k", ifeq("x")), opReprepare("k", "v2", ifeq("x"), forever()),
				opReprepare("k", "v2", ifeq("v1"), forever()), opRollback("k", ifeq("v1")),
				opGet("k"), opRollback("k", ifeq("v2")), opGet("k"), opReprepare("k", "v3", backend.Cond{}, forever()),
			},
			want:    []backend.Result{no, no, yes, no, found("v2", 0, true), yes, notFound, no},
			syncs:   1,
			records: 0,
		},
		{
			name:  "empty value and ifeq of it",
			setup: []backend.Op{opPrepare("k", "", forever())},
			ops:   []backend.Op{opRollback("k", ifeq("x")), opGet("k"), opRollback("k", ifeq("")), opGet("k")},
			want:  []backend.Result{no, found("", 0, true), yes, notFound},
			syncs: 1,
		},
		{
			name:  "keepttl and new expiries",
			setup: []backend.Op{opPrepare("k", "v1", after(10*time.Second))},
			ops: []backend.Op{
				opReprepare("k", "v2", backend.Cond{}, keepTTL()), opGet("k"),
				opReprepare("k", "v3", backend.Cond{}, after(5*time.Second)), opGet("k"),
				opReprepare("k", "v4", backend.Cond{}, forever()), opGet("k"),
				opReprepare("k", "v5", backend.Cond{}, at(t0+7000)), opGet("k"),
				opReprepare("k", "v6", ifeq("v5"), keepTTL()), opGet("k"),
			},
			want: []backend.Result{
				yes, found("v2", t0+10_000, true), yes, found("v3", t0+5000, true), yes, found("v4", 0, true),
				yes, found("v5", t0+7000, true), yes, found("v6", t0+7000, true),
			},
			syncs:   1,
			records: 1,
		},
		{
			name:    "expired but retained",
			setup:   []backend.Op{opPrepare("k", "v1", after(time.Second)), opPrepare("r", "v1", after(time.Second))},
			advance: 2 * time.Second,
			ops: []backend.Op{
				opGet("k"), opReprepare("k", "v2", backend.Cond{}, keepTTL()), opPrepare("k", "v2", after(time.Minute)),
				opGet("k"), opRollback("r", ifeq("v1")), opGet("r"),
			},
			want: []backend.Result{
				found("v1", t0+1000, false), no, yes, found("v2", t0+2000+60_000, true), yes, notFound,
			},
			syncs:   1,
			records: 1,
		},
		{
			name:    "past retention",
			setup:   []backend.Op{opPrepare("k", "v1", after(time.Second)), opPrepare("n", "x", after(time.Second))},
			advance: time.Second + retention,
			ops: []backend.Op{
				opGet("k"), opRollback("k", backend.Cond{}), opReprepare("k", "v2", backend.Cond{}, forever()),
				opMove("m", "v2", "k", "v1", forever()), opMove("n", "v2", "m", "v1", forever()), opGet("n"),
			},
			want: []backend.Result{
				notFound, no, no, moved(backend.OldKeyMismatch), moved(backend.OldKeyMismatch), notFound,
			},
			syncs:   0,
			records: 2, // not swept yet, but absent to every command
		},
		{
			name:  "move then get both keys",
			setup: []backend.Op{opPrepare("a", "v", forever())},
			ops: []backend.Op{
				opMove("b", "w", "a", "v", after(time.Minute)), opGet("a"), opGet("b"),
				opMove("a", "v", "b", "v", forever()), opMove("a", "v", "b", "w", forever()), opGet("a"), opGet("b"),
			},
			want: []backend.Result{
				moved(backend.Moved), notFound, found("w", t0+60_000, true),
				moved(backend.OldKeyMismatch), moved(backend.Moved), found("v", 0, true), notFound,
			},
			syncs:   1,
			records: 1,
		},
		{
			name:    "move onto a taken, an expired and a prepared key",
			setup:   []backend.Op{opPrepare("old", "o", forever()), opPrepare("taken", "t", forever()), opPrepare("exp", "e", after(time.Second))},
			advance: 2 * time.Second,
			ops: []backend.Op{
				opMove("taken", "n", "missing", "o", forever()), opMove("taken", "n", "old", "o", forever()),
				opMove("exp", "n", "old", "o", forever()), opGet("exp"), opGet("old"),
				opPrepare("fresh", "f", forever()), opMove("fresh", "n2", "exp", "n", forever()),
			},
			want: []backend.Result{
				moved(backend.NewKeyTaken), moved(backend.NewKeyTaken), moved(backend.Moved), found("n", 0, true), notFound,
				yes, moved(backend.NewKeyTaken),
			},
			syncs:   1,
			records: 3,
		},
		{
			name:  "failing ops do not stop the others",
			setup: []backend.Op{opPrepare("a", "v", forever())},
			ops: []backend.Op{
				opMove("a", "v", "a", "v", forever()), {Kind: 99, NS: "ns", Key: []byte("a")},
				opPrepare("b", "v", forever()), opGet("a"),
			},
			want: []backend.Result{
				failed("disk: move: old and new key are the same"), failed("disk: batch: unknown op kind 99"),
				yes, found("v", 0, true),
			},
			syncs:   1,
			records: 2,
		},
		{
			name: "namespaces",
			ops: []backend.Op{
				opPrepare("k", "v", forever()),
				{Kind: backend.OpPrepare, NS: "other", Key: []byte("k"), Value: []byte("o")},
				{Kind: backend.OpGet, NS: "other", Key: []byte("k")},
				{Kind: backend.OpPrepare, NS: "nsk", Key: nil, Value: []byte("x")},
				opGet("k"),
			},
			want:    []backend.Result{yes, yes, found("o", 0, true), yes, found("v", 0, true)},
			syncs:   1,
			records: 3,
		},
		{
			name:  "reads only",
			setup: []backend.Op{opPrepare("a", "v", forever())},
			ops:   []backend.Op{opGet("a"), opGet("b"), opPrepare("a", "w", forever()), opRollback("b", backend.Cond{}), opGet("a")},
			want:  []backend.Result{found("v", 0, true), notFound, no, no, found("v", 0, true)},
			syncs: 0, records: 1,
		},
		{
			name:  "empty",
			syncs: 0,
		},
	}
	// A pipeline longer than a chunk: one commit per chunk, in order.
	var long []backend.Op
	var longWant []backend.Result
	for i := range batchChunk + 44 {
		long = append(long, opPrepare(fmt.Sprint(i%(batchChunk+1)), fmt.Sprint(i), forever()))
		if i <= batchChunk {
			longWant = append(longWant, yes)
		} else {
			longWant = append(longWant, no)
		}
	}
	long = append(long, opGet("0"), opGet(fmt.Sprint(batchChunk)))
	longWant = append(longWant, found("0", 0, true), found(fmt.Sprint(batchChunk), 0, true))
	cases = append(cases, tc{name: "longer than a chunk", ops: long, want: longWant, syncs: 2, records: batchChunk + 1})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := newFakeClock()
			var syncs syncCounter
			s, err := open(t.TempDir(), backend.Options{Retention: retention, Now: clock.Now},
				config{fs: errorfs.Wrap(vfs.Default, &syncs)})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			for _, op := range tc.setup {
				requireResults(t, []backend.Result{{OK: true}}, runAlone(ctx, s, []backend.Op{op}))
			}
			clock.Advance(tc.advance)
			before := syncs.n.Load()
			res := make([]backend.Result, len(tc.ops))
			s.Run(ctx, tc.ops, res, backend.Pipelined)
			require.Equal(t, tc.syncs, syncs.n.Load()-before, "fsyncs")
			requireResults(t, tc.want, res)
			require.Len(t, keyspace(t, s, prefixRecord), tc.records)
			requireIndexMatches(t, s)
		})
	}
}

// runAlone runs ops one at a time through the single-command methods.
func runAlone(ctx context.Context, s *Store, ops []backend.Op) []backend.Result {
	res := make([]backend.Result, len(ops))
	for i, op := range ops {
		r := &res[i]
		switch op.Kind {
		case backend.OpPrepare:
			r.OK, r.Err = (backend.Calls{Runner: s}).Prepare(ctx, op.NS, op.Key, op.Value, op.Exp)
		case backend.OpGet:
			r.Record, r.Found, r.Err = (backend.Calls{Runner: s}).Get(ctx, op.NS, op.Key)
		case backend.OpRollback:
			r.OK, r.Err = (backend.Calls{Runner: s}).Rollback(ctx, op.NS, op.Key, op.Cond)
		case backend.OpReprepare:
			r.OK, r.Err = (backend.Calls{Runner: s}).Reprepare(ctx, op.NS, op.Key, op.Value, op.Cond, op.Exp)
		case backend.OpMove:
			r.Move, r.Err = (backend.Calls{Runner: s}).Move(ctx, op.NS, op.Key, op.Value, op.OldKey, op.OldValue, op.Exp)
		default:
			r.Err = fmt.Errorf("disk: batch: unknown op kind %d", op.Kind)
		}
	}
	return res
}

// TestBatchFailsWhole checks that a closed store, a done context and a
// failed commit fail every op of the batch, reads included, and leave the
// records as they were.
func TestBatchFailsWhole(t *testing.T) {
	ops := []backend.Op{opGet("a"), opPrepare("b", "v", forever()), opGet("b"), opRollback("a", backend.Cond{})}
	requireAllFail := func(t *testing.T, res []backend.Result, target error) {
		t.Helper()
		for i, r := range res {
			require.ErrorIs(t, r.Err, target, "op %d", i)
			require.Equal(t, backend.Result{Err: r.Err}, r, "op %d answered despite the failure", i)
		}
	}
	t.Run("canceled context", func(t *testing.T) {
		s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := make([]backend.Result, len(ops))
		s.Run(ctx, ops, res, backend.Pipelined)
		requireAllFail(t, res, context.Canceled)
		require.Empty(t, keyspace(t, s, prefixRecord))
	})
	t.Run("closed store", func(t *testing.T) {
		s, err := open(t.TempDir(), backend.Options{Now: newFakeClock().Now}, config{})
		require.NoError(t, err)
		require.NoError(t, s.Close())
		res := make([]backend.Result, len(ops))
		s.Run(context.Background(), ops, res, backend.Pipelined)
		requireAllFail(t, res, ErrClosed)
	})
	t.Run("failed commit", func(t *testing.T) {
		// A read-only database refuses the commit without exiting (unlike a
		// failed WAL write, see TestFsyncFailure); the later chunk is not run.
		dir := t.TempDir()
		clock := newFakeClock()
		s, err := open(dir, backend.Options{Now: clock.Now}, config{})
		require.NoError(t, err)
		require.Equal(t, []backend.Result{yes}, runAlone(context.Background(), s, []backend.Op{opPrepare("a", "v", forever())}))
		require.NoError(t, s.Close())
		s, err = open(dir, backend.Options{Now: clock.Now}, config{readOnly: true})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })

		long := append([]backend.Op(nil), ops...)
		for len(long) <= batchChunk {
			long = append(long, opGet("a"))
		}
		res := make([]backend.Result, len(long))
		s.Run(context.Background(), long, res, backend.Pipelined)
		requireAllFail(t, res, pebble.ErrReadOnly)
		require.ErrorContains(t, res[0].Err, "disk: commit: ")
		require.Equal(t, []backend.Result{found("v", 0, true), notFound}, runAlone(context.Background(), s, []backend.Op{opGet("a"), opGet("b")}))

		// A batch that writes nothing needs no commit, so it is answered.
		res = res[:2]
		s.Run(context.Background(), []backend.Op{opGet("a"), opPrepare("a", "w", forever())}, res, backend.Pipelined)
		requireResults(t, []backend.Result{found("v", 0, true), no}, res)
	})
}

// TestBatchCorruptRecord checks that an op meeting a record this package
// did not write fails alone: the ops around it are answered and committed.
func TestBatchCorruptRecord(t *testing.T) {
	s := openTest(t, t.TempDir(), newFakeClock(), time.Hour)
	require.NoError(t, s.db.Set(recordKey("ns", []byte("bad")), []byte{1, 2, 3}, nil))
	ops := []backend.Op{
		opPrepare("a", "v", forever()), opGet("bad"), opPrepare("bad", "v", forever()),
		opMove("b", "v", "bad", "v", forever()), opMove("b", "w", "a", "v", forever()), opGet("b"),
	}
	res := make([]backend.Result, len(ops))
	s.Run(context.Background(), ops, res, backend.Pipelined)
	for _, i := range []int{1, 2, 3} {
		require.ErrorIs(t, res[i].Err, errCorrupt, "op %d", i)
		res[i].Err = nil
	}
	require.Equal(t, []backend.Result{yes, {}, {}, {}, moved(backend.Moved), found("w", 0, true)}, res)
	require.Equal(t, []backend.Result{notFound, found("w", 0, true)}, runAlone(context.Background(), s, []backend.Op{opGet("a"), opGet("b")}))
}
