package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// IsPK reports whether name is a PK command, in any case.
func (h *Handler) IsPK(name []byte) bool { return h.lookup(name) != nil }

// Batch answers cmds, PK commands from one or several connections, in
// order, writing replies[i] for cmds[i]. Requests refused by validation are
// answered without the store; the others go to the store in one Run
// (backend.Pipelined), but a scan, which runs on its own between the Runs
// of the commands around it. One command is Do's path.
func (h *Handler) Batch(ctx context.Context, cmds [][][]byte, replies []Reply) {
	if len(cmds) == 1 {
		replies[0], _ = h.Do(ctx, cmds[0])
		return
	}
	calls := h.ParseBatch(cmds, replies)
	if !calls.OpenScans(replies, nil) {
		calls.OpenScans(replies, h.LoadSecret(ctx))
	}
	if len(calls.Ops) == 0 {
		return
	}
	res := make([]backend.Result, len(calls.Ops))
	from := 0 // the first op not yet run
	for k, spec := range calls.specs {
		if !spec.alone {
			continue
		}
		h.runPipelined(ctx, calls.Ops[from:k], res[from:k])
		res[k] = backend.ScanOp(ctx, h.store, &calls.Ops[k])
		from = k + 1
	}
	h.runPipelined(ctx, calls.Ops[from:], res[from:])
	calls.Answer(res, replies)
}

// runPipelined runs ops (no scan) with one Run, each atomic on its own.
func (h *Handler) runPipelined(ctx context.Context, ops []backend.Op, res []backend.Result) {
	if len(ops) == 0 {
		return
	}
	if err := h.store.Run(ctx, ops, res, backend.Pipelined); err != nil {
		// A Pipelined Run reports failures per op; an error of the whole
		// run (a store outside the contract) fails each op.
		for i := range res {
			res[i] = backend.Result{Err: err}
		}
	}
}

// Parsed is a batch of PK commands parsed and validated into their ops,
// for a caller that takes them to the store itself (package protocol
// writes them to its own Redis connection).
type Parsed struct {
	Ops   []backend.Op
	specs []*Spec // specs[k] is the command of Ops[k]
	at    []int   // at[k] is the index in the batch of Ops[k]
	h     *Handler
	// scans counts the scans whose cursor is still sealed (OpenScans).
	scans int
	// answer, when set, answers Ops[k] instead of its spec (ParsedOf).
	answer func(k int, res backend.Result) Reply
}

// ParsedOf is a batch parsed by a handler other than this package's (a
// test's fake store): ops[k] is the command at[k] of the batch, answered
// by answer from its result.
func ParsedOf(ops []backend.Op, at []int, answer func(k int, res backend.Result) Reply) Parsed {
	return Parsed{Ops: ops, at: at, answer: answer}
}

// ParseBatch parses cmds into their ops. The commands refused by
// validation are answered in replies now; the others have an op in Ops,
// in order.
func (h *Handler) ParseBatch(cmds [][][]byte, replies []Reply) Parsed {
	c := Parsed{
		h:     h,
		Ops:   make([]backend.Op, 0, len(cmds)),
		specs: make([]*Spec, 0, len(cmds)),
		at:    make([]int, 0, len(cmds)),
	}
	for i, args := range cmds {
		spec := h.lookup(args[0])
		if spec == nil {
			replies[i] = UnknownCommand(args)
			continue
		}
		// The op is parsed in place, in Ops' next element (zero: Ops is
		// new), not copied there (setOp).
		k := len(c.Ops)
		c.Ops = c.Ops[:k+1]
		if r := h.parse(spec, args, &c.Ops[k]); r != nil {
			c.Ops[k] = backend.Op{}
			c.Ops = c.Ops[:k]
			replies[i] = *r
			continue
		}
		if c.Ops[k].Kind == backend.OpScan {
			c.scans++
		}
		c.specs = append(c.specs, spec)
		c.at = append(c.at, i)
	}
	return c
}

// Index is the index in the batch of the command of Ops[k].
func (c Parsed) Index(k int) int { return c.at[k] }

// Answer writes the reply of each command of Ops from res[k], the store's
// result for Ops[k]; a scan's next position is sealed into its cursor.
func (c Parsed) Answer(res []backend.Result, replies []Reply) {
	for k, i := range c.at {
		if c.answer != nil {
			replies[i] = c.answer(k, res[k])
			continue
		}
		if c.Ops[k].Kind == backend.OpScan {
			c.h.sealScan(&c.Ops[k], &res[k])
		}
		finish(c.specs[k], &res[k], &replies[i])
	}
}
