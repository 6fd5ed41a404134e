package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// The batch types are the neutral ones of package backend.
type (
	OpKind = backend.OpKind
	Op     = backend.Op
	Result = backend.Result
)

const (
	OpPrepare   = backend.OpPrepare
	OpGet       = backend.OpGet
	OpRollback  = backend.OpRollback
	OpReprepare = backend.OpReprepare
	OpMove      = backend.OpMove
	OpMPrepare  = backend.OpMPrepare
)

// Batch runs ops, as read from one client connection's pipeline, and sets
// res[i] to the outcome of ops[i] (len(res) must be at least len(ops)).
// It sends them to Redis as one pipeline: one round trip instead of one per
// op, in order, so ops on one key take effect in the order given. A key
// change or an MPREPARE across Cluster slots cannot be pipelined: it runs alone, after the
// ops before it have answered and before the ops after it are sent.
//
// After a script cache flush each op that gets NOSCRIPT is sent again with
// EVAL, in order; an op after it in the same pipeline whose script was
// still cached has then run first. Only a partly flushed cache (SCRIPT
// FLUSH between two SCRIPT LOADs) can make that visible.
func (s *Store) Batch(ctx context.Context, ops []Op, res []Result) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	calls := make([]call, 0, len(ops))
	at := make([]int, 0, len(ops)) // at[k] is the index in ops of calls[k]
	flush := func() {
		s.runBatch(ctx, calls, ops, at, res)
		calls, at = calls[:0], at[:0]
	}
	for i := range ops {
		op := &ops[i]
		res[i] = Result{}
		if op.Kind == OpMove && s.composed {
			if nk, ok := s.keys.recordKey(op.NS, op.Key), s.keys.recordKey(op.NS, op.OldKey); slot(nk) != slot(ok) {
				flush()
				res[i].Move, res[i].Err = s.moveAcross(ctx, op.NS, op.Key, op.Value, op.OldKey, op.OldValue, op.Exp)
				continue
			}
		}
		if op.Kind == OpMPrepare {
			if _, oneSlot := s.entryKeys(op.Entries); !oneSlot {
				flush()
				res[i].OK, res[i].Err = s.mprepareAcross(ctx, op.Entries, op.Exp)
				continue
			}
		}
		cl, err := s.callFor(op)
		if err != nil {
			res[i].Err = err
			continue
		}
		calls = append(calls, cl)
		at = append(at, i)
	}
	flush()
}

// callFor is the one script run of op.
func (s *Store) callFor(op *Op) (call, error) {
	switch op.Kind {
	case OpPrepare:
		return s.prepareCall(s.keys.recordKey(op.NS, op.Key), op.Value, op.Exp), nil
	case OpGet:
		return s.getCall(s.keys.recordKey(op.NS, op.Key)), nil
	case OpRollback:
		return s.rollbackCall(s.keys.recordKey(op.NS, op.Key), op.Cond), nil
	case OpReprepare:
		return s.reprepareCall(s.keys.recordKey(op.NS, op.Key), op.Value, op.Cond, op.Exp), nil
	case OpMove:
		return s.moveCall(s.keys.recordKey(op.NS, op.Key), op.Value, s.keys.recordKey(op.NS, op.OldKey), op.OldValue, op.Exp), nil
	case OpMPrepare:
		return s.mprepareCall(op.Entries, op.Exp), nil
	}
	return call{}, fmt.Errorf("redis: batch: unknown op kind %d", op.Kind)
}

// runBatch sends calls as one pipeline and decodes the replies into res.
func (s *Store) runBatch(ctx context.Context, calls []call, ops []Op, at []int, res []Result) {
	if len(calls) == 0 {
		return
	}
	c, err := s.conn(ctx)
	if err != nil {
		for k, cl := range calls {
			res[at[k]].Err = s.fail(ctx, cl.op, err)
		}
		return
	}
	rs, repl := s.exec(ctx, c, calls)
	for k, r := range rs {
		cl := calls[k]
		res[at[k]] = s.decode(ctx, ops[at[k]].Kind, cl.op, r)
		if repl != nil && s.writes(cl) && res[at[k]].Err == nil {
			res[at[k]] = Result{Err: repl}
		}
	}
}

// decode reads the reply of one op of a batch.
func (s *Store) decode(ctx context.Context, kind OpKind, op string, r rueidis.RedisResult) Result {
	if err := r.Error(); err != nil && !rueidis.IsRedisNil(err) {
		return Result{Err: s.fail(ctx, op, err)}
	}
	var res Result
	var err error
	switch kind {
	case OpGet:
		res.Record, res.Found, err = decodeGet(r)
	case OpMove:
		res.Move, err = decodeMove(r)
	case OpMPrepare:
		res.OK, err = decodeMPrepare(r)
	default:
		res.OK, err = decodeFlag(r)
	}
	if err != nil {
		return Result{Err: s.fail(ctx, op, err)}
	}
	return res
}
