package mongo

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Run implements backend.Store. Pipelined, the ops run one at a time, each
// one atomic operation on one document (or composed: opMove, opMPrepare):
// MongoDB has no batch of atomic document operations, each is its own
// round trip, and each is bounded by the store's timeout on its own.
//
// Isolated, it refuses every block (a *backend.NotIsolated): EXEC of a
// block with PK commands answers -EXECABORT and nothing runs.
//
// Each PK command is one atomic operation on one document, but a block
// spans several documents (often in several collections, one per
// namespace), and MongoDB isolates several documents only inside a
// multi-document transaction, which needs a replica set or a sharded
// cluster (not a standalone server, and not FerretDB). Running the commands
// one by one would let other clients see and change the keys between them:
// the race a client asks MULTI to rule out (two sign-ups each taking one
// of two keys). Refusing is the answer that leaves nothing half done; an
// application that needs several keys at once uses PK.MPREPARE, composed
// and compensated on this backend.
func (s *Store) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return notIsolated()
	}
	backend.RunEach(ctx, ops, res, s.one)
	return nil
}

// RunOne implements backend.Store: op alone (one).
func (s *Store) RunOne(ctx context.Context, op backend.Op) backend.Result { return s.one(ctx, &op) }

// one runs op alone: the store's one switch over the kinds of ops.
func (s *Store) one(ctx context.Context, op *backend.Op) backend.Result {
	var r backend.Result
	switch op.Kind {
	case backend.OpPrepare:
		r.OK, r.Err = s.opPrepare(ctx, op.NS, op.Key, op.Value, op.Exp)
	case backend.OpGet:
		r.Record, r.Found, r.Err = s.opGet(ctx, op.NS, op.Key)
	case backend.OpRollback:
		r.OK, r.Err = s.opRollback(ctx, op.NS, op.Key, op.Cond)
	case backend.OpReprepare:
		r.OK, r.Err = s.opReprepare(ctx, op.NS, op.Key, op.Value, op.Cond, op.Exp)
	case backend.OpMove:
		r.Move, r.Err = s.opMove(ctx, op.NS, op.Key, op.Value, op.OldKey, op.OldValue, op.Exp)
	case backend.OpMPrepare:
		r.OK, r.Err = s.opMPrepare(ctx, op.Entries, op.Exp)
	default:
		r.Err = backend.UnknownOp("mongo", op.Kind)
	}
	return r
}

// notIsolated is Run's answer to every transaction block.
func notIsolated() error {
	return &backend.NotIsolated{Reason: "the mongodb backend cannot run PK commands in a transaction " +
		"(no isolation across documents without a replica-set transaction; see docs/mongo.md)"}
}
