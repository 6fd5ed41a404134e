package disk

import (
	"bytes"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// sweepChunk is how many due index entries one sweep reads before it closes
// its iterator and deletes them, so that a large backlog neither pins old
// memtables nor delays Close for long.
const sweepChunk = 512

// sweepLoop runs sweep every interval until Close.
func (s *Store) sweepLoop(interval time.Duration) {
	defer close(s.sweepDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stopSweep:
			return
		case <-t.C:
			if n, err := s.sweep(); err != nil {
				slog.Default().Error("disk: sweep of expired records failed", "err", err, "deleted", n)
			}
		}
	}
}

// sweep deletes the records that have outlived the retention and returns
// how many it deleted. It reads only the due part of the expiry index: the
// entries whose ttlAt is at most now-retention.
//
// It takes no global lock: each record is re-checked and deleted under its
// own stripe, in its own small batch, so a command waits at most for one
// delete. The deletes are not synced: a crash may bring a record back, but
// it is still past its retention, so commands treat it as absent and the
// next sweep deletes it again. Any later synced write flushes them anyway,
// since the WAL is one ordered log.
func (s *Store) sweep() (int, error) {
	deleted := 0
	lower := expiryBound(1) // ttlAt 0 is forever and never indexed
	for {
		select {
		case <-s.stopSweep:
			return deleted, nil
		default:
		}
		if s.space.waiting.Load() {
			return deleted, nil // its deletes would wait for space too (waiting.go)
		}
		now := s.nowMs()
		due := now - s.opts.Retention.Milliseconds() + 1 // Gone(ttlAt) <=> ttlAt < due
		if due <= 1 {
			return deleted, nil
		}
		keys, err := s.dueKeys(lower, expiryBound(due))
		if err != nil {
			return deleted, err
		}
		for _, k := range keys {
			ok, err := s.sweepOne(k)
			if err != nil {
				return deleted, err
			}
			if ok {
				deleted++
				s.swept.Add(1)
			}
		}
		if len(keys) < sweepChunk {
			return deleted, nil
		}
		// Resume just after the last entry seen.
		lower = append(keys[len(keys)-1], 0)
	}
}

// dueKeys returns copies of up to sweepChunk index keys in [lower, upper).
func (s *Store) dueKeys(lower, upper []byte) ([][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("disk: sweep: %w", err)
	}
	var keys [][]byte
	for ok := it.First(); ok && len(keys) < sweepChunk; ok = it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("disk: sweep: %w", err)
	}
	return keys, nil
}

// sweepOne deletes the record of one due index entry if, under its stripe,
// the record still has that ttlAt and is past its retention, together with
// the entry. An entry whose record is gone or has another ttlAt (which has
// its own entry) is stale and deleted alone.
func (s *Store) sweepOne(idxKey []byte) (bool, error) {
	ttlAt, rk, err := decodeExpiryKey(idxKey)
	if err != nil {
		return false, err
	}
	mu := &s.locks[s.stripe(rk)]
	mu.Lock()
	defer mu.Unlock()
	if s.closed.Load() {
		return false, ErrClosed
	}
	r, err := s.read(rk)
	if err != nil {
		return false, err
	}
	mine := r.exists && r.ttlAt == ttlAt
	if mine && !s.opts.Gone(r.ttlAt, s.nowMs()) {
		return false, nil // not due after all (the clock went back): keep both
	}
	b := s.db.NewBatch()
	defer b.Close()
	if mine {
		err = b.Delete(rk, nil)
	}
	if err == nil {
		err = b.Delete(idxKey, nil)
	}
	if err == nil {
		err = s.db.Apply(b, pebble.NoSync)
	}
	if err != nil {
		return false, fmt.Errorf("disk: sweep: %w", err)
	}
	return mine, nil
}
