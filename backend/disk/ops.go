package disk

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prepkey/prepkey/backend"
)

// stored is a record as it is on disk, read under its stripe lock. value is
// a copy that the caller owns.
type stored struct {
	exists bool
	ttlAt  int64
	value  []byte
}

// visible reports whether r counts as a record at nowMs: one past its
// retention is absent even before the sweep deletes it.
func (s *Store) visible(r stored, nowMs int64) bool {
	return r.exists && !s.opts.Gone(r.ttlAt, nowMs)
}

// live reports whether r holds its key at nowMs.
func (s *Store) live(r stored, nowMs int64) bool {
	return r.exists && backend.LiveAt(r.ttlAt, nowMs)
}

// stripe returns the lock index of a record key.
func (s *Store) stripe(recKey []byte) int {
	return int(maphash.Bytes(s.seed, recKey) % stripes)
}

// lock takes the stripe of recKey, and reports ErrClosed once Close began.
// The caller must call the returned unlock even on error.
func (s *Store) lock(ctx context.Context, recKey []byte) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return func() {}, err
	}
	mu := &s.locks[s.stripe(recKey)]
	mu.Lock()
	if s.closed.Load() {
		return mu.Unlock, ErrClosed
	}
	return mu.Unlock, nil
}

// lock2 takes the stripes of two record keys in index order, so that
// concurrent Moves over the same two stripes cannot deadlock.
func (s *Store) lock2(ctx context.Context, a, b []byte) (unlock func(), err error) {
	i, j := s.stripe(a), s.stripe(b)
	if i == j {
		return s.lock(ctx, a)
	}
	if err := ctx.Err(); err != nil {
		return func() {}, err
	}
	if i > j {
		i, j = j, i
	}
	first, second := &s.locks[i], &s.locks[j]
	first.Lock()
	second.Lock()
	unlock = func() { second.Unlock(); first.Unlock() }
	if s.closed.Load() {
		return unlock, ErrClosed
	}
	return unlock, nil
}

// reader is where a command reads records: the DB for a command alone, or
// the indexed batch of a pipeline (batch.go), which shows the pipeline's
// earlier writes over the DB.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

// readFrom returns the record under recKey as r shows it. The stripe must
// be held.
func readFrom(r reader, recKey []byte) (stored, error) {
	raw, closer, err := r.Get(recKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, fmt.Errorf("disk: read: %w", err)
	}
	defer closer.Close()
	ttlAt, value, err := decodeRecord(raw)
	if err != nil {
		return stored{}, err
	}
	return stored{exists: true, ttlAt: ttlAt, value: bytes.Clone(value)}, nil
}

// read returns the record under recKey as it is in the DB. The stripe must
// be held.
func (s *Store) read(recKey []byte) (stored, error) { return readFrom(s.db, recKey) }

// put adds to b the record recKey -> (ttlAt, value) in place of old, and
// keeps the expiry index in step: old's entry goes, the new one comes.
func put(b *pebble.Batch, recKey []byte, old stored, ttlAt int64, value []byte) error {
	if old.exists && old.ttlAt != backend.Forever && old.ttlAt != ttlAt {
		if err := b.Delete(expiryKey(old.ttlAt, recKey), nil); err != nil {
			return err
		}
	}
	// Encoded in place (recordValue) rather than copied twice: for a
	// value of 1 MiB the copy was a megabyte of fresh memory.
	op := b.SetDeferred(len(recKey), 8+len(value))
	copy(op.Key, recKey)
	binary.BigEndian.PutUint64(op.Value, uint64(ttlAt))
	copy(op.Value[8:], value)
	if err := op.Finish(); err != nil {
		return err
	}
	if ttlAt != backend.Forever {
		return b.Set(expiryKey(ttlAt, recKey), nil, nil)
	}
	return nil
}

// del adds to b the deletion of old, stored under recKey, and of its expiry
// index entry.
func del(b *pebble.Batch, recKey []byte, old stored) error {
	if err := b.Delete(recKey, nil); err != nil {
		return err
	}
	if old.ttlAt != backend.Forever {
		return b.Delete(expiryKey(old.ttlAt, recKey), nil)
	}
	return nil
}

// commit applies b, waits for its fsync and closes it. It is called with
// the stripes of every key in b held (held, in any order, with repeats),
// so nobody sees b before it is durable; it counts itself in their
// pending meanwhile, for the readers that do not take stripes
// (waiting.go).
func (s *Store) commit(b *pebble.Batch, held ...int) error {
	defer b.Close()
	for _, i := range held {
		s.pending[i].Add(1)
	}
	defer func() {
		for _, i := range held {
			s.pending[i].Add(-1)
		}
	}()
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return fmt.Errorf("disk: commit: %w", err)
	}
	return nil
}

// txn is what one command reads from and writes to. The read-modify-write
// of each command kind (prepare, get, ...) is written once, over a txn, and
// serves both a command alone (Run of one op, one: reads from the DB, a batch
// of its own at its first write) and the commands of a pipeline (pipeline:
// reads and writes through one indexed batch, so each command sees the
// writes of those before it, and all share one commit).
type txn struct {
	db *pebble.DB
	r  reader
	b  *pebble.Batch // nil until the first write of a command alone
	// err is the first failed write: b may then hold part of a command, and
	// must be dropped instead of committed.
	err error
	// size is the size to make b at a command's first write (batchSize),
	// 0 for pebble's default.
	size int
}

