package backend

import (
	"context"
	"fmt"
)

// Isolation says how a store runs the ops of one Run call.
type Isolation uint8

const (
	// Pipelined: each op is atomic on its own, and the ops take effect in
	// the order given, so the list means what its ops would mean one call
	// at a time (a client pipeline; the runs of several clients batched
	// together). A store may run them together (one Redis pipeline, one
	// fsync) or one by one. A failure is that op's Result.Err: the op may
	// or may not have taken effect; the others are still run. Run returns
	// nil.
	Pipelined Isolation = iota
	// Isolated: the ops are one isolated unit (a transaction's EXEC): no
	// other client's op on the same keys runs between them, and each sees
	// the effects of those before it. On success every Result.Err is nil
	// but a store's Refusal of one op's arguments. An error is the outcome
	// of the whole block: a *NotIsolated when the store cannot isolate this
	// block and ran none of it, any other error a failure after which the
	// block may or may not have taken effect.
	Isolated
)

func (iso Isolation) String() string {
	if iso == Isolated {
		return "isolated"
	}
	return "pipelined"
}

// Runner is the half of the store contract (Store) that runs PK commands:
// a list of ops at once, Run, or one alone, RunOne.
//
// Run runs ops and sets res[i] to the outcome of ops[i] (len(res) is at
// least len(ops)), as iso says. RunOne runs op alone and returns its
// outcome: Run of that one op, Pipelined. Neither ever gets an OpScan: a
// scan is many reads, never one step, and is a method of its own
// (Store.Scan). The ops alias the caller's buffers (a
// connection's read buffer): a store that keeps a key or value past the
// call copies it.
//
// RunOne is the sidecar's path for a command alone (every command on the
// event loop, DriveInline). It takes the op by value and returns the
// result by value so that it costs what a call of that command alone cost
// before ops were data: Run's lists escape through the interface call, so
// a Run of one op cost a command alone either an allocation or a pooled
// pair of lists and the write barriers of copying the op into it and
// clearing it (measured on memory:, commands.BenchmarkDo: +20% a PK.GET).
type Runner interface {
	Run(ctx context.Context, ops []Op, res []Result, iso Isolation) error
	RunOne(ctx context.Context, op Op) Result
}

// NotIsolated is a store's refusal to run a transaction block (EXEC, a
// Run with Isolated) that it cannot run as one isolated unit: nothing of
// the block ran. Reason says why, for the client (it follows "EXECABORT
// Transaction discarded: ").
type NotIsolated struct{ Reason string }

func (e *NotIsolated) Error() string { return "transaction not isolated: " + e.Reason }

// RunEach runs ops one at a time with one, in order, each atomic on its
// own: Run with Pipelined for a store that has no batch of its ops
// (MongoDB: one atomic document operation per command).
func RunEach(ctx context.Context, ops []Op, res []Result, one func(context.Context, *Op) Result) {
	for i := range ops {
		res[i] = one(ctx, &ops[i])
	}
}

// UnknownOp is the failure of an op of a kind the store does not run.
func UnknownOp(store string, k OpKind) error {
	return fmt.Errorf("%s: unknown op kind %d", store, k)
}

// Calls is the per-command adapter over a store's Runner: each method is
// one op, run alone (RunOne). It is how tests and tools call a store one
// command at a time (storetest, each backend's own tests); the sidecar
// hands the store its ops itself (commands.Handler).
type Calls struct{ Runner }

func (c Calls) one(ctx context.Context, op Op) Result { return c.RunOne(ctx, op) }

// Prepare reserves key for value when no live record holds it (an expired
// one is replaced). exp.Kind is never KeepTTL.
func (c Calls) Prepare(ctx context.Context, ns string, key, value []byte, exp Expiry) (bool, error) {
	r := c.one(ctx, Op{Kind: OpPrepare, NS: ns, Key: key, Value: value, Exp: exp})
	return r.OK, r.Err
}

// Get returns the record of key, live or expired but retained; ok is false
// when there is none.
func (c Calls) Get(ctx context.Context, ns string, key []byte) (rec Record, ok bool, err error) {
	r := c.one(ctx, Op{Kind: OpGet, NS: ns, Key: key})
	return r.Record, r.Found, r.Err
}

// Rollback deletes the record of key, live or expired, if ifeq holds.
func (c Calls) Rollback(ctx context.Context, ns string, key []byte, ifeq Cond) (bool, error) {
	r := c.one(ctx, Op{Kind: OpRollback, NS: ns, Key: key, Cond: ifeq})
	return r.OK, r.Err
}

// Reprepare replaces the value of the live record of key if ifeq holds;
// the new record's ttlAt comes from exp (KeepTTL allowed).
func (c Calls) Reprepare(ctx context.Context, ns string, key, value []byte, ifeq Cond, exp Expiry) (bool, error) {
	r := c.one(ctx, Op{Kind: OpReprepare, NS: ns, Key: key, Value: value, Cond: ifeq, Exp: exp})
	return r.OK, r.Err
}

// Move reserves newKey for newValue and releases oldKey if its value is
// oldValue (live or expired but retained), never leaving half of it done
// when it returns. newKey and oldKey differ. exp.Kind is never KeepTTL.
func (c Calls) Move(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp Expiry) (MoveResult, error) {
	r := c.one(ctx, Op{Kind: OpMove, NS: ns, Key: newKey, Value: newValue, OldKey: oldKey, OldValue: oldValue, Exp: exp})
	return r.Move, r.Err
}

// MPrepare reserves every entry for its value, all or none: false when a
// live record holds any of them (nothing is left reserved). Entries are
// distinct (namespace, key) pairs; every key gets the same ttlAt.
// exp.Kind is never KeepTTL. Atomic where the backend documents it;
// elsewhere composed, never returning with some entries half done.
func (c Calls) MPrepare(ctx context.Context, entries []Entry, exp Expiry) (bool, error) {
	r := c.one(ctx, Op{Kind: OpMPrepare, Entries: entries, Exp: exp})
	return r.OK, r.Err
}
