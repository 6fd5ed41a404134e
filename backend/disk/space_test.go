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

// freeFS is the OS's file system with the free space a test sets.
type freeFS struct {
	vfs.FS
	free *atomic.Int64
}

func (fs freeFS) GetDiskUsage(path string) (vfs.DiskUsage, error) {
	u, err := fs.FS.GetDiskUsage(path)
	u.AvailBytes = uint64(fs.free.Load())
	return u, err
}

// TestMinFree: below the reserve, writes that add records fail with
// ErrDiskFull and write nothing, alone or in a batch, while reads, a
// PREPARE of a taken key and a ROLLBACK go on; writes resume once space is
// freed. A store does not open with less free space than the reserve.
func TestMinFree(t *testing.T) {
	ctx := context.Background()
	free := new(atomic.Int64)
	free.Store(100 << 20)
	dir := t.TempDir()
	s, err := open(dir, backend.Options{}, config{fs: freeFS{vfs.Default, free}, minFree: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("a"), []byte("1"), forever())
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("b"), []byte("2"), forever())
	require.NoError(t, err)
	require.True(t, ok)

	free.Store(512 << 10)
	_, err = s.space.read()
	require.NoError(t, err)
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("c"), []byte("3"), forever())
	require.ErrorIs(t, err, ErrDiskFull)
	require.EqualError(t, err, "disk full: 512.0 KiB free on "+dir+", below the reserve of 1.0 MiB (--min-free-disk); writes resume once space is freed")
	_, err = (backend.Calls{Runner: s}).Reprepare(ctx, "ns", []byte("a"), []byte("9"), backend.Cond{}, forever())
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("d"), []byte("4"), []byte("a"), []byte("1"), forever())
	require.ErrorIs(t, err, ErrDiskFull)
	_, err = (backend.Calls{Runner: s}).MPrepare(ctx, []backend.Entry{{NS: "ns", Key: []byte("d"), Value: []byte("4")}}, forever())
	require.ErrorIs(t, err, ErrDiskFull)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("a"), []byte("x"), forever()) // taken: writes nothing
	require.NoError(t, err)
	require.False(t, ok)
	rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("a"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "1", string(rec.Value))
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "ns", []byte("b"), backend.Cond{})
	require.NoError(t, err)
	require.True(t, ok)

	ops := []backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: []byte("e"), Value: []byte("5")},
		{Kind: backend.OpGet, NS: "ns", Key: []byte("a")},
		{Kind: backend.OpGet, NS: "ns", Key: []byte("e")},
	}
	res := make([]backend.Result, len(ops))
	s.Run(ctx, ops, res, backend.Pipelined)
	require.ErrorIs(t, res[0].Err, ErrDiskFull)
	require.NoError(t, res[1].Err)
	require.Equal(t, "1", string(res[1].Record.Value))
	require.NoError(t, res[2].Err)
	require.False(t, res[2].Found)

	free.Store(100 << 20)
	_, err = s.space.read()
	require.NoError(t, err)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("c"), []byte("3"), forever())
	require.NoError(t, err)
	require.True(t, ok)
	_, found, err = (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("a"))
	require.NoError(t, err)
	require.True(t, found)

	free.Store(512 << 10)
	_, err = open(t.TempDir(), backend.Options{}, config{fs: freeFS{vfs.Default, free}, minFree: 1 << 20})
	require.ErrorIs(t, err, ErrDiskFull)
}

// TestWritesCountedTowardFree: what pebble writes is taken from the free
// space last read, so that writes are refused before the next read of the
// file system once the estimate is within the reserve.
func TestWritesCountedTowardFree(t *testing.T) {
	ctx := context.Background()
	free := new(atomic.Int64)
	free.Store(100 << 20)
	s, err := open(t.TempDir(), backend.Options{}, config{fs: freeFS{vfs.Default, free}, minFree: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	before := s.space.avail.Load()
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("a"), make([]byte, 64<<10), forever())
	require.NoError(t, err)
	require.LessOrEqual(t, s.space.avail.Load(), before-64<<10)
}

// TestENOSPCWaitsForSpace: a WAL write that meets ENOSPC (the disk filled
// faster than the reserve was checked) neither ends the process, as
// pebble's fatal commit error did, nor fails: it waits until space is
// freed, is retried, and the write is acknowledged and durable.
func TestENOSPCWaitsForSpace(t *testing.T) {
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
	s, err := open(dir, backend.Options{}, config{fs: errorfs.Wrap(freeFS{vfs.Default, free}, inj), minFree: 1 << 20})
	require.NoError(t, err)

	free.Store(0)
	full.Store(true)
	prepared := make(chan error, 1)
	go func() {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v"), forever())
		if err == nil && !ok {
			err = errors.New("not prepared")
		}
		prepared <- err
	}()
	select {
	case err := <-prepared:
		t.Fatalf("the write answered (%v) while the disk was full", err)
	case <-time.After(300 * time.Millisecond): // a bound on non-progress
	}
	require.False(t, full.Load(), "the WAL write met ENOSPC")
	other := []byte("other")
	for s.stripe(recordKey("ns", other)) == s.stripe(recordKey("ns", []byte("k"))) {
		other = append(other, 'x')
	}
	_, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", other, []byte("v"), forever())
	require.ErrorIs(t, err, ErrDiskFull) // refused meanwhile, without waiting

	free.Store(100 << 20)
	require.NoError(t, <-prepared)
	require.NoError(t, s.Close())
	s, err = open(dir, backend.Options{}, config{})
	require.NoError(t, err)
	defer s.Close()
	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("k"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v", string(rec.Value))
}
