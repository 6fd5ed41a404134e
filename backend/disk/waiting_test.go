package disk

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestENOSPCReadsGoOn: with no reserve, a WAL write meets ENOSPC and its
// command waits for space in pebble. Meanwhile reads answer at once, alone,
// in a batch and in a scan, from what is durable; writes and deletions
// are refused with ErrDiskFull without reaching pebble; a read of the
// record the waiting write holds (or of one on its stripe) is refused
// rather than waited for or answered from the unsynced write. Once space
// is back, the waiting write is acknowledged and the refused ones took no
// effect.
func TestENOSPCReadsGoOn(t *testing.T) {
	ctx := context.Background()
	free := new(atomic.Int64)
	free.Store(100 << 20)
	var full atomic.Bool
	inj := errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind == errorfs.OpFileWrite && strings.HasSuffix(op.Path, ".log") && full.CompareAndSwap(true, false) {
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	})
	dir := t.TempDir()
	s, err := open(dir, backend.Options{}, config{fs: errorfs.Wrap(freeFS{vfs.Default, free}, inj)})
	require.NoError(t, err)

	k := []byte("k")
	apart := func(key string) []byte { // a key on another stripe than k's
		b := []byte(key)
		for s.stripe(recordKey("ns", b)) == s.stripe(recordKey("ns", k)) {
			b = append(b, 'x')
		}
		return b
	}
	a, b, x := apart("a"), apart("b"), apart("x")
	for _, key := range [][]byte{a, b} {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", key, []byte("v"+string(key)), forever())
		require.NoError(t, err)
		require.True(t, ok)
	}
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "other", []byte("o"), []byte("vo"), forever())
	require.NoError(t, err)
	require.True(t, ok)

	free.Store(0)
	full.Store(true)
	prepared := make(chan error, 1)
	go func() {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", k, []byte("vk"), forever())
		if err == nil && !ok {
			err = errors.New("not prepared")
		}
		prepared <- err
	}()
	require.Eventually(t, s.space.waiting.Load, 10*time.Second, time.Millisecond, "the WAL write met ENOSPC")

	rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "ns", a)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "v"+string(a), string(rec.Value))
	_, _, err = (backend.Calls{Runner: s}).Get(ctx, "ns", k)
	require.ErrorIs(t, err, ErrDiskFull)
	require.Contains(t, err.Error(), "a write waiting for space on "+dir+" may change this record")

	ops := []backend.Op{
		{Kind: backend.OpGet, NS: "ns", Key: a},
		{Kind: backend.OpPrepare, NS: "ns", Key: x, Value: []byte("vx")},
		{Kind: backend.OpGet, NS: "ns", Key: b},
		{Kind: backend.OpRollback, NS: "ns", Key: a},
		{Kind: backend.OpGet, NS: "ns", Key: k},
		{Kind: backend.OpPrepare, NS: "ns", Key: b, Value: []byte("taken")},
		{Kind: backend.OpGet, NS: "ns", Key: x},
	}
	res := make([]backend.Result, len(ops))
	s.Run(ctx, ops, res, backend.Pipelined)
	require.NoError(t, res[0].Err)
	require.Equal(t, "v"+string(a), string(res[0].Record.Value))
	require.ErrorIs(t, res[1].Err, ErrDiskFull)
	require.Contains(t, res[1].Err.Error(), "a write found no space on "+dir)
	require.NoError(t, res[2].Err)
	require.Equal(t, "v"+string(b), string(res[2].Record.Value))
	require.ErrorIs(t, res[3].Err, ErrDiskFull) // a deletion needs the WAL too
	require.ErrorIs(t, res[4].Err, ErrDiskFull)
	require.NoError(t, res[5].Err)
	require.False(t, res[5].OK) // writes nothing: answered as ever
	require.NoError(t, res[6].Err)
	require.False(t, res[6].Found)

	// Alone: a retry of the waiting write, a deletion, a write, a read.
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", k, []byte("vk"), forever())
	require.ErrorIs(t, err, ErrDiskFull)
	require.Contains(t, err.Error(), "may change this record")
	_, err = (backend.Calls{Runner: s}).Rollback(ctx, "ns", a, backend.Cond{})
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = (backend.Calls{Runner: s}).MPrepare(ctx, []backend.Entry{{NS: "ns", Key: x, Value: []byte("vx")}}, forever())
	require.ErrorIs(t, err, ErrDiskFull)
	ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "ns", x, []byte("vx"), backend.Cond{}, forever())
	require.NoError(t, err)
	require.False(t, ok) // no record: writes nothing
	// EXEC: a read-only block is answered, one that writes is refused whole.
	block := []backend.Op{{Kind: backend.OpGet, NS: "ns", Key: a}, {Kind: backend.OpGet, NS: "ns", Key: b}}
	res = make([]backend.Result, 2)
	require.NoError(t, s.Run(ctx, block, res, backend.Isolated))
	require.Equal(t, "v"+string(b), string(res[1].Record.Value))
	block = append(block, backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: x, Value: []byte("vx")})
	require.ErrorIs(t, s.Run(ctx, block, make([]backend.Result, 3), backend.Isolated), ErrDiskFull)

	page, err := s.Scan(ctx, "other", nil, 10)
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, "vo", string(page.Records[0].Record.Value))
	_, err = s.Scan(ctx, "ns", nil, 10) // shows k, not yet durable
	require.ErrorIs(t, err, ErrDiskFull)

	select {
	case err := <-prepared:
		t.Fatalf("the write answered (%v) while the disk was full", err)
	default:
	}
	free.Store(100 << 20)
	require.NoError(t, <-prepared)
	for key, want := range map[string]string{"k": "vk", string(a): "v" + string(a)} {
		rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte(key))
		require.NoError(t, err)
		require.True(t, found, key)
		require.Equal(t, want, string(rec.Value))
	}
	_, found, err = (backend.Calls{Runner: s}).Get(ctx, "ns", x)
	require.NoError(t, err)
	require.False(t, found)
	require.NoError(t, s.Close())
}
