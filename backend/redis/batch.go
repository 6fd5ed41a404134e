package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// The op types are the neutral ones of package backend.
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

// A block.lua call holds at most maxBlockOps operations (a key change
// counts 2, a PK.MPREPARE its number of keys) and maxBlockBytes of keys
// and values: Redis is single-threaded and runs a script whole, so one
// call must not hold it much longer than half a millisecond, which would
// delay every other client of that Redis. A longer batch is several calls,
// sent together (one round trip). Measured on Redis 7.0.15 (INFO
// commandstats, docs/benchmarks.md): 128 prepares of small values take
// 0.27–0.36 ms in one call, 16 of 16 KiB (256 KiB) 0.6–0.7 ms, 16 of
// 64 KiB 1.8–2.0 ms. One op larger than the bound goes alone.
const (
	maxBlockOps   = 128
	maxBlockBytes = 256 << 10
)

// blockSpan is how many operations of ops, from the first, go in one
// block.lua call: at least one unless ops starts with a scan, which is
// never in a block (it takes round trips of its own), and never past one.
func blockSpan(ops []Op) int {
	cost, size := 0, 0
	for i := range ops {
		op := &ops[i]
		if op.Kind == backend.OpScan {
			return i
		}
		c := 1
		b := len(op.Key) + len(op.Value) + len(op.OldKey) + len(op.OldValue) + len(op.Cond.Value)
		switch op.Kind {
		case OpMove:
			c = 2
		case OpMPrepare:
			c = len(op.Entries)
			for _, e := range op.Entries {
				b += len(e.Key) + len(e.Value)
			}
		}
		if i > 0 && (cost+c > maxBlockOps || size+b > maxBlockBytes) {
			return i
		}
		cost, size = cost+c, size+b
	}
	return len(ops)
}

// Run implements backend.Store: Pipelined, the ops go to Redis as one
// pipeline (pipeline), a command alone as block.lua with one operation;
// Isolated, as one block.lua call (isolated).
//
// Each PK command is one atomic script, but a key change or a PK.MPREPARE
// whose keys are in several hash slots of a Cluster (never on standalone
// and Sentinel, and not when the key prefix holds a hash tag): those are
// composed (moveAcross, mprepareAcross: backend.ComposeMove and
// backend.ComposeMPrepare, one reserve.lua per key, undone when a key is
// taken or a step fails).
func (s *Store) Run(ctx context.Context, ops []Op, res []Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return s.isolated(ctx, ops, res)
	}
	s.pipeline(ctx, ops, res)
	return nil
}

// RunOne implements backend.Store: op alone, a pipeline of one (one).
func (s *Store) RunOne(ctx context.Context, op Op) Result { return s.one(ctx, op) }

// pipeline runs ops, as read from client connections' pipelines, and sets
// res[i] to the outcome of ops[i] (len(res) must be at least len(ops)).
// The ops go to Redis as block.lua calls (each runs a list of operations
// as one script), bounded by blockSpan, all sent in one round trip: so
// Redis runs one script per batch instead of one per command, and the ops
// take effect in the order given. On a Cluster a script reaches one slot:
// the ops are grouped by slot, one list per slot (in order within it; ops
// in different slots touch different keys, so their order does not
// matter). A key change or an MPREPARE across Cluster slots cannot be in
// a script: it runs alone, after the ops before it have answered and
// before the ops after it are sent.
//
// An op that fails inside a script (WRONGTYPE: another type at its key)
// gets its own error; the others of the list run and are answered. A
// failure of the call (timeout, lost connection, a Redis error) is each
// of its ops' failure: they may or may not have run.
//
// After a script cache flush a call answered NOSCRIPT did not run: it is
// sent again with EVAL, which caches the script again.
func (s *Store) pipeline(ctx context.Context, ops []Op, res []Result) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	lo := 0
	for i := range ops {
		op := &ops[i]
		res[i] = Result{}
		switch {
		case op.Kind == OpMove && s.composed && slot(s.keys.recordKey(op.NS, op.Key)) != slot(s.keys.recordKey(op.NS, op.OldKey)):
			s.runBlocks(ctx, ops[lo:i], res[lo:i])
			res[i].Move, res[i].Err = s.moveAcross(ctx, op.NS, op.Key, op.Value, op.OldKey, op.OldValue, op.Exp)
		case op.Kind == OpMPrepare && !s.oneSlot(op.Entries):
			s.runBlocks(ctx, ops[lo:i], res[lo:i])
			res[i].OK, res[i].Err = s.mprepareAcross(ctx, op.Entries, op.Exp)
		default:
			continue
		}
		lo = i + 1
	}
	s.runBlocks(ctx, ops[lo:], res[lo:])
}

