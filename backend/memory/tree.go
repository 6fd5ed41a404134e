package memory

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"

	"github.com/tidwall/btree"
)

// tree is a shard's B-tree of records, in the order PK.SCAN walks: by a
// hash of the namespace, then by a hash of the map key, then by the map
// key itself.
//
// Each item carries that 64-bit order next to its record's pointer, so
// that a descent compares integers in the node it is in: ordered by map
// key, every comparison followed the item's pointer to its entry, then to
// its key bytes, two cache misses a comparison, a dozen comparisons a
// lookup; at pipeline 1 the lookup was 16% of the sidecar's CPU, at
// pipeline 16 with a million records more (docs/benchmarks.md, memory:
// speed). The namespace's hash comes first so that a namespace is one
// range of the tree and a scan reads only its records (and those of a
// namespace of the same 32-bit hash, which it skips). An item is 16 bytes
// where a pointer was 8: some 11 more bytes a record, measured by
// BenchmarkFootprint.
type tree struct {
	t    *btree.BTreeG[item]
	seed maphash.Seed
}

// item is one record in the tree: its order (namespace hash in the high
// 32 bits, map key hash in the low ones) and the record.
type item struct {
	h  uint64
	en *entry
}

// keyBits are the bits of an item's order that come from the map key.
const keyBits = 1<<32 - 1

func newTree(seed maphash.Seed) tree {
	less := func(a, b item) bool { return a.h < b.h || a.h == b.h && a.en.key() < b.en.key() }
	return tree{t: btree.NewBTreeGOptions(less, btree.Options{NoLocks: true}), seed: seed}
}

// order is the order of the map key k (see mapKey) in the tree.
func (t *tree) order(k []byte) uint64 {
	n, w := binary.Uvarint(k)
	ns := k[:w+int(n)] // mapKey wrote it: in range
	return t.nsOrder(unsafe.String(unsafe.SliceData(ns), len(ns))) | maphash.Bytes(t.seed, k)>>32
}

// nsOrder is where the namespace of the map key prefix (mapKey with no
// key) begins in the tree: the order of its records is nsOrder, plus
// their key's hash.
func (t *tree) nsOrder(prefix string) uint64 {
	return maphash.String(t.seed, prefix) &^ keyBits
}

func (t *tree) delete(en *entry) {
	k := en.key()
	t.t.Delete(item{h: t.order(unsafe.Slice(unsafe.StringData(k), len(k))), en: en})
}

// Len is the number of records.
func (t *tree) Len() int { return t.t.Len() }

// Items are the records, in the tree's order (for tests).
func (t *tree) Items() []*entry {
	var ens []*entry
	t.t.Scan(func(it item) bool {
		ens = append(ens, it.en)
		return true
	})
	return ens
}
