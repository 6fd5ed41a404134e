package memory

import (
	"bytes"
	"container/heap"
	"context"
	"crypto/rand"
	"slices"
	"sync"

	"github.com/prepkey/prepkey/backend"
)

// MPrepare implements commands.Store. It is atomic: the shards of every
// entry are locked, each once and in index order (the order Move takes
// its two, so neither can deadlock the other), all entries are checked,
// then all written, with one reading of the clock.
func (s *Store) MPrepare(_ context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	keys, idx := s.entryKeys(entries)
	unlock := s.lockShards(slices.Clone(idx))
	defer unlock()
	return s.mprepare(keys, idx, entries, exp, s.nowMs()), nil
}

// entryKeys returns the map keys of entries and their shards.
func (s *Store) entryKeys(entries []backend.Entry) (keys [][]byte, idx []int) {
	keys = make([][]byte, len(entries))
	idx = make([]int, len(entries))
	for i, e := range entries {
		keys[i] = mapKey(nil, e.NS, e.Key)
		idx[i] = s.shardOf(keys[i])
	}
	return keys, idx
}

// mprepare is MPrepare with the shards idx of keys held.
func (s *Store) mprepare(keys [][]byte, idx []int, entries []backend.Entry, exp backend.Expiry, nowMs int64) bool {
	found := make([]*entry, len(entries))
	for i, k := range keys {
		en := s.shards[idx[i]].lookup(k, nowMs, &s.opts)
		if en != nil && backend.LiveAt(en.ttlAt, nowMs) {
			return false
		}
		found[i] = en
	}
	ttlAt := exp.TTLAt(nowMs, backend.Forever)
	for i, k := range keys {
		sh := &s.shards[idx[i]]
		if found[i] == nil {
			sh.put(k, entries[i].Value, ttlAt)
		} else {
			sh.replace(found[i], entries[i].Value, ttlAt)
		}
	}
	return true
}

// Scan implements commands.Store. The records are in the tree's order
// per shard (tree); a page merges the shards: it takes the first record after pos
// from each shard (one lock at a time), then repeatedly the smallest, and
// the next after it from that shard. The position is the last key
// returned, so a record present for the whole scan is returned whatever is
// inserted or deleted meanwhile, and a page holds at most shardCount+count
// records, whatever the size of the namespace. A page's records are then
// sorted by key.
func (s *Store) Scan(_ context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	prefix := string(mapKey(nil, ns, nil))
	from := ""
	if pos != nil {
		from = prefix + string(pos)
	}
	hs := headsPool.Get().(*headHeap)
	defer func() {
		clear(*hs) // drop the values for the GC
		*hs = (*hs)[:0]
		headsPool.Put(hs)
	}()
	for i := range s.shards {
		if h, ok := s.head(i, prefix, from); ok {
			*hs = append(*hs, h)
		}
	}
	heap.Init(hs)
	page := backend.Page{Records: make([]backend.ScanRecord, 0, min(count, hs.Len()))}
	for len(page.Records) < count && hs.Len() > 0 {
		h := heap.Pop(hs).(head)
		page.Records = append(page.Records, backend.ScanRecord{
			Key:    []byte(h.key[len(prefix):]),
			Record: backend.Record{Value: h.value, TTLAt: h.ttlAt, Live: h.live},
		})
		if next, ok := s.head(h.shard, prefix, h.key); ok {
			heap.Push(hs, next)
		}
	}
	if hs.Len() == 0 {
		page.Done = true
	} else {
		page.Next = page.Records[len(page.Records)-1].Key
	}
	// The tree's order is a hash's, new at each start: a page is sorted by
	// key, so that replies are the same from run to run, and a namespace
	// that fits in one page comes back in key order, as on file:.
	slices.SortFunc(page.Records, func(a, b backend.ScanRecord) int { return bytes.Compare(a.Key, b.Key) })
	return page, nil
}

// head is a shard's next record in a scan, read under the shard's lock.
// It holds no copy: the map key is immutable and a value is replaced,
// never written in place, so a scan allocates only for the records it
// returns (a page reads one head per shard, most of which it drops).
type head struct {
	shard int
	order uint64 // in the tree
	key   string // map key
	value []byte
	ttlAt int64
	live  bool
}

// headsPool keeps the heaps of scan pages (shardCount heads each).
var headsPool = sync.Pool{New: func() any { h := make(headHeap, 0, shardCount); return &h }}

// head reads shard i's first record of the namespace after from (a map
// key), or its first when from is empty.
func (s *Store) head(i int, prefix, from string) (head, bool) {
	sh := &s.shards[i]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nowMs := s.nowMs()
	it := sh.after(prefix, from, nowMs, &s.opts)
	en := it.en
	if en == nil {
		return head{}, false
	}
	return head{shard: i, order: it.h, key: en.key(), value: en.value(), ttlAt: en.ttlAt, live: backend.LiveAt(en.ttlAt, nowMs)}, true
}

type headHeap []head

func (h headHeap) Len() int { return len(h) }
func (h headHeap) Less(i, j int) bool {
	return h[i].order < h[j].order || h[i].order == h[j].order && h[i].key < h[j].key
}
func (h headHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *headHeap) Push(x any)   { *h = append(*h, x.(head)) }
func (h *headHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Secret implements commands.Store. The memory store's records end with
// the process, and so do its cursors: the secret is made once per store.
func (s *Store) Secret(context.Context) ([]byte, error) { return s.secret, nil }

func newSecret() []byte {
	b := make([]byte, backend.SecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return b
}
