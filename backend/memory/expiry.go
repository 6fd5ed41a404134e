package memory

// expiryHeap orders the records that can expire by ttlAt: a binary min-heap
// of slots, each holding a record's ttlAt beside its entry. With one
// retention for the whole store, that is also the order of deletion.
//
// Why the ttlAt is in the slot: the heap is ordered by reading its own
// array, not the entries, which lie anywhere in memory. A new record
// (PX from now: the latest ttlAt) is compared with one parent, a slot
// written about as many pushes ago as the heap is long: in an entry that
// was a cache miss per push, in the array neighbouring parents share a
// cache line. With container/heap over *entry the comparisons were 2.2 %
// of the sidecar's CPU at pipeline 1 (memory:, PX 60000, perf); the CPU per
// request end to end measured the same either way
// (docs/history/benchmarks-log.md, "What the sixth session tried"): this is kept for being simpler, not
// faster.
type expiryHeap []expirySlot

type expirySlot struct {
	ttlAt int64 // en.ttlAt, kept equal by push and fix
	en    *entry
}

// set puts s at i and tells its entry where it is.
func (h expiryHeap) set(i int, s expirySlot) {
	h[i] = s
	s.en.index = int32(i)
}

// push adds en, which is not in the heap.
func (h *expiryHeap) push(en *entry) {
	*h = append(*h, expirySlot{ttlAt: en.ttlAt, en: en})
	h.up(len(*h) - 1)
}

// remove takes out the entry at i and returns it.
func (h *expiryHeap) remove(i int) *entry {
	old := *h
	n := len(old) - 1
	en := old[i].en
	if i != n {
		old.set(i, old[n])
	}
	old[n] = expirySlot{}
	*h = old[:n]
	if i != n && !h.down(i) {
		h.up(i)
	}
	en.index = -1
	return en
}

// fix moves the entry at i to its place after its ttlAt changed.
func (h expiryHeap) fix(i int) {
	h[i].ttlAt = h[i].en.ttlAt
	if !h.down(i) {
		h.up(i)
	}
}

func (h expiryHeap) up(j int) {
	s := h[j]
	for j > 0 {
		i := (j - 1) / 2
		if h[i].ttlAt <= s.ttlAt {
			break
		}
		h.set(j, h[i])
		j = i
	}
	h.set(j, s)
}

// down reports whether the entry at i0 moved.
func (h expiryHeap) down(i0 int) bool {
	s, i := h[i0], i0
	for {
		j := 2*i + 1
		if j >= len(h) {
			break
		}
		if j2 := j + 1; j2 < len(h) && h[j2].ttlAt < h[j].ttlAt {
			j = j2
		}
		if s.ttlAt <= h[j].ttlAt {
			break
		}
		h.set(i, h[j])
		i = j
	}
	h.set(i, s)
	return i > i0
}
