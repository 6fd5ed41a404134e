// Package memory is the in-process store (--backend memory:). Its records
// are lost at exit. It is sharded by a hash of (namespace, key), each shard
// with its own mutex, so that every call is atomic on its key(s) while
// calls on other keys run in parallel.
package memory

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// shardCount is a power of two well above the cores a sidecar runs on, so
// that two busy keys rarely share a lock. A record's shard is the first
// shardBits bits of its hash, so that the shards, one after the other,
// hold the records in the order of their hashes (see table, Scan).
const (
	shardBits  = 8
	shardCount = 1 << shardBits
)

// sweepInterval is how often expired records past their retention are
// deleted. Calls treat them as absent before that anyway.
const sweepInterval = time.Second

// Store is the in-memory store. It satisfies commands.Store.
type Store struct {
	opts   backend.Options
	now    func() time.Time
	seed   maphash.Seed
	secret []byte
	shards [shardCount]shard

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	swept     atomic.Int64 // records deleted by the sweep, for metrics
}

// New returns an empty store and starts its sweeper; Close stops it.
func New(opts backend.Options) *Store {
	return newStore(opts, sweepInterval)
}

func newStore(opts backend.Options, interval time.Duration) *Store {
	s := &Store{
		opts:   opts,
		now:    opts.Clock(),
		seed:   maphash.MakeSeed(),
		secret: newSecret(),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	for i := range s.shards {
		s.shards[i].recs, s.shards[i].seed = newTable(), s.seed
	}
	go s.sweepEvery(interval)
	return s
}

// Close stops the sweeper. The records stay readable until the store is
// dropped.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
	})
	return nil
}

// mapKey encodes (ns, key) injectively: the namespace's length, then the
// namespace, then the key. buf is reused when large enough.
func mapKey(buf []byte, ns string, key []byte) []byte {
	buf = binary.AppendUvarint(buf[:0], uint64(len(ns)))
	buf = append(buf, ns...)
	return append(buf, key...)
}

func (s *Store) shardOf(k []byte) int {
	return int(hashKey(s.seed, k) >> (64 - shardBits))
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// Prepare implements commands.Store.
func (s *Store) Prepare(_ context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.prepare(sh, k, value, exp, s.nowMs()), nil
}

// prepare is Prepare with sh, the shard of k, held.
func (s *Store) prepare(sh *shard, k, value []byte, exp backend.Expiry, nowMs int64) bool {
	en := sh.lookup(k, nowMs, &s.opts)
	switch {
	case en == nil:
		sh.put(k, value, exp.TTLAt(nowMs, backend.Forever))
	case backend.LiveAt(en.ttlAt, nowMs):
		return false
	default:
		sh.replace(en, value, exp.TTLAt(nowMs, backend.Forever))
	}
	return true
}

// Get implements commands.Store.
func (s *Store) Get(_ context.Context, ns string, key []byte) (backend.Record, bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	rec, ok := s.get(sh, k, s.nowMs())
	return rec, ok, nil
}

// get is Get with sh, the shard of k, held.
func (s *Store) get(sh *shard, k []byte, nowMs int64) (backend.Record, bool) {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil {
		return backend.Record{}, false
	}
	// The value is replaced, never written in place, so handing it out
	// without a copy is safe as long as the caller does not write to it.
	return backend.Record{Value: en.value(), TTLAt: en.ttlAt, Live: backend.LiveAt(en.ttlAt, nowMs)}, true
}

// Rollback implements commands.Store.
func (s *Store) Rollback(_ context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.rollback(sh, k, ifeq, s.nowMs()), nil
}

// rollback is Rollback with sh, the shard of k, held.
func (s *Store) rollback(sh *shard, k []byte, ifeq backend.Cond, nowMs int64) bool {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil || !ifeq.Holds(en.value()) {
		return false
	}
	sh.remove(en)
	return true
}

// Reprepare implements commands.Store.
func (s *Store) Reprepare(_ context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return s.reprepare(sh, k, value, ifeq, exp, s.nowMs()), nil
}

// reprepare is Reprepare with sh, the shard of k, held.
func (s *Store) reprepare(sh *shard, k, value []byte, ifeq backend.Cond, exp backend.Expiry, nowMs int64) bool {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil || !backend.LiveAt(en.ttlAt, nowMs) || !ifeq.Holds(en.value()) {
		return false
	}
	sh.replace(en, value, exp.TTLAt(nowMs, en.ttlAt))
	return true
}

// Move implements commands.Store. It is atomic: both keys' shards are
// locked, in index order so that two moves cannot deadlock.
func (s *Store) Move(_ context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	var nbuf, obuf [128]byte
	nk, okey := mapKey(nbuf[:], ns, newKey), mapKey(obuf[:], ns, oldKey)
	ni, oi := s.shardOf(nk), s.shardOf(okey)
	unlock := s.lockShards([]int{ni, oi})
	defer unlock()
	return s.move(&s.shards[ni], nk, newValue, &s.shards[oi], okey, oldValue, exp, s.nowMs()), nil
}

// move is Move with nsh, the shard of nk, and osh, that of okey, held.
func (s *Store) move(nsh *shard, nk, newValue []byte, osh *shard, okey, oldValue []byte, exp backend.Expiry, nowMs int64) backend.MoveResult {
	// As PREPARE newKey then ROLLBACK oldKey IFEQ: a taken newKey answers
	// first.
	nen := nsh.lookup(nk, nowMs, &s.opts)
	if nen != nil && backend.LiveAt(nen.ttlAt, nowMs) {
		return backend.NewKeyTaken
	}
	oen := osh.lookup(okey, nowMs, &s.opts)
	if oen == nil || !bytes.Equal(oen.value(), oldValue) {
		return backend.OldKeyMismatch
	}
	osh.remove(oen)
	ttlAt := exp.TTLAt(nowMs, backend.Forever)
	if nen == nil {
		nsh.put(nk, newValue, ttlAt)
	} else {
		nsh.replace(nen, newValue, ttlAt)
	}
	return backend.Moved
}

// lockShards locks the shards idx (in any order, with repeats) in index
// order, each once, so that a Move or a transaction cannot deadlock with
// another over the same shards. It sorts idx; the caller must call unlock.
func (s *Store) lockShards(idx []int) (unlock func()) {
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.shards[i].mu.Lock()
	}
	return func() {
		for _, i := range slices.Backward(idx) {
			s.shards[i].mu.Unlock()
		}
	}
}

