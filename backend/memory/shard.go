package memory

import (
	"container/heap"
	"strings"
	"sync"
	"unsafe"

	"github.com/tidwall/btree"

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

// shard is one lock's worth of records.
//
// The records are in a B-tree, not a hash map: PK.SCAN walks a namespace
// in the tree's order, which lets its cursor be the last key returned,
// good across inserts and deletes. A B-tree costs about 20 bytes per
// record against some 40 for a map's buckets, so it is both the index and
// the smaller one (see tree).
type shard struct {
	mu   sync.Mutex
	recs tree
	// probe is the search key of lookups and scratch holds its bytes, both
	// reused under mu so that a lookup does not allocate: pointing the
	// probe at the caller's buffer instead would make that buffer escape
	// to the heap (the B-tree compares through a func value), one
	// allocation per command.
	probe   entry
	scratch []byte
	// hint is the path of the last lookup: a put of the key just looked
	// up follows it instead of searching again.
	hint btree.PathHint
	exp  expiryHeap
	// pad keeps neighbouring shards' mutexes off one cache line.
	_ [64]byte
}

// lookup returns the record of k, deleting it first if it has outlived its
// retention, so that no call sees a record the sweep has not reached yet.
func (sh *shard) lookup(k []byte, nowMs int64, opts *backend.Options) *entry {
	en := sh.get(k)
	if en != nil && opts.Gone(en.ttlAt, nowMs) {
		sh.remove(en)
		return nil
	}
	return en
}

// get returns the entry of k, or nil.
func (sh *shard) get(k []byte) *entry {
	if len(k) == 0 {
		return nil
	}
	sh.scratch = append(sh.scratch[:0], k...)
	sh.probe.kv, sh.probe.klen = unsafe.String(unsafe.SliceData(sh.scratch), len(sh.scratch)), uint32(len(sh.scratch))
	it, _ := sh.recs.t.GetHint(item{h: sh.recs.order(k), en: &sh.probe}, &sh.hint)
	sh.probe.kv, sh.probe.klen = "", 0
	return it.en
}

// after returns the first entry of the namespace whose map keys start
// with prefix that is above from (the map key of the last record
// returned), or the namespace's first when from is empty, skipping those
// gone at nowMs.
func (sh *shard) after(prefix, from string, nowMs int64, opts *backend.Options) (found item) {
	ns := sh.recs.nsOrder(prefix)
	start := item{h: ns, en: &sh.probe} // the probe's empty key is below any
	if from != "" {
		sh.probe.kv, sh.probe.klen = from, uint32(len(from))
		start.h = sh.recs.order(unsafe.Slice(unsafe.StringData(from), len(from)))
	}
	sh.recs.t.Ascend(start, func(it item) bool {
		switch {
		case it.h&^keyBits != ns:
			return false // past the namespace's range
		case !strings.HasPrefix(it.en.key(), prefix): // another namespace of the same hash
		case it.en.key() == from, opts.Gone(it.en.ttlAt, nowMs):
		default:
			found = it
			return false
		}
		return true
	})
	sh.probe.kv, sh.probe.klen = "", 0
	return found
}

// put stores a fresh record for k (no record must be there).
func (sh *shard) put(k, value []byte, ttlAt int64) {
	en := &entry{kv: packKV(unsafe.String(unsafe.SliceData(k), len(k)), value), klen: uint32(len(k)), index: -1}
	sh.recs.t.SetHint(item{h: sh.recs.order(k), en: en}, &sh.hint)
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
	sh.recs.delete(en)
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
