package memory

import (
	"hash/maphash"
	"sync"
	"unsafe"

	"github.com/prepkey/prepkey/backend"
)

// entry is one record. It knows its place in its shard's expiry heap so that
// a new ttlAt or a delete fixes the heap in place: the heap never holds stale
// entries and never grows past the number of records that can expire.
//
// An entry is its header followed by its map key and its value, in one
// allocation without pointers (newEntry): a lookup that finds a record
// reads its ttlAt and its key from one place, the GC does not scan
// records, and a record costs one allocation. (The entry was 32 bytes with
// its key and value in a second allocation: a hit read both, two cache
// misses. BenchmarkFootprint's records take the same size class either
// way: 86.8 bytes per record beyond key and value.) The bytes after the header are never
// written after the entry is made: a new value makes a new entry
// (shard.replace), so a value handed out stays as it was.
type entry struct {
	klen  uint32 // length of the map key after the header
	vlen  uint32 // length of the value after the key
	index int32  // in the shard's heap; -1 when forever
	_     uint32
	ttlAt int64
}

// entryHeader is where an entry's map key begins.
const entryHeader = int(unsafe.Sizeof(entry{}))

// newEntry makes the entry of map key k and value, not in the heap.
func newEntry(k string, value []byte, ttlAt int64) *entry {
	b := make([]byte, entryHeader+len(k)+len(value))
	copy(b[entryHeader+copy(b[entryHeader:], k):], value)
	en := (*entry)(unsafe.Pointer(unsafe.SliceData(b)))
	en.klen, en.vlen, en.index, en.ttlAt = uint32(len(k)), uint32(len(value)), -1, ttlAt
	return en
}

// bytes is the entry's map key then value.
func (en *entry) bytes() *byte { return (*byte)(unsafe.Add(unsafe.Pointer(en), entryHeader)) }

// key is the entry's map key.
func (en *entry) key() string { return unsafe.String(en.bytes(), en.klen) }

// value is the record's value. It aliases the entry, whose value is never
// written; its callers only read it (replies, comparisons).
func (en *entry) value() []byte {
	if en.vlen == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(en.bytes()), en.klen)), en.vlen)
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
func (sh *shard) lookup(k mkey, nowMs int64, opts *backend.Options) *entry {
	en := sh.recs.get(k.h, k.b)
	if en != nil && opts.Gone(en.ttlAt, nowMs) {
		sh.remove(en)
		return nil
	}
	return en
}

// put stores a fresh record for k (no record must be there).
func (sh *shard) put(k mkey, value []byte, ttlAt int64) {
	en := newEntry(unsafe.String(unsafe.SliceData(k.b), len(k.b)), value, backend.Forever)
	sh.recs.insert(k.h, en)
	sh.setTTL(en, ttlAt)
}

// putEntry stores en, built for a key with no record (newEntry).
func (sh *shard) putEntry(en *entry, ttlAt int64) {
	k := en.key()
	sh.recs.insert(hashKey(sh.seed, unsafe.Slice(unsafe.StringData(k), len(k))), en)
	sh.setTTL(en, ttlAt)
}

// replace gives en's record a new value and ttlAt: a new entry takes en's
// place in the table and in the heap; en is not to be used after.
func (sh *shard) replace(en *entry, value []byte, ttlAt int64) {
	sh.replaceWith(en, newEntry(en.key(), value, en.ttlAt), ttlAt)
}

// replaceWith is replace with nen, an entry built for en's key (newEntry).
func (sh *shard) replaceWith(en, nen *entry, ttlAt int64) {
	k := en.key()
	nen.ttlAt = en.ttlAt
	if i, ok := sh.recs.find(hashKey(sh.seed, unsafe.Slice(unsafe.StringData(k), len(k))), k); ok {
		sh.recs.slots[i].en = nen
	}
	if en.index >= 0 {
		sh.exp.set(int(en.index), expirySlot{ttlAt: nen.ttlAt, en: nen})
		en.index = -1
	}
	sh.setTTL(nen, ttlAt)
}

// setTTL sets en's ttlAt and moves it in, within or out of the heap.
func (sh *shard) setTTL(en *entry, ttlAt int64) {
	en.ttlAt = ttlAt
	switch {
	case ttlAt == backend.Forever && en.index >= 0:
		sh.exp.remove(int(en.index))
	case ttlAt == backend.Forever:
	case en.index >= 0:
		sh.exp.fix(int(en.index))
	default:
		sh.exp.push(en)
	}
}

func (sh *shard) remove(en *entry) {
	k := en.key()
	sh.recs.remove(hashKey(sh.seed, unsafe.Slice(unsafe.StringData(k), len(k))), en)
	if en.index >= 0 {
		sh.exp.remove(int(en.index))
	}
}
