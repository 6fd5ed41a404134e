package memory

import (
	"hash/maphash"
	"unsafe"
)

// table is a shard's records: a hash table kept in the order of the keys'
// hashes, so that PK.SCAN can walk it and resume after a position that
// inserts, deletes and growth do not move.
//
// It is an ordered linear-probing table (Amble and Knuth, 1974): a record's
// home slot is a monotonic function of its 64-bit hash (the bits below
// the shard's), and the records of a run of occupied slots are kept sorted
// by (hash, key). So the whole table is in hash order, a lookup stops at
// the first slot past its hash, and a slot keeps the hash next to the
// record's pointer: a lookup reads one or two cache lines of slots, then
// the record it finds. The B-tree it replaced (for PK.SCAN's order) cost
// a dozen scattered reads per lookup: 35 % of the sidecar's CPU at
// pipeline 16 with a million records (docs/benchmarks.md, `memory:` speed).
//
// The table is 16 bytes a slot, at most 3/4 full (it doubles) and at least
// 1/8 full (it halves): 21 to 43 bytes a record as it grows
// (BenchmarkFootprint).
type table struct {
	slots []slot // size slots, then spare ones a run may spill into
	bits  uint   // size is 1<<bits
	n     int
}

type slot struct {
	h  uint64 // the map key's hash; 0 with en nil: empty
	en *entry
}

const (
	minTableBits = 3
	// tableSpare is how many slots a run may spill past the last home
	// slot before the table grows.
	tableSpare = 32
)

func newTable() table {
	return table{slots: make([]slot, 1<<minTableBits+tableSpare), bits: minTableBits}
}

// hashKey is a map key's hash; its top shardBits bits choose its shard.
func hashKey(seed maphash.Seed, k []byte) uint64 { return maphash.Bytes(seed, k) }

// home is the first slot h may be in.
func (t *table) home(h uint64) int { return int(h << shardBits >> (64 - t.bits)) }

// less orders the records: by hash, then by map key.
func less(h uint64, k string, s *slot) bool {
	return h < s.h || h == s.h && k < s.en.key()
}

// find returns the slot of the record of map key k (hash h), or where it
// is to be inserted, and whether it is there.
func (t *table) find(h uint64, k string) (int, bool) {
	i := t.home(h)
	for ; i < len(t.slots); i++ {
		s := &t.slots[i]
		if s.en == nil || h < s.h {
			return i, false
		}
		if h == s.h {
			if key := s.en.key(); key == k {
				return i, true
			} else if k < key {
				return i, false
			}
		}
	}
	return i, false
}

// get returns the record of k (hash h), or nil.
func (t *table) get(h uint64, k []byte) *entry {
	i, ok := t.find(h, unsafe.String(unsafe.SliceData(k), len(k)))
	if !ok {
		return nil
	}
	return t.slots[i].en
}

// insert adds en (hash h), which is not in the table.
func (t *table) insert(h uint64, en *entry) {
	if (t.n+1)*4 > 3<<t.bits {
		t.grow()
	}
	for {
		i, _ := t.find(h, en.key())
		// The run from i shifts one slot right, up to its first empty
		// slot.
		j := i
		for j < len(t.slots) && t.slots[j].en != nil {
			j++
		}
		if j == len(t.slots) {
			t.grow() // the run would spill past the spare slots
			continue
		}
		copy(t.slots[i+1:j+1], t.slots[i:j])
		t.slots[i] = slot{h: h, en: en}
		t.n++
		return
	}
}

// remove deletes en (hash h) from the table, if it is there.
func (t *table) remove(h uint64, en *entry) {
	i := t.home(h)
	for i < len(t.slots) && t.slots[i].en != en {
		if t.slots[i].en == nil || h < t.slots[i].h {
			return
		}
		i++
	}
	if i == len(t.slots) {
		return
	}
	// The records after it move one slot back while they are past their
	// home (backward-shift deletion): the run stays sorted and no record
	// is left behind an empty slot that a lookup would stop at.
	j := i + 1
	for j < len(t.slots) && t.slots[j].en != nil && t.home(t.slots[j].h) < j {
		j++
	}
	copy(t.slots[i:j-1], t.slots[i+1:j])
	t.slots[j-1] = slot{}
	t.n--
	if t.bits > minTableBits && t.n*8 < 1<<t.bits {
		// Under 1/8 full: halve it, so that a store whose records have
		// expired gives their slots back (it is then under 1/4 full: a
		// few inserts do not grow it again).
		t.resize(t.bits - 1)
	}
}

// grow doubles the table.
func (t *table) grow() { t.resize(t.bits + 1) }

// resize remakes the table with 1<<bits home slots, or more until its
// records fit with their runs within the spare slots.
func (t *table) resize(bits uint) {
	old := t.slots
	for ; ; bits++ {
		t.bits = bits
		t.slots = make([]slot, 1<<bits+tableSpare)
		next, fits := 0, true
		for _, s := range old { // in order: homes only go up
			if s.en == nil {
				continue
			}
			i := max(t.home(s.h), next)
			if i == len(t.slots) {
				fits = false
				break
			}
			t.slots[i] = s
			next = i + 1
		}
		if fits {
			return
		}
	}
}

// after returns the index of the first slot with a record whose hash is
// above h, or len(slots): records of hash above h are at their home or
// past it, and none of hash at most h is past them.
func (t *table) after(h uint64) int {
	i := t.home(h)
	for i < len(t.slots) && (t.slots[i].en == nil || t.slots[i].h <= h) {
		i++
	}
	return i
}

// Len is the number of records.
func (t *table) Len() int { return t.n }

// Items are the records, in the table's order (for tests).
func (t *table) Items() []*entry {
	var ens []*entry
	for _, s := range t.slots {
		if s.en != nil {
			ens = append(ens, s.en)
		}
	}
	return ens
}
