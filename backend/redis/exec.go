package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/prepkey/prepkey/backend"
)

// isolated is Run with backend.Isolated (a transaction's EXEC): the
// block's ops run as one block.lua script, so as one isolated unit. Redis runs a script whole, with no
// other command in between; every op reads one clock.
//
// On a Cluster a script reaches one node and every key it touches must be
// in one hash slot: a block whose keys are in several slots is refused with
// a *backend.NotIsolated naming CROSSSLOT, before anything is sent. With
// the store's key layout each (namespace, key) has a slot of its own, so
// that is most blocks of more than one key, unless the key prefix holds a
// hash tag (then every key is in one slot: see docs/redis.md).
//
// A failure (timeout, lost connection, a Redis error) is the whole
// block's: the script may or may not have run. An error raised inside a
// script after its first write (out of memory) leaves the writes before it,
// as in Redis.
func (s *Store) isolated(ctx context.Context, ops []Op, res []Result) error {
	keys, args, err := s.blockArgs(ops)
	if err != nil {
		return err
	}
	if s.composed {
		for _, k := range keys[1:] {
			if slot(k) != slot(keys[0]) {
				return &backend.NotIsolated{Reason: "CROSSSLOT Keys in request don't hash to the same slot " +
					"(a Redis Cluster runs a transaction in one hash slot; see docs/redis.md)"}
			}
		}
	}
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	writes := false
	for i := range ops {
		writes = writes || ops[i].Kind != OpGet
	}
	r, err := s.run(ctx, call{"exec", s.scripts.block, keys, args, writes})
	if err != nil {
		return err
	}
	arr, err := r.ToArray()
	if err != nil || len(arr) != len(ops) {
		return s.fail(ctx, "exec", fmt.Errorf("unexpected reply %v", r))
	}
	for i := range ops {
		var a answer
		a.readMsg(&arr[i])
		if res[i], err = blockResult(ops[i].Kind, &a); err != nil {
			// A record too large to return is that get's refusal, as
			// any refusal in a block; another error is the block's.
			if r := s.refuseTooLarge(ops[i].NS, ops[i].Key, err); r != nil {
				res[i] = Result{Err: r}
				continue
			}
			return s.fail(ctx, "exec", err)
		}
	}
	return nil
}

// blockArgs encodes ops as block.lua's KEYS and ARGV.
func (s *Store) blockArgs(ops []Op) (keys, args []string, err error) {
	to := &stringSink{ks: s.keys, keys: make([]string, 0, len(ops)), args: make([]string, 1, 1+5*len(ops))}
	to.args[0] = s.retention
	for i := range ops {
		if err := encodeBlockOp(to, &ops[i]); err != nil {
			return nil, nil, err
		}
	}
	return to.keys, to.args, nil
}

// blockSink receives the keys and arguments of block.lua's operations:
// the keys in order, and the arguments in order.
type blockSink interface {
	key(ns string, key []byte)
	arg(a string)
	argBytes(a []byte)
	argInt(n int64)
}

// encodeBlockOp hands op's keys and arguments (opcode first) to to, as
// block.lua reads them: the one encoding of an operation, for the store's
// client and for the Wire.
func encodeBlockOp(to blockSink, op *Op) error {
	switch op.Kind {
	case OpPrepare:
		mode, ms := expiryMode(op.Exp)
		to.key(op.NS, op.Key)
		to.arg("p")
		to.argBytes(op.Value)
		to.arg(mode)
		to.argInt(ms)
	case OpGet:
		to.key(op.NS, op.Key)
		to.arg("g")
	case OpRollback:
		set, v := condArgs(op.Cond)
		to.key(op.NS, op.Key)
		to.arg("r")
		to.arg(set)
		to.argBytes(v)
	case OpReprepare:
		set, v := condArgs(op.Cond)
		mode, ms := expiryMode(op.Exp)
		to.key(op.NS, op.Key)
		to.arg("u")
		to.argBytes(op.Value)
		to.arg(set)
		to.argBytes(v)
		to.arg(mode)
		to.argInt(ms)
	case OpMove:
		mode, ms := expiryMode(op.Exp)
		to.key(op.NS, op.Key)
		to.key(op.NS, op.OldKey)
		to.arg("m")
		to.argBytes(op.Value)
		to.argBytes(op.OldValue)
		to.arg(mode)
		to.argInt(ms)
	case OpMPrepare:
		mode, ms := expiryMode(op.Exp)
		to.arg("M")
		to.argInt(int64(len(op.Entries)))
		to.arg(mode)
		to.argInt(ms)
		for _, e := range op.Entries {
			to.key(e.NS, e.Key)
			to.argBytes(e.Value)
		}
	default:
		return fmt.Errorf("redis: exec: unknown op kind %d", op.Kind)
	}
	return nil
}

// stringSink collects keys and arguments as strings, copied out of the
// caller's buffers (for rueidis).
type stringSink struct {
	ks         keyCodec
	keys, args []string
}

func (t *stringSink) key(ns string, key []byte) { t.keys = append(t.keys, t.ks.recordKey(ns, key)) }
func (t *stringSink) arg(a string)              { t.args = append(t.args, a) }
func (t *stringSink) argBytes(a []byte)         { t.args = append(t.args, string(a)) }
func (t *stringSink) argInt(n int64)            { t.args = append(t.args, strconv.FormatInt(n, 10)) }