// alone returns the txn of a command run on its own.
func (s *Store) alone() *txn { return &txn{db: s.db, r: s.db} }

func (t *txn) read(recKey []byte) (stored, error) { return readFrom(t.r, recKey) }

func (t *txn) batch() *pebble.Batch {
	if t.b == nil {
		if t.size > 0 {
			t.b = t.db.NewBatchWithSize(t.size)
		} else {
			t.b = t.db.NewBatch()
		}
	}
	return t.b
}

// write adds the writes of fill to the txn's batch.
func (t *txn) write(fill func(b *pebble.Batch) error) error {
	if err := fill(t.batch()); err != nil {
		t.err = fmt.Errorf("disk: build batch: %w", err)
		return t.err
	}
	return nil
}

// end finishes the txn of a command alone: it commits its writes, if any,
// unless the command failed (err), and returns the command's error. held
// are the stripes the command holds (commit).
func (s *Store) end(t *txn, err error, held ...int) error {
	if err != nil || t.b == nil {
		if t.b != nil {
			t.b.Close()
		}
		return err
	}
	return s.commit(t.b, held...)
}

// nowMs reads the store's clock.
func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// prepare is PK.PREPARE on t, with the stripes held: key is reserved
// for value when no live record holds it.
func (s *Store) prepare(t *txn, rk, value []byte, exp backend.Expiry) (bool, error) {
	now := s.nowMs()
	old, err := t.read(rk)
	if err != nil {
		return false, err
	}
	if s.live(old, now) {
		return false, nil
	}
	if err := s.space.room(); err != nil {
		return false, err
	}
	ttlAt := exp.TTLAt(now, backend.Forever)
	if err := t.write(func(b *pebble.Batch) error { return put(b, rk, old, ttlAt, value) }); err != nil {
		return false, err
	}
	return true, nil
}

// get is PK.GET on t, with the stripes held: the record of key, live or
// expired but retained. A read takes the stripe too: pebble shows a batch
// before its fsync, and the stripe is what keeps a reader from answering
// with a record that is not yet durable.
func (s *Store) get(t *txn, rk []byte) (backend.Record, bool, error) {
	now := s.nowMs()
	r, err := t.read(rk)
	if err != nil || !s.visible(r, now) {
		return backend.Record{}, false, err
	}
	return backend.Record{Value: r.value, TTLAt: r.ttlAt, Live: backend.LiveAt(r.ttlAt, now)}, true, nil
}

// rollback is PK.ROLLBACK on t, with the stripes held: the record of key,
// live or expired, is deleted if ifeq holds.
func (s *Store) rollback(t *txn, rk []byte, ifeq backend.Cond) (bool, error) {
	now := s.nowMs()
	old, err := t.read(rk)
	if err != nil {
		return false, err
	}
	if !s.visible(old, now) || !ifeq.Holds(old.value) {
		return false, nil
	}
	if err := s.space.roomToDelete(); err != nil {
		return false, err
	}
	if err := t.write(func(b *pebble.Batch) error { return del(b, rk, old) }); err != nil {
		return false, err
	}
	return true, nil
}

// reprepare is PK.REPREPARE on t, with the stripes held: the value of the
// live record of key is replaced if ifeq holds.
func (s *Store) reprepare(t *txn, rk, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	now := s.nowMs()
	old, err := t.read(rk)
	if err != nil {
		return false, err
	}
	if !s.live(old, now) || !ifeq.Holds(old.value) {
		return false, nil
	}
	if err := s.space.room(); err != nil {
		return false, err
	}
	ttlAt := exp.TTLAt(now, old.ttlAt)
	if err := t.write(func(b *pebble.Batch) error { return put(b, rk, old, ttlAt, value) }); err != nil {
		return false, err
	}
	return true, nil
}

// move is a key change on t, with both stripes held: newKey is reserved
// for newValue and oldKey released if it holds oldValue, in one batch: it
// is atomic, on disk too. A live newKey wins over a mismatched oldKey (:0
// before -MISMATCH), as PREPARE newKey would fail before ROLLBACK oldKey
// is tried.
func (s *Store) move(t *txn, nk, newValue, ok, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	if bytes.Equal(nk, ok) {
		return 0, fmt.Errorf("disk: move: old and new key are the same")
	}
	now := s.nowMs()
	cur, err := t.read(nk)
	if err != nil {
		return 0, err
	}
	if s.live(cur, now) {
		return backend.NewKeyTaken, nil
	}
	old, err := t.read(ok)
	if err != nil {
		return 0, err
	}
	if !s.visible(old, now) || !bytes.Equal(old.value, oldValue) {
		return backend.OldKeyMismatch, nil
	}
	if err := s.space.room(); err != nil {
		return 0, err
	}
	ttlAt := exp.TTLAt(now, backend.Forever)
	err = t.write(func(b *pebble.Batch) error {
		if err := put(b, nk, cur, ttlAt, newValue); err != nil {
			return err
		}
		return del(b, ok, old)
	})
	if err != nil {
		return 0, err
	}
	return backend.Moved, nil
}
