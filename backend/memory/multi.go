package memory

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/prepkey/prepkey/backend"
)

// mprepareAlone is a PK.MPREPARE run on its own (Run, Pipelined). It is
// atomic: the shards of every entry are locked, each once and in index
// order (the order Move takes its two, so neither can deadlock the other),
// all entries are checked, then all written, with one reading of the clock.
func (s *Store) mprepareAlone(entries []backend.Entry, exp backend.Expiry) bool {
	keys, idx := s.entryKeys(entries)
	built := buildEntries(keys, entries)
	unlock := s.lockShards(slices.Clone(idx))
	defer unlock()
	return s.mprepare(keys, idx, entries, built, exp, s.nowMs())
}

// buildEntries returns the records of entries, built before their shards
// are locked when their values are large (prebuildAt): copying 64 MiB of
// values under the locks of up to 64 shards held the readers of every key
// of those shards, among them the event loop's, for the copy's length
// (issue 23, N1: seconds, on a machine where fresh memory is slow). nil
// when they are small: mprepare builds them under the locks, and a
// refused MPREPARE builds none.
func buildEntries(keys []mkey, entries []backend.Entry) []*entry {
	n := 0
	for _, e := range entries {
		n += len(e.Value)
	}
	if n < prebuildAt {
		return nil
	}
	built := make([]*entry, len(entries))
	for i, e := range entries {
		built[i] = newEntry(string(keys[i].b), e.Value, backend.Forever)
	}
	return built
}

// prebuildAt is the size of an MPREPARE's values from which its records
// are built before its shards are locked.
const prebuildAt = 1 << 20

// entryKeys returns the map keys of entries and their shards.
func (s *Store) entryKeys(entries []backend.Entry) (keys []mkey, idx []int) {
	keys = make([]mkey, len(entries))
	idx = make([]int, len(entries))
	for i, e := range entries {
		keys[i] = s.key(mapKey(nil, e.NS, e.Key))
		idx[i] = keys[i].shard()
	}
	return keys, idx
}

// mprepare is MPrepare with the shards idx of keys held.
//
// built, when not nil, holds the entries' records, built beforehand
// (buildEntries).
func (s *Store) mprepare(keys []mkey, idx []int, entries []backend.Entry, built []*entry, exp backend.Expiry, nowMs int64) bool {
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
		switch {
		case built != nil && found[i] == nil:
			sh.putEntry(built[i], ttlAt)
		case built != nil:
			sh.replaceWith(found[i], built[i], ttlAt)
		case found[i] == nil:
			sh.put(k, entries[i].Value, ttlAt)
		default:
			sh.replace(found[i], entries[i].Value, ttlAt)
		}
	}
	return true
}

// Scan implements backend.Store. The shards, one after the other, hold
// the records in the order of their hashes (table); a page walks them in
// that order from its position, the hash of the last record it passed
// (8 bytes): inserts, deletes and a table's growth move no record in that
// order, so a record present for the whole scan is returned whatever
// happens meanwhile. A page never ends between two records of one hash.
//
// The namespaces share the tables: a page passes over other namespaces'
// records, as Redis's SCAN passes over keys MATCH drops, and passes over
// about scanWork records for COUNT (it may then be empty), as file: does. It reads one
// shard at a time, under its lock, and holds only its own records. They
// are then sorted by key, so that a namespace that fits in one page comes
// back in key order, as on file:.
func (s *Store) Scan(_ context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	prefix := string(mapKey(nil, ns, nil))
	var last uint64 // the records of hash at most last are passed
	i, started := 0, pos != nil
	if started {
		if len(pos) != 8 {
			return backend.Page{}, fmt.Errorf("memory: scan position of %d bytes", len(pos))
		}
		last = binary.BigEndian.Uint64(pos)
		i = int(last >> (64 - shardBits))
	}
	page := backend.Page{Records: make([]backend.ScanRecord, 0, min(count, 64))}
	work, budget, moved := 0, scanWork*count, false
	full := func() bool { return moved && (len(page.Records) >= count || work >= budget) }
walk:
	for ; i < shardCount; i++ {
		if full() {
			break
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		nowMs := s.nowMs()
		j := 0
		if started && int(last>>(64-shardBits)) == i {
			j = sh.recs.after(last)
		}
		for ; j < len(sh.recs.slots); j++ {
			sl := &sh.recs.slots[j]
			if sl.en == nil {
				continue
			}
			if sl.h != last || !started {
				if full() {
					sh.mu.Unlock()
					break walk
				}
				last, started, moved = sl.h, true, true
			}
			work++
			en := sl.en
			if key := en.key(); strings.HasPrefix(key, prefix) && !s.opts.Gone(en.ttlAt, nowMs) {
				page.Records = append(page.Records, backend.ScanRecord{
					Key:    []byte(key[len(prefix):]),
					Record: backend.Record{Value: en.value(), TTLAt: en.ttlAt, Live: backend.LiveAt(en.ttlAt, nowMs)},
				})
			}
		}
		sh.mu.Unlock()
		// The shard is passed: its last possible hash is.
		last, started, moved = uint64(i+1)<<(64-shardBits)-1, true, true
	}
	if i == shardCount {
		page.Done = true
	} else {
		page.Next = binary.BigEndian.AppendUint64(nil, last)
	}
	slices.SortFunc(page.Records, func(a, b backend.ScanRecord) int { return bytes.Compare(a.Key, b.Key) })
	return page, nil
}

// scanWork is how many records a page may pass over per record of COUNT.
const scanWork = 10

// Secret implements backend.Store. The memory store's records end with
// the process, and so do its cursors: the secret is made once per store.
func (s *Store) Secret(context.Context) ([]byte, error) { return s.secret, nil }

func newSecret() []byte {
	b := make([]byte, backend.SecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return b
}
