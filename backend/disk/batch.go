package disk

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/prepkey/prepkey/backend"
)

// batchChunk bounds the ops committed together, and so the stripes one
// pipeline holds at once (two per Move): a client pipelining thousands of
// commands gets one commit per chunk instead of locking most of the store
// until a single fsync. Pipelines of redis-benchmark -P 16 and of client
// libraries are far below it.
const batchChunk = 256

// Run implements backend.Store. Pipelined, one op runs alone (one: the
// path of a command alone, its own stripes and its own commit, as it always
// had), several as a pipeline (pipeline: one commit for them all);
// Isolated, as one isolated unit (isolated).
func (s *Store) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	switch {
	case iso == backend.Isolated:
		return s.isolated(ctx, ops, res)
	case len(ops) == 1:
		res[0] = s.one(ctx, &ops[0])
	default:
		s.pipeline(ctx, ops, res)
	}
	return nil
}

// RunOne implements backend.Store: op alone (one).
func (s *Store) RunOne(ctx context.Context, op backend.Op) backend.Result { return s.one(ctx, &op) }

// one runs op alone: it takes the stripes of its keys (both of a Move's in
// index order, every entry's of an MPrepare, as pipeline takes them, so
// that neither deadlocks the other), runs op on a txn of its own that reads
// from the DB, and commits what it wrote with one fsync before it lets go
// of the stripes.
func (s *Store) one(ctx context.Context, op *backend.Op) backend.Result {
	if !op.Kind.Runs() {
		return backend.Result{Err: backend.UnknownOp("disk", op.Kind)}
	}
	if s.space.waiting.Load() {
		return s.whileWaiting(ctx, *op)
	}
	t := s.alone()
	var rk, oldRk []byte
	var held []int
	var unlock func()
	var err error
	switch {
	case op.Kind == backend.OpMPrepare: // its keys are its entries'
		idx := make([]int, len(op.Entries))
		n := 0
		for i, e := range op.Entries {
			idx[i] = s.stripe(recordKey(e.NS, e.Key))
			n += len(e.Value)
		}
		held, unlock, err = s.lockAll(ctx, idx)
		// The sidecar's path for a PK.MPREPARE alone on its connection:
		// sized as a pipeline's batch is (newBatch).
		t.size = batchSize(n, len(op.Entries))
	case op.Kind == backend.OpMove:
		rk, oldRk = recordKey(op.NS, op.Key), recordKey(op.NS, op.OldKey)
		unlock, err = s.lock2(ctx, rk, oldRk)
		held = []int{s.stripe(rk), s.stripe(oldRk)}
	default:
		rk = recordKey(op.NS, op.Key)
		unlock, err = s.lock(ctx, rk)
		held = []int{s.stripe(rk)}
	}
	defer unlock()
	if err != nil {
		return backend.Result{Err: err}
	}
	r := s.exec(t, op, rk, oldRk)
	if err := s.end(t, r.Err, held...); err != nil {
		return backend.Result{Err: err}
	}
	return r
}

// pipeline runs ops, the PK commands read together from client connections,
// and sets res[i] to the outcome of ops[i] (len(res) must be at least
// len(ops)). The outcome is that of running them one at a time in order:
// each is atomic, and each sees the effects of those before it.
//
// They share one synced commit (per batchChunk ops): pipeline takes the
// stripes of every key involved, deduplicated and in index order (the order
// Move takes its two, so batches, Moves and single commands cannot
// deadlock), runs the ops in order through one indexed batch so that a read
// sees the batch's earlier writes, commits it with one fsync and only then
// lets go of the stripes and returns. As with Get, no op's result shows a
// write before it is durable; a batch that wrote nothing is not committed,
// but its reads still hold the stripes.
//
// An op that fails on its own (a corrupt record, a Move onto its own key,
// an unknown kind) gets its error and the others go on, as they would one
// at a time. A failure of the batch itself (the context is done, the store
// is closed, the commit failed) is set on every op of the chunk, including
// reads, which may have seen the uncommitted writes, and on every op after
// it, which is not run. A WAL write or fsync failure exits the process
// before anything is answered, as for single commands (see Fatalf).
func (s *Store) pipeline(ctx context.Context, ops []backend.Op, res []backend.Result) {
	for start := 0; start < len(ops); start += batchChunk {
		end := min(start+batchChunk, len(ops))
		if err := s.batch(ctx, ops[start:end], res[start:end]); err != nil {
			for i := end; i < len(ops); i++ {
				res[i] = backend.Result{Err: err}
			}
			return
		}
	}
}