// Exec implements commands.Execer: it runs a transaction's ops as one
// isolated unit. It locks the shards of every key of the block (in index
// order, as Move does, so that blocks and Moves cannot deadlock), runs the
// ops in order on one clock reading, and only then lets go: no other
// command sees the keys between two ops of the block.
func (s *Store) Exec(ctx context.Context, ops []backend.Op, res []backend.Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := make([][2][]byte, len(ops)) // each op's key, and a Move's old key
	idx := make([]int, 0, len(ops)+1)
	for i := range ops {
		op := &ops[i]
		if !knownOp(op.Kind) {
			return fmt.Errorf("memory: exec: unknown op kind %d", op.Kind)
		}
		keys[i][0] = mapKey(nil, op.NS, op.Key)
		idx = append(idx, s.shardOf(keys[i][0]))
		switch op.Kind {
		case backend.OpMove:
			keys[i][1] = mapKey(nil, op.NS, op.OldKey)
			idx = append(idx, s.shardOf(keys[i][1]))
		case backend.OpMPrepare:
			_, eidx := s.entryKeys(op.Entries)
			idx = append(idx, eidx...)
		}
	}
	unlock := s.lockShards(idx)
	defer unlock()
	nowMs := s.nowMs()
	for i := range ops {
		op, k := &ops[i], keys[i][0]
		sh := &s.shards[s.shardOf(k)]
		var r backend.Result
		switch op.Kind {
		case backend.OpPrepare:
			r.OK = s.prepare(sh, k, op.Value, op.Exp, nowMs)
		case backend.OpGet:
			r.Record, r.Found = s.get(sh, k, nowMs)
		case backend.OpRollback:
			r.OK = s.rollback(sh, k, op.Cond, nowMs)
		case backend.OpReprepare:
			r.OK = s.reprepare(sh, k, op.Value, op.Cond, op.Exp, nowMs)
		case backend.OpMove:
			ok := keys[i][1]
			r.Move = s.move(sh, k, op.Value, &s.shards[s.shardOf(ok)], ok, op.OldValue, op.Exp, nowMs)
		case backend.OpMPrepare:
			ekeys, eidx := s.entryKeys(op.Entries)
			r.OK = s.mprepare(ekeys, eidx, op.Entries, nil, op.Exp, nowMs)
		}
		res[i] = r
	}
	return nil
}

// knownOp reports whether Exec runs ops of kind k. It is checked for the
// whole block first: a block is run entirely or not at all.
func knownOp(k backend.OpKind) bool {
	switch k {
	case backend.OpPrepare, backend.OpGet, backend.OpRollback, backend.OpReprepare, backend.OpMove, backend.OpMPrepare:
		return true
	}
	return false
}

// Ping implements commands.Store: memory is always there.
func (s *Store) Ping(context.Context) error { return nil }

// Drive declares that the store answers from memory without waiting: on
// the event loop.
func (s *Store) Drive() backend.Drive { return backend.DriveInline }
