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
	"sync"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// shardCount is a power of two well above the cores a sidecar runs on, so
// that two busy keys rarely share a lock.
const shardCount = 256

// sweepInterval is how often expired records past their retention are
// deleted. Calls treat them as absent before that anyway.
const sweepInterval = time.Second

// Store is the in-memory store. It satisfies commands.Store.
type Store struct {
	opts   backend.Options
	now    func() time.Time
	seed   maphash.Seed
	shards [shardCount]shard

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// New returns an empty store and starts its sweeper; Close stops it.
func New(opts backend.Options) *Store {
	return newStore(opts, sweepInterval)
}

func newStore(opts backend.Options, interval time.Duration) *Store {
	s := &Store{
		opts: opts,
		now:  opts.Clock(),
		seed: maphash.MakeSeed(),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	for i := range s.shards {
		s.shards[i].recs = make(map[string]*entry)
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
	return int(maphash.Bytes(s.seed, k) % shardCount)
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// Prepare implements commands.Store.
func (s *Store) Prepare(_ context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nowMs := s.nowMs()
	en := sh.lookup(k, nowMs, &s.opts)
	switch {
	case en == nil:
		sh.put(k, value, exp.TTLAt(nowMs, backend.Forever))
	case backend.LiveAt(en.ttlAt, nowMs):
		return false, nil
	default:
		sh.replace(en, value, exp.TTLAt(nowMs, backend.Forever))
	}
	return true, nil
}

// Get implements commands.Store.
func (s *Store) Get(_ context.Context, ns string, key []byte) (backend.Record, bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nowMs := s.nowMs()
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil {
		return backend.Record{}, false, nil
	}
	// The value is replaced, never written in place, so handing it out
	// without a copy is safe as long as the caller does not write to it.
	return backend.Record{Value: en.value, TTLAt: en.ttlAt, Live: backend.LiveAt(en.ttlAt, nowMs)}, true, nil
}

// Rollback implements commands.Store.
func (s *Store) Rollback(_ context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	en := sh.lookup(k, s.nowMs(), &s.opts)
	if en == nil || !ifeq.Holds(en.value) {
		return false, nil
	}
	sh.remove(en)
	return true, nil
}

// Reprepare implements commands.Store.
func (s *Store) Reprepare(_ context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	var buf [128]byte
	k := mapKey(buf[:], ns, key)
	sh := &s.shards[s.shardOf(k)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	nowMs := s.nowMs()
	en := sh.lookup(k, nowMs, &s.opts)
	if en == nil || !backend.LiveAt(en.ttlAt, nowMs) || !ifeq.Holds(en.value) {
		return false, nil
	}
	sh.replace(en, value, exp.TTLAt(nowMs, en.ttlAt))
	return true, nil
}

// Move implements commands.Store. It is atomic: both keys' shards are
// locked, in index order so that two moves cannot deadlock.
func (s *Store) Move(_ context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	var nbuf, obuf [128]byte
	nk, okey := mapKey(nbuf[:], ns, newKey), mapKey(obuf[:], ns, oldKey)
	ni, oi := s.shardOf(nk), s.shardOf(okey)
	nsh, osh := &s.shards[ni], &s.shards[oi]
	switch {
	case ni == oi:
		nsh.mu.Lock()
		defer nsh.mu.Unlock()
	case ni < oi:
		nsh.mu.Lock()
		defer nsh.mu.Unlock()
		osh.mu.Lock()
		defer osh.mu.Unlock()
	default:
		osh.mu.Lock()
		defer osh.mu.Unlock()
		nsh.mu.Lock()
		defer nsh.mu.Unlock()
	}
	nowMs := s.nowMs()
	// As PREPARE newKey then ROLLBACK oldKey IFEQ: a taken newKey answers
	// first.
	nen := nsh.lookup(nk, nowMs, &s.opts)
	if nen != nil && backend.LiveAt(nen.ttlAt, nowMs) {
		return backend.NewKeyTaken, nil
	}
	oen := osh.lookup(okey, nowMs, &s.opts)
	if oen == nil || !bytes.Equal(oen.value, oldValue) {
		return backend.OldKeyMismatch, nil
	}
	osh.remove(oen)
	ttlAt := exp.TTLAt(nowMs, backend.Forever)
	if nen == nil {
		nsh.put(nk, newValue, ttlAt)
	} else {
		nsh.replace(nen, newValue, ttlAt)
	}
	return backend.Moved, nil
}

// Ping implements commands.Store: memory is always there.
func (s *Store) Ping(context.Context) error { return nil }