// batch runs at most batchChunk ops with one commit. On an error of the
// whole chunk it sets it on every res and returns it.
func (s *Store) batch(ctx context.Context, ops []backend.Op, res []backend.Result) (err error) {
	defer func() {
		if err != nil {
			for i := range ops {
				res[i] = backend.Result{Err: err}
			}
		}
	}()
	keys, idx := s.recordKeys(ops)
	if s.space.waiting.Load() {
		return s.batchWhileWaiting(ctx, ops, res, keys)
	}
	held, unlock, err := s.lockAll(ctx, idx)
	defer unlock()
	if err != nil {
		return err
	}
	b := s.newBatch(ops)
	t := &txn{db: s.db, r: b, b: b}
	var cr *chunkReader
	if len(ops) >= chunkIterMin {
		it, err := s.db.NewIter(nil)
		if err != nil {
			b.Close()
			return fmt.Errorf("disk: read: %w", err)
		}
		cr = &chunkReader{b: b, it: it, touched: make(map[string]struct{}, len(ops))}
		t.r = cr
	}
	for i := range ops {
		res[i] = s.exec(t, &ops[i], keys[i][0], keys[i][1])
		if t.err != nil {
			break
		}
		if cr != nil && i < len(ops)-1 {
			cr.touch(keys[i][0], keys[i][1])
			for _, e := range ops[i].Entries {
				cr.touch(recordKey(e.NS, e.Key))
			}
		}
	}
	if cr != nil {
		if err := cr.it.Close(); err != nil && t.err == nil {
			t.err = fmt.Errorf("disk: read: %w", err)
		}
	}
	if t.err != nil {
		b.Close()
		return t.err
	}
	if b.Empty() {
		b.Close()
		return nil
	}
	return s.commit(b, held...)
}

// newBatch is the indexed batch for ops, made to measure when their values
// are large (batchSize).
func (s *Store) newBatch(ops []backend.Op) *pebble.Batch {
	n, records := 0, 0
	for i := range ops {
		n += len(ops[i].Value)
		for _, e := range ops[i].Entries {
			n += len(e.Value)
		}
		records += 1 + len(ops[i].Entries)
	}
	if size := batchSize(n, records); size > 0 {
		return s.db.NewIndexedBatchWithSize(size)
	}
	return s.db.NewIndexedBatch()
}

// batchSize is the size to make a batch of records with n bytes of values
// in all, or 0 for pebble's default. When the values are large (a
// PK.MPREPARE of 64 values of 1 MiB) the batch is made their size at once:
// grown by doubling from pebble's default it allocated 4 times as much,
// 254 MiB for 64 MiB of values, which on a loaded machine made the store's
// part of such a command take longer than the backend timeout and put the
// sidecar's peak RSS at 4.4 times the request (issue 23, N1;
// TestBigBatchMemory). Small batches keep pebble's default, as before.
func batchSize(n, records int) int {
	if n < largeBatch {
		return 0
	}
	return n + records*batchRecordOverhead
}

// largeBatch is the size of values from which a batch is made to measure.
const largeBatch = 1 << 20

// batchRecordOverhead is what a record adds to its value in a batch, about:
// its key (namespace and key), the ttl, pebble's kind and length varints,
// an expiry index entry. Past it the batch grows as before.
const batchRecordOverhead = 256

// chunkIterMin is the size of a chunk from which its reads go through one
// iterator (chunkReader) rather than a pebble Get each.
const chunkIterMin = 8

