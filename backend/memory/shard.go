package memory

import (
	"container/heap"
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/prepkey/prepkey/backend"
)

// entry is one record. It knows its place in its shard's expiry heap so that
// a new ttlAt or a delete fixes the heap in place: the heap never holds stale
// entries and never grows past the number of records that can expire.
//
// Its map key and its value are one allocation (kv) and the entry is 32
// bytes: with a key string, a value slice and an int index it was 56 bytes
// (a 64-byte size class) and two allocations besides, and
// BenchmarkFootprint's overhead per record fell from 101.5 to about 77
// bytes (docs/benchmarks.md). kv is never written after it is made: a new
// value makes a new kv, so a value handed out stays as it was.
type entry struct {
	kv    string // map key (encoded namespace and key), then the value
	klen  uint32 // length of the map key in kv
	index int32  // in the shard's heap; -1 when forever
	ttlAt int64
}

// key is the entry's map key.
func (en *entry) key() string { return en.kv[:en.klen] }

// value is the record's value. It aliases kv, which is never written; its
// callers only read it (replies, comparisons).
func (en *entry) value() []byte {
	v := en.kv[en.klen:]
	if len(v) == 0 {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(v), len(v))
}

// packKV makes an entry's kv, the map key k then value, in one allocation.
func packKV(k string, value []byte) string {
	b := make([]byte, 0, len(k)+len(value))
	b = append(append(b, k...), value...)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// shard is one lock's worth of records: those whose hash begins with the
// shard's index (shardBits bits).
type shard struct {
	mu   sync.Mutex
	seed maphash.Seed // the store's
	recs table
	exp  expiryHeap
	// pad keeps neighbouring shards' mutexes off one cache line.
	_ [64]byte
}

// lookup returns the record of k, deleting it first if it has outlived its
// retention, so that no call sees a record the sweep has not reached yet.
func (sh *shard) lookup(k []byte, nowMs int64, opts *backend.Options) *entry {
	en := sh.recs.get(hashKey(sh.seed, k), k)
	if en != nil && opts.Gone(en.ttlAt, nowMs) {
		sh.remove(en)
		return nil
	}
	return en
}

// put stores a fresh record for k (no record must be there).
func (sh *shard) put(k, value []byte, ttlAt int64) {
	en := &entry{kv: packKV(unsafe.String(unsafe.SliceData(k), len(k)), value), klen: uint32(len(k)), index: -1}
	sh.recs.insert(hashKey(sh.seed, k), en)
	sh.setTTL(en, ttlAt)
}

// replace gives en a new value and ttlAt.
func (sh *shard) replace(en *entry, value []byte, ttlAt int64) {
	en.kv = packKV(en.key(), value)
	sh.setTTL(en, ttlAt)
}

// setTTL sets en's ttlAt and moves it in, within or out of the heap.
func (sh *shard) setTTL(en *entry, ttlAt int64) {
	en.ttlAt = ttlAt
	switch {
	case ttlAt == backend.Forever && en.index >= 0:
		heap.Remove(&sh.exp, int(en.index))
	case ttlAt == backend.Forever:
	case en.index >= 0:
		heap.Fix(&sh.exp, int(en.index))
	default:
		heap.Push(&sh.exp, en)
	}
}

func (sh *shard) remove(en *entry) {
	k := en.key()
	sh.recs.remove(hashKey(sh.seed, unsafe.Slice(unsafe.StringData(k), len(k))), en)
	if en.index >= 0 {
		heap.Remove(&sh.exp, int(en.index))
	}
}

// expiryHeap orders the records that can expire by ttlAt. With one
// retention for the whole store, that is also the order of deletion.
type expiryHeap []*entry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].ttlAt < h[j].ttlAt }
func (h expiryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = int32(i)
	h[j].index = int32(j)
}

func (h *expiryHeap) Push(x any) {
	en := x.(*entry)
	en.index = int32(len(*h))
	*h = append(*h, en)
}

func (h *expiryHeap) Pop() any {
	old := *h
	n := len(old) - 1
	en := old[n]
	old[n] = nil
	en.index = -1
	*h = old[:n]
	return en
}
