package disk

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestBigBatchMemory: what one PK.MPREPARE of 64 values of 1 MiB (issue
// 23, N1) costs the store, on both of the sidecar's paths, at the
// sidecar's GOGC 400 (cmd/sidecar's tuneGC), under which nothing it
// allocates is collected before it ends, so that what it allocates is its
// heap's peak. Measured 145-215 MiB for the 64 MiB of values, allocated
// before (go tool pprof -sample_index=alloc_space on the profile written
// with PK_BIG_PROFILE=FILE):
//
//   - 64 MiB, the batch (NewBatchWithSize): the write itself. Bigger than
//     half a memtable, it is queued as a flushable batch, without a copy
//     into a memtable, and lives until its flush ends.
//   - 64.5 MiB, the flush's data blocks (colblk.BlockEncoder.Init,
//     crbytes.AllocAligned): a record is never split across sstable
//     blocks, so each 1 MiB value makes a block of its own, and pebble
//     keeps no block buffer above 256 KiB (maxBlockRetainedSize) for the
//     next one: a fresh 1 MiB buffer per value, garbage once written.
//     Value separation (blob files) allocates the same.
//   - 10-25 MiB, the blocks' value columns growing (RawBytesBuilder.Put),
//     garbage likewise.
//   - 7.5-73 MiB, the WAL's copy of the batch in 32 KiB blocks
//     (record.LogWriter.queueBlock): as many as its flusher lags behind,
//     pooled; 2.4 MiB of compression.
//
// All but the batch are pebble's, with no option to bound them. Before,
// MPrepare grew its batch by doubling from pebble's default: 254 MiB of
// batches, 359-388 MiB in all.
func TestBigBatchMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB per path")
	}
	// A PK.MPREPARE alone on its connection's run is a call of MPrepare
	// (commands.Handler.Batch); in a pipeline, Batch; in MULTI, Exec.
	for _, path := range []struct {
		name string
		run  func(s *Store, entries []backend.Entry) (bool, error)
	}{
		{"MPrepare", func(s *Store, entries []backend.Entry) (bool, error) {
			return (backend.Calls{Runner: s}).MPrepare(context.Background(), entries, backend.Expiry{})
		}},
		{"Batch", func(s *Store, entries []backend.Entry) (bool, error) {
			res := make([]backend.Result, 1)
			s.Run(context.Background(), []backend.Op{{Kind: backend.OpMPrepare, Entries: entries}}, res, backend.Pipelined)
			return res[0].OK, res[0].Err
		}},
		{"Exec", func(s *Store, entries []backend.Entry) (bool, error) {
			res := make([]backend.Result, 1)
			err := s.Run(context.Background(), []backend.Op{{Kind: backend.OpMPrepare, Entries: entries}}, res, backend.Isolated)
			return res[0].OK, err
		}},
	} {
		t.Run(path.name, func(t *testing.T) { bigBatchMemory(t, path.run) })
	}
}

func bigBatchMemory(t *testing.T, run func(s *Store, entries []backend.Entry) (bool, error)) {
	s, err := OpenTuned(t.TempDir(), backend.Options{Retention: time.Hour}, Tuning{SweepInterval: -1})
	require.NoError(t, err)
	defer s.Close()
	const values, size = 64, 1 << 20
	value := bytes.Repeat([]byte("v"), size)
	entries := make([]backend.Entry, values)
	for i := range entries {
		entries[i] = backend.Entry{NS: "ns", Key: []byte("k" + strconv.Itoa(i)), Value: bytes.Clone(value)}
	}
	flushes := s.db.Metrics().Flush.Count

	heap := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	if os.Getenv("PK_BIG_PROFILE") != "" {
		runtime.MemProfileRate = 1
		defer func() { runtime.MemProfileRate = 512 << 10 }()
	}
	metrics.Read(heap)
	allocsBefore, before := heap[0].Value.Uint64(), heap[1].Value.Uint64()
	peak := before
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	ok, err := run(s, entries)
	require.NoError(t, err)
	require.True(t, ok)
	// The flush of the batch, which allocates after the commit returned.
	require.Eventually(t, func() bool { return s.db.Metrics().Flush.Count > flushes },
		time.Minute, 10*time.Millisecond)
	close(stop)
	<-sampled
	metrics.Read(heap)
	allocated := heap[0].Value.Uint64() - allocsBefore
	t.Logf("%d values of %d KiB: the store allocated %d MiB; the heap's peak (sampled) +%d MiB",
		values, size>>10, allocated>>20, (peak-before)>>20)
	// What it allocated, rather than the sampled peak: the same on every
	// run, and the peak as long as no collection runs, as here at GOGC 400
	// when the store allocates as it should.
	require.Less(t, allocated, uint64(4*values*size), "the store's allocations for one batch of 64 MiB")
	if f := os.Getenv("PK_BIG_PROFILE"); f != "" {
		runtime.GC() // the profile shows the allocations up to the last collection
		out, err := os.Create(f)
		require.NoError(t, err)
		require.NoError(t, pprof.WriteHeapProfile(out))
		require.NoError(t, out.Close())
	}
	got, found, err := (backend.Calls{Runner: s}).Get(context.Background(), "ns", []byte("k63"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, value, got.Value)
}
