package disk

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prepkey/prepkey/backend"
)

// mprepare is PK.MPREPARE on t, with the stripes of every entry held:
// every entry or none is reserved, atomically and durably (every record is
// read, and either nothing is written or one batch holds them all,
// committed with one fsync). rks[i] is the record
// key of entries[i].
func (s *Store) mprepare(t *txn, rks [][]byte, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	now := s.nowMs()
	olds := make([]stored, len(rks))
	for i, rk := range rks {
		old, err := t.read(rk)
		if err != nil {
			return false, err
		}
		if s.live(old, now) {
			return false, nil
		}
		olds[i] = old
	}
	if err := s.space.room(); err != nil {
		return false, err
	}
	ttlAt := exp.TTLAt(now, backend.Forever)
	err := t.write(func(b *pebble.Batch) error {
		for i, rk := range rks {
			if err := put(b, rk, olds[i], ttlAt, entries[i].Value); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return true, nil
}

// scanVisitFactor bounds the records a scan page reads to this many times
// its count, so that a namespace full of records past their retention
// (which a page skips) still answers promptly, with an empty page if need
// be.
const scanVisitFactor = 10

// Scan reads the namespace's records in key order with a pebble iterator
// bounded to the namespace's prefix, from just after pos (the last key of
// the previous page). An iterator reads a consistent snapshot; pebble shows
// a batch before its fsync, so before answering the page waits for the
// stripe of each record it returns that has a commit pending (Store.pending:
// counted from before the commit is applied, so one the iterator shows is
// counted until it is synced): after that no record of the page can be
// undone by a crash (a failed fsync exits the process before anything else
// is answered). While a write waits for space, such a record is not waited
// for: the page is refused (waiting.go).
func (s *Store) Scan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	if err := ctx.Err(); err != nil {
		return backend.Page{}, err
	}
	s.iters.RLock()
	defer s.iters.RUnlock()
	if s.closed.Load() {
		return backend.Page{}, ErrClosed
	}
	prefix := recordKey(ns, nil)
	lower := prefix
	if pos != nil {
		lower = append(recordKey(ns, pos), 0) // the first key after pos
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return backend.Page{}, fmt.Errorf("disk: scan: %w", err)
	}
	now := s.nowMs()
	page := backend.Page{Records: make([]backend.ScanRecord, 0, count)}
	var last []byte
	visited := 0
	valid := it.First()
	for ; valid && len(page.Records) < count && visited < scanVisitFactor*count; valid = it.Next() {
		visited++
		k := it.Key()
		last = append(last[:0], k[len(prefix):]...)
		raw, err := it.ValueAndErr()
		if err != nil {
			return backend.Page{}, errors.Join(fmt.Errorf("disk: scan: %w", err), it.Close())
		}
		ttlAt, value, err := decodeRecord(raw)
		if err != nil {
			return backend.Page{}, errors.Join(err, it.Close())
		}
		if s.opts.Gone(ttlAt, now) {
			continue
		}
		page.Records = append(page.Records, backend.ScanRecord{
			Key:    bytes.Clone(k[len(prefix):]),
			Record: backend.Record{Value: bytes.Clone(value), TTLAt: ttlAt, Live: backend.LiveAt(ttlAt, now)},
		})
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return backend.Page{}, fmt.Errorf("disk: scan: %w", err)
	}
	if valid {
		page.Next = last
	} else {
		page.Done = true
	}
	for _, r := range page.Records {
		i := s.stripe(recordKey(ns, r.Key))
		if s.pending[i].Load() == 0 {
			continue
		}
		if s.space.waiting.Load() {
			return backend.Page{}, s.waitsForSpace()
		}
		s.locks[i].Lock()
		s.locks[i].Unlock() //nolint:staticcheck // waiting for the holder's fsync is the point
	}
	return page, nil
}

// prefixEnd is the smallest key above every key that starts with prefix.
// A record prefix never ends in 0xff (namespaces are ASCII).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	end[len(end)-1]++
	return end
}

var metaSecretKey = []byte{prefixMeta, 's', 'e', 'c', 'r', 'e', 't'}

// Secret returns the store's secret, made and written (synced) on first
// use. It lives in the database, so the cursors of PK.SCAN stay good
// across restarts and for anyone who opens the directory.
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.secretMu.Lock()
	defer s.secretMu.Unlock()
	s.iters.RLock()
	defer s.iters.RUnlock()
	if s.closed.Load() {
		return nil, ErrClosed
	}
	v, closer, err := s.db.Get(metaSecretKey)
	switch {
	case err == nil:
		defer closer.Close()
		if len(v) != backend.SecretBytes {
			return nil, fmt.Errorf("%w: secret of %d bytes", errCorrupt, len(v))
		}
		return bytes.Clone(v), nil
	case !errors.Is(err, pebble.ErrNotFound):
		return nil, fmt.Errorf("disk: read secret: %w", err)
	}
	if s.space.waiting.Load() {
		return nil, s.space.noSpace() // its write would wait (waiting.go)
	}
	secret := make([]byte, backend.SecretBytes)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails (Go 1.24)
	if err := s.db.Set(metaSecretKey, secret, pebble.Sync); err != nil {
		return nil, fmt.Errorf("disk: write secret: %w", err)
	}
	return secret, nil
}
