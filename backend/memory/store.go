// Package memory is the in-process store (--backend memory:). Its records
// are lost at exit. It is sharded by a hash of (namespace, key), each shard
// with its own mutex, so that every call is atomic on its key(s) while
// calls on other keys run in parallel.
package memory

import (
	"bytes"
	"context"
	"encoding/binary"
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

// Store is the in-memory store. It satisfies backend.Store.
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

// mapKeyLen is the length of mapKey(nil, ns, key).
func mapKeyLen(ns string, key []byte) int {
	n := len(ns)
	for v := uint64(n); v >= 0x80; v >>= 7 {
		n++
	}
	return n + 1 + len(key)
}

// mkey is a map key and its hash, hashed once per op: the shard, the
// lookup and the insert of a new record each hashed it, three hashes per
// PK.PREPARE of a new key, 4 % of the WebAssembly module's CPU at
// pipeline 16 (issue 34).
type mkey struct {
	b []byte
	h uint64
}

// key is k's mkey.
func (s *Store) key(k []byte) mkey { return mkey{k, hashKey(s.seed, k)} }

// shard is the index of k's shard.
func (k mkey) shard() int { return int(k.h >> (64 - shardBits)) }

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// prepare is PK.PREPARE with sh, the shard of k, held.
func (s *Store) prepare(sh *shard, k mkey, value []byte, exp backend.Expiry, nowMs int64) bool {
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

// get is PK.GET with sh, the shard of k, held, into r (zero): the record,
// field by field (a Record returned by value was a copy, a call of memmove
// on WebAssembly: backend.Result.Clear).
func (s *Store) get(sh *shard, k mkey, nowMs int64, r *backend.Result) {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil {
		return
	}
	// The value is replaced, never written in place, so handing it out
	// without a copy is safe as long as the caller does not write to it.
	r.Record.Value, r.Record.TTLAt, r.Record.Live = en.value(), en.ttlAt, backend.LiveAt(en.ttlAt, nowMs)
	r.Found = true
}

// rollback is PK.ROLLBACK with sh, the shard of k, held.
func (s *Store) rollback(sh *shard, k mkey, ifeq backend.Cond, nowMs int64) bool {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil || !ifeq.Holds(en.value()) {
		return false
	}
	sh.remove(en)
	return true
}

// reprepare is PK.REPREPARE with sh, the shard of k, held.
func (s *Store) reprepare(sh *shard, k mkey, value []byte, ifeq backend.Cond, exp backend.Expiry, nowMs int64) bool {
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil || !backend.LiveAt(en.ttlAt, nowMs) || !ifeq.Holds(en.value()) {
		return false
	}
	sh.replace(en, value, exp.TTLAt(nowMs, en.ttlAt))
	return true
}

// move is a key change (PK.REPREPARE … FROM) with nsh, the shard of nk,
// and osh, that of okey, held. It is atomic: both keys' shards are locked,
// in index order so that two moves cannot deadlock.
func (s *Store) move(nsh *shard, nk mkey, newValue []byte, osh *shard, okey mkey, oldValue []byte, exp backend.Expiry, nowMs int64) backend.MoveResult {
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

// Run implements backend.Store.
//
// Pipelined, each op runs on its own, under the locks of its own shards,
// as the commands would one at a time: a command alone (the sidecar
// answers them on its event loop, DriveInline) locks one shard and reads
// the clock once, as it always did.
//
// Isolated (a transaction's EXEC), it locks the shards of every key of
// the block (in index order, as Move does, so that blocks and Moves cannot
// deadlock), runs the ops in order on one clock reading, and only then
// lets go: no other command sees the keys between two ops of the block.
func (s *Store) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return s.isolated(ctx, ops, res)
	}
	for i := range ops {
		res[i] = backend.Result{}
		s.one(&ops[i], &res[i])
	}
	return nil
}

// RunOne implements backend.Store: op alone, under the locks of its
// shards (one).
func (s *Store) RunOne(_ context.Context, op backend.Op) backend.Result {
	var r backend.Result
	s.one(&op, &r)
	return r
}

// one runs op alone, under the locks of its shards, into r (zero).
//
// one and apply fill the caller's Result rather than return one: each
// Result returned by value was a copy, and the copies were a fifth of
// what the one store contract added to a PK.PREPARE on memory:
// (docs/benchmarks.md, "The architecture step").
func (s *Store) one(op *backend.Op, r *backend.Result) {
	switch {
	case !op.Kind.Runs():
		r.Err = backend.UnknownOp("memory", op.Kind)
		return
	case op.Kind == backend.OpMPrepare: // its keys are its entries'
		r.OK = s.mprepareAlone(op.Entries, op.Exp)
		return
	case op.Kind == backend.OpMove: // two keys, two shards
		s.moveAlone(op, r)
		return
	}
	// One key buffer and an unlock without defer: a second buffer (256
	// bytes of stack cleared per call) and the deferred unlock were 40 of
	// the 180 instructions this took per PK.PREPARE on memory: at pipeline
	// 16 (callgrind, docs/benchmarks.md "Instruction counts"). apply does
	// not panic on any op that Runs.
	//
	// The buffer is 32 bytes, and one of 128 is oneLong's: Go clears up
	// to 32 bytes of stack with four stores, more with memory.fill, which
	// wazero runs as a call of memmove per doubling (eight for 128 bytes),
	// on every command of the WebAssembly module (issue 34).
	var buf [32]byte
	if mapKeyLen(op.NS, op.Key) > len(buf) {
		s.oneLong(op, r)
		return
	}
	s.oneKey(op, s.key(mapKey(buf[:], op.NS, op.Key)), r)
}

// oneLong is one for a map key longer than one's buffer.
func (s *Store) oneLong(op *backend.Op, r *backend.Result) {
	var buf [128]byte
	s.oneKey(op, s.key(mapKey(buf[:], op.NS, op.Key)), r)
}

// oneKey is one with k, op's map key.
func (s *Store) oneKey(op *backend.Op, k mkey, r *backend.Result) {
	sh := &s.shards[k.shard()]
	sh.mu.Lock()
	s.apply(op, k, sh, mkey{}, nil, s.nowMs(), r)
	sh.mu.Unlock()
}

// moveAlone is one for an OpMove, under the locks of both keys' shards.
func (s *Store) moveAlone(op *backend.Op, r *backend.Result) {
	var buf, obuf [128]byte
	k := s.key(mapKey(buf[:], op.NS, op.Key))
	okey := s.key(mapKey(obuf[:], op.NS, op.OldKey))
	i, oi := k.shard(), okey.shard()
	unlock := s.lockShards([]int{i, oi})
	defer unlock()
	s.apply(op, k, &s.shards[i], okey, &s.shards[oi], s.nowMs(), r)
}

// isolated is Run with backend.Isolated.
func (s *Store) isolated(ctx context.Context, ops []backend.Op, res []backend.Result) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	keys := make([][2]mkey, len(ops))  // each op's key, and a Move's old key
	shards := make([][2]int, len(ops)) // their shards
	idx := make([]int, 0, len(ops)+1)
	for i := range ops {
		op := &ops[i]
		// The whole block is checked first: it runs entirely or not at
		// all.
		if !op.Kind.Runs() {
			return backend.UnknownOp("memory: exec", op.Kind)
		}
		keys[i][0] = s.key(mapKey(nil, op.NS, op.Key))
		shards[i][0] = keys[i][0].shard()
		idx = append(idx, shards[i][0])
		if op.Kind == backend.OpMove {
			keys[i][1] = s.key(mapKey(nil, op.NS, op.OldKey))
			shards[i][1] = keys[i][1].shard()
			idx = append(idx, shards[i][1])
		}
		if op.Kind == backend.OpMPrepare {
			_, eidx := s.entryKeys(op.Entries)
			idx = append(idx, eidx...)
		}
	}
	unlock := s.lockShards(idx)
	defer unlock()
	nowMs := s.nowMs()
	for i := range ops {
		res[i] = backend.Result{}
		s.apply(&ops[i], keys[i][0], &s.shards[shards[i][0]], keys[i][1], &s.shards[shards[i][1]], nowMs, &res[i])
	}
	return nil
}

