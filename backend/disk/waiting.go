package disk

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prepkey/prepkey/backend"
)

// While a write that met ENOSPC waits for space (space.onDiskFull, with no
// reserve or past it), every commit waits behind it in pebble, holding its
// stripes: a read that takes those stripes, or that shares a batch and
// its commit with a write, would wait with it, and its command got
// -UNAVAILABLE at the backend timeout. Reads must go on on a full disk, as
// they do below the reserve. So, meanwhile:
//
//   - writes, deletions too, are refused before they reach pebble
//     (space.room, space.roomToDelete): ErrDiskFull, at once. A deletion
//     would need room in the WAL too, and an acknowledged write must have
//     reached it (pebble.Sync), so none can be taken until space is back;
//   - a batch, a command alone and an EXEC block read from a pebble
//     snapshot without taking any stripe and commit nothing
//     (batchWhileWaiting). A stripe is held to
//     keep a reader from seeing a write before its fsync (pebble shows a
//     batch first); here pending stands in for it: every commit counts
//     itself on its stripes from before it is applied until it is synced,
//     so a record in a snapshot taken before its stripe's count read zero
//     is durable. A record whose stripe has a commit pending (the write
//     waiting for space, or one that shares its stripe: 1 in 4096) is not
//     answered from the snapshot nor waited for: its command gets
//     ErrDiskFull (waitsForSpace) at once;
//   - the sweep pauses (its deletes would wait as well).
//
// The commands under way when the disk filled (those that reached pebble
// before the first ENOSPC, and a batch already waiting for their stripes)
// still wait for space, and get the backend timeout.

// waitsForSpace is the error of a command on a record whose stripe a
// commit waiting for space holds.
func (s *Store) waitsForSpace() error {
	return fmt.Errorf("%w: a write waiting for space on %s may change this record; ask again once space is freed",
		ErrDiskFull, s.space.dir)
}

// durableView returns a snapshot of the database for readers that take no
// stripe, and done, which lets go of it; it holds off Close meanwhile.
func (s *Store) durableView(ctx context.Context) (snap *pebble.Snapshot, done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	s.iters.RLock()
	if s.closed.Load() {
		s.iters.RUnlock()
		return nil, nil, ErrClosed
	}
	snap = s.db.NewSnapshot()
	return snap, func() { _ = snap.Close(); s.iters.RUnlock() }, nil
}

// whileWaiting runs op alone (Get, Prepare, ...) as batchWhileWaiting
// does: a client that retries the write that waits for space is refused at
// once rather than waiting on its stripe.
func (s *Store) whileWaiting(ctx context.Context, op backend.Op) backend.Result {
	ops := []backend.Op{op}
	keys, _ := s.recordKeys(ops)
	res := make([]backend.Result, 1)
	if err := s.batchWhileWaiting(ctx, ops, res, keys); err != nil {
		return backend.Result{Err: err}
	}
	return res[0]
}

// batchWhileWaiting is batch while a write waits for space: each op reads
// from one snapshot, without stripes, and nothing is committed. keys are
// the ops' record keys (recordKeys).
func (s *Store) batchWhileWaiting(ctx context.Context, ops []backend.Op, res []backend.Result, keys [][2][]byte) error {
	snap, done, err := s.durableView(ctx)
	if err != nil {
		return err // set on every op by batch
	}
	defer done()
	for i := range ops {
		if s.anyPending(&ops[i], keys[i]) {
			res[i] = backend.Result{Err: s.waitsForSpace()}
			continue
		}
		t := &txn{db: s.db, r: snap}
		res[i] = s.exec(t, &ops[i], keys[i][0], keys[i][1])
		if t.b != nil {
			// Space came back since the batch began: the op passed room
			// and built a write. It is not committed (its stripes are not
			// held); the client is told so, and retries.
			t.b.Close()
			res[i] = backend.Result{Err: s.space.noSpace()}
		}
	}
	return nil
}

// anyPending reports whether a commit is pending on a stripe of op's
// records (keys are its record keys; an MPrepare's are its entries').
func (s *Store) anyPending(op *backend.Op, keys [2][]byte) bool {
	if op.Kind != backend.OpMPrepare { // an MPrepare has no key of its own
		for _, k := range keys {
			if k != nil && s.pending[s.stripe(k)].Load() > 0 {
				return true
			}
		}
	}
	for _, e := range op.Entries {
		if s.pending[s.stripe(recordKey(e.NS, e.Key))].Load() > 0 {
			return true
		}
	}
	return false
}
