package memory

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// BenchmarkFootprint reports the heap the store holds per record, beyond
// the key and the value themselves (docs/benchmarks.md): b.N is ignored, it
// fills one store with 1M records of a 16-byte key and a 16-byte value, a
// third of them with a TTL (in the expiry heap).
//
//	go test -run '^$' -bench Footprint -benchtime 1x ./backend/memory/
func BenchmarkFootprint(b *testing.B) {
	const n = 1_000_000
	const keyValueBytes = 16 + 16
	for range b.N {
		before := heapInUse()
		s := newStore(backend.Options{}, 1<<62)
		ctx := context.Background()
		for i := range n {
			exp := backend.Expiry{}
			if i%3 == 0 {
				exp = backend.Expiry{Kind: backend.ExpireAfter, Millis: 3_600_000}
			}
			key := fmt.Appendf(nil, "user-%011d", i)
			if _, err := (backend.Calls{Runner: s}).Prepare(ctx, "username", key, []byte("{\"userId\":12345}"), exp); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		runtime.KeepAlive(s)
		b.ReportMetric(float64(after-before)/n-keyValueBytes, "overhead-bytes/record")
		b.ReportMetric(float64(after-before)/n, "heap-bytes/record")
		_ = s.Close()
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkScan is one full scan of a namespace of 100k records (among
// 100k of another namespace), page after page: the bytes allocated per scan
// show what a scan costs the GC (docs/benchmarks.md).
func BenchmarkScan(b *testing.B) {
	const n = 100_000
	s := newStore(backend.Options{}, 1<<62)
	b.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for i := range n {
		for _, ns := range []string{"scan", "other"} {
			if _, err := (backend.Calls{Runner: s}).Prepare(ctx, ns, fmt.Appendf(nil, "key:%d", i), []byte("value"), backend.Expiry{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, count := range []int{10, 1000} {
		b.Run(fmt.Sprintf("count=%d", count), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var pos []byte
				seen := 0
				for {
					page, err := s.Scan(ctx, "scan", pos, count)
					if err != nil {
						b.Fatal(err)
					}
					seen += len(page.Records)
					if page.Done {
						break
					}
					pos = page.Next
				}
				if seen != n {
					b.Fatalf("scan saw %d records, want %d", seen, n)
				}
			}
		})
	}
}

// TestScanHoldsOnePage: a full scan of 200k records, page after page,
// never holds more live heap than a few pages' worth, whatever the size of
// the namespace (the contract: a scan of 1M records holds one page).
func TestScanHoldsOnePage(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 200k records")
	}
	const n = 200_000
	s := newStore(backend.Options{}, 1<<62)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	for i := range n {
		if _, err := (backend.Calls{Runner: s}).Prepare(ctx, "scan", fmt.Appendf(nil, "key:%07d", i), []byte("a value of some bytes"), backend.Expiry{}); err != nil {
			t.Fatal(err)
		}
	}
	base := heapInUse()
	var pos []byte
	seen, pages, worst := 0, 0, uint64(0)
	for {
		page, err := s.Scan(ctx, "scan", pos, 1000)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(page.Records)
		if pages++; pages%20 == 0 {
			if h := heapInUse(); h > base && h-base > worst {
				worst = h - base
			}
		}
		if page.Done {
			break
		}
		pos = page.Next
	}
	if seen != n {
		t.Fatalf("saw %d records, want %d", seen, n)
	}
	// A page of 1000 records is ~100 KB of headers and copies; 4 MB is
	// far below what holding the scan's records (over 20 MB) would take.
	if worst > 4<<20 {
		t.Fatalf("live heap grew by %d bytes during the scan", worst)
	}
	t.Logf("live heap during the scan: at most %d bytes above the store's", worst)
}