// oneSlot reports whether one script can take entries' keys: not a
// Cluster, or all in one slot.
func (s *Store) oneSlot(entries []backend.Entry) bool {
	_, ok := s.entryKeys(entries)
	return ok
}

// block is one block.lua call of a batch: the ops at the indexes at.
type block struct {
	call
	at []int
}

// planBlocks splits ops (none across slots) into block.lua calls: one
// list on standalone and Sentinel, one per slot on a Cluster, each cut at
// blockSpan. An op of an unknown kind gets its error in res and is left
// out.
func (s *Store) planBlocks(ops []Op, res []Result) []block {
	if len(ops) == 0 {
		return nil
	}
	var groups [][]int // indexes in ops: one group, or one per slot
	var bySlot map[uint16]int
	if s.composed {
		bySlot = map[uint16]int{}
	}
	for i := range ops {
		if !ops[i].Kind.Runs() {
			res[i].Err = backend.UnknownOp("redis: batch", ops[i].Kind)
			continue
		}
		g := 0
		if s.composed {
			sl := s.opSlot(&ops[i])
			var ok bool
			if g, ok = bySlot[sl]; !ok {
				g = len(groups)
				bySlot[sl] = g
				groups = append(groups, nil)
			}
		} else if groups == nil {
			groups = [][]int{make([]int, 0, len(ops))}
		}
		groups[g] = append(groups[g], i)
	}
	var blocks []block
	for _, g := range groups {
		list := make([]Op, len(g))
		for j, i := range g {
			list[j] = ops[i]
		}
		for len(g) > 0 {
			k := max(blockSpan(list), 1)
			cl, err := s.blockCall("batch", list[:k])
			if err != nil {
				for _, i := range g[:k] {
					res[i].Err = err
				}
			} else {
				blocks = append(blocks, block{cl, g[:k]})
			}
			g, list = g[k:], list[k:]
		}
	}
	return blocks
}

// runBlocks runs ops (none across slots) as block.lua calls in one round
// trip and decodes the replies into res.
func (s *Store) runBlocks(ctx context.Context, ops []Op, res []Result) {
	blocks := s.planBlocks(ops, res)
	if len(blocks) == 0 {
		return
	}
	c, err := s.conn(ctx)
	if err != nil {
		for _, b := range blocks {
			for _, i := range b.at {
				res[i].Err = s.fail(ctx, opName(ops[i].Kind), err)
			}
		}
		return
	}
	calls := make([]call, len(blocks))
	for j, b := range blocks {
		calls[j] = b.call
	}
	rs, repl := s.exec(ctx, c, calls)
	for j, r := range rs {
		s.decodeBlock(ctx, r, blocks[j].at, ops, res, repl)
	}
}

// opSlot is the Cluster slot of op's keys (one slot: runBlocks gets no
// op across slots).
func (s *Store) opSlot(op *Op) uint16 {
	if op.Kind == OpMPrepare && len(op.Entries) > 0 {
		return slot(s.keys.recordKey(op.Entries[0].NS, op.Entries[0].Key))
	}
	return slot(s.keys.recordKey(op.NS, op.Key))
}

// blockCall is the block.lua call of ops.
func (s *Store) blockCall(name string, ops []Op) (call, error) {
	keys, args, err := s.blockArgs(ops)
	if err != nil {
		return call{}, err
	}
	writes := false
	for i := range ops {
		writes = writes || ops[i].Kind != OpGet
	}
	return call{op: name, sc: s.scripts.block, keys: keys, args: args, writes: writes}, nil
}

// decodeBlock reads the reply r of the block.lua call of the ops at the
// indexes at into res. repl, when set, is the failure of every write
// (too few replicas acknowledged).
func (s *Store) decodeBlock(ctx context.Context, r rueidis.RedisResult, at []int, ops []Op, res []Result, repl error) {
	failAll := func(err error) {
		for _, i := range at {
			res[i] = Result{Err: s.fail(ctx, opName(ops[i].Kind), err)}
		}
	}
	if err := r.Error(); err != nil {
		failAll(err)
		return
	}
	arr, err := r.ToArray()
	if err != nil || len(arr) != len(at) {
		failAll(fmt.Errorf("unexpected reply %v", r))
		return
	}
	for j, i := range at {
		kind := ops[i].Kind
		var a answer
		a.readMsg(&arr[j])
		v, err := blockResult(kind, &a)
		switch {
		case err != nil:
			v = Result{Err: s.opError(ctx, &ops[i], err)}
		case repl != nil && kind != OpGet:
			v = Result{Err: repl}
		}
		res[i] = v
	}
}