// recordKeys returns the record keys of each op (its key, and a Move's old
// key) and their stripes, for lockAll (with an MPrepare's entries').
func (s *Store) recordKeys(ops []backend.Op) (keys [][2][]byte, idx []int) {
	keys = make([][2][]byte, len(ops))
	idx = make([]int, 0, len(ops)+len(ops)/4)
	for i := range ops {
		op := &ops[i]
		keys[i][0] = recordKey(op.NS, op.Key)
		idx = append(idx, s.stripe(keys[i][0]))
		switch op.Kind {
		case backend.OpMove:
			keys[i][1] = recordKey(op.NS, op.OldKey)
			idx = append(idx, s.stripe(keys[i][1]))
		case backend.OpMPrepare:
			for _, e := range op.Entries {
				idx = append(idx, s.stripe(recordKey(e.NS, e.Key)))
			}
		}
	}
	return keys, idx
}

// isolated runs a transaction's ops as one isolated unit (Run with
// Isolated), all or nothing on disk. As a pipeline's chunk does, it takes
// the stripes of every key of the block in index order (no deadlock with
// Moves, batches or other blocks), runs the ops in order through one
// indexed batch, so each sees the writes of those before it, commits that
// batch with one fsync and only then lets go of the stripes. Unlike a
// pipeline it is never split, and a failure of any op drops the whole
// batch: the block is then not written at all and the error is returned.
func (s *Store) isolated(ctx context.Context, ops []backend.Op, res []backend.Result) error {
	keys, idx := s.recordKeys(ops)
	if s.space.waiting.Load() {
		// Read only, from one snapshot: a block that writes is refused
		// whole, with its first error.
		if err := s.batchWhileWaiting(ctx, ops, res, keys); err != nil {
			return err
		}
		for i := range ops {
			if res[i].Err != nil {
				return res[i].Err
			}
		}
		return nil
	}
	held, unlock, err := s.lockAll(ctx, idx)
	defer unlock()
	if err != nil {
		return err
	}
	b := s.newBatch(ops)
	t := &txn{db: s.db, r: b, b: b}
	for i := range ops {
		r := s.exec(t, &ops[i], keys[i][0], keys[i][1])
		if err := cmp.Or(t.err, r.Err); err != nil {
			b.Close()
			return err
		}
		res[i] = r
	}
	if b.Empty() {
		b.Close()
		return nil
	}
	return s.commit(b, held...)
}

// exec runs one op on t: the store's one switch over the kinds of ops.
func (s *Store) exec(t *txn, op *backend.Op, rk, oldRk []byte) backend.Result {
	var r backend.Result
	switch op.Kind {
	case backend.OpPrepare:
		r.OK, r.Err = s.prepare(t, rk, op.Value, op.Exp)
	case backend.OpGet:
		r.Record, r.Found, r.Err = s.get(t, rk)
	case backend.OpRollback:
		r.OK, r.Err = s.rollback(t, rk, op.Cond)
	case backend.OpReprepare:
		r.OK, r.Err = s.reprepare(t, rk, op.Value, op.Cond, op.Exp)
	case backend.OpMove:
		r.Move, r.Err = s.move(t, rk, op.Value, oldRk, op.OldValue, op.Exp)
	case backend.OpMPrepare:
		rks := make([][]byte, len(op.Entries))
		for i, e := range op.Entries {
			rks[i] = recordKey(e.NS, e.Key)
		}
		r.OK, r.Err = s.mprepare(t, rks, op.Entries, op.Exp)
	default:
		r.Err = backend.UnknownOp("disk: batch", op.Kind)
	}
	if r.Err != nil {
		return backend.Result{Err: r.Err}
	}
	return r
}

// lockAll takes the stripes idx (in any order, with repeats) in index
// order, each once, returns them (held, for commit) and reports ErrClosed
// once Close began. It sorts idx. The caller must call the returned unlock
// even on error.
func (s *Store) lockAll(ctx context.Context, idx []int) (held []int, unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, func() {}, err
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s.locks[i].Lock()
	}
	unlock = func() {
		for _, i := range slices.Backward(idx) {
			s.locks[i].Unlock()
		}
	}
	if s.closed.Load() {
		return idx, unlock, ErrClosed
	}
	return idx, unlock, nil
}