// apply runs op into r (zero), with the shards of its keys held: k is the
// map key of its key and sh its shard, okey and osh those of a Move's old
// key. It is the store's one switch over the kinds of ops.
func (s *Store) apply(op *backend.Op, k mkey, sh *shard, okey mkey, osh *shard, nowMs int64, r *backend.Result) {
	switch op.Kind {
	case backend.OpPrepare:
		r.OK = s.prepare(sh, k, op.Value, op.Exp, nowMs)
	case backend.OpGet:
		s.get(sh, k, nowMs, r)
	case backend.OpRollback:
		r.OK = s.rollback(sh, k, op.Cond, nowMs)
	case backend.OpReprepare:
		r.OK = s.reprepare(sh, k, op.Value, op.Cond, op.Exp, nowMs)
	case backend.OpMove:
		r.Move = s.move(sh, k, op.Value, osh, okey, op.OldValue, op.Exp, nowMs)
	case backend.OpMPrepare:
		ekeys, eidx := s.entryKeys(op.Entries)
		r.OK = s.mprepare(ekeys, eidx, op.Entries, nil, op.Exp, nowMs)
	default:
		r.Err = backend.UnknownOp("memory", op.Kind)
	}
}

// Ping implements backend.Store: memory is always there.
func (s *Store) Ping(context.Context) error { return nil }
