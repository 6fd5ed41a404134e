package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Batcher is a Store that can take the store calls of one client pipeline
// at once: the Redis store sends them as one Redis pipeline (one round trip
// instead of one per command), the embedded store commits them with one
// fsync. Each op is still atomic on its own, and ops take effect in the
// order given, so a pipeline means what it would mean one command at a time.
// res has room for len(ops) results.
type Batcher interface {
	Batch(ctx context.Context, ops []backend.Op, res []backend.Result)
}

// IsPK reports whether name is a PK command, in any case.
func (h *Handler) IsPK(name []byte) bool { return h.lookup(name) != nil }

// Drive is how the store declares it is to be driven (Store.Drive).
func (h *Handler) Drive() backend.Drive { return h.store.Drive() }

// Batch answers cmds, PK commands from one or several connections, in
// order, writing replies[i] for cmds[i]. Requests refused by validation are
// answered without the store; the others go to the store in one Batch call
// when it is a Batcher, else one call at a time.
func (h *Handler) Batch(ctx context.Context, cmds [][][]byte, replies []Reply) {
	b, ok := h.store.(Batcher)
	if !ok || len(cmds) == 1 {
		for i, args := range cmds {
			replies[i], _ = h.Do(ctx, args)
		}
		return
	}
	calls := h.Calls(cmds, replies)
	if len(calls.Ops) == 0 {
		return
	}
	res := make([]backend.Result, len(calls.Ops))
	from := 0 // the first op not yet run
	for k, spec := range calls.specs {
		if !spec.alone {
			continue
		}
		if from < k {
			b.Batch(ctx, calls.Ops[from:k], res[from:k])
		}
		res[k] = h.exec(ctx, calls.Ops[k])
		from = k + 1
	}
	if from < len(calls.Ops) {
		b.Batch(ctx, calls.Ops[from:], res[from:])
	}
	calls.Answer(res, replies)
}

// Calls are the store calls of a batch of PK commands, parsed and
// validated, for a caller that takes them to the store itself (package
// protocol writes them to its own Redis connection).
type Calls struct {
	Ops   []backend.Op
	specs []*Spec // specs[k] is the command of Ops[k]
	at    []int   // at[k] is the index in the batch of Ops[k]
}

// Calls parses cmds into store calls. The commands refused by validation
// are answered in replies now; the others have an op in Ops, in order.
func (h *Handler) Calls(cmds [][][]byte, replies []Reply) Calls {
	c := Calls{
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
		op, r, ok := h.parse(spec, args)
		if !ok {
			replies[i] = r
			continue
		}
		c.Ops = append(c.Ops, op)
		c.specs = append(c.specs, spec)
		c.at = append(c.at, i)
	}
	return c
}

// Alone reports whether Ops[k] is a command that runs on its own, not in
// a Batcher's batch nor on a Wire (Handler.Batch runs it).
func (c Calls) Alone(k int) bool { return c.specs[k].alone }

// Index is the index in the batch of the command of Ops[k].
func (c Calls) Index(k int) int { return c.at[k] }

// Answer writes the reply of each command of Ops from res[k], the store's
// result for Ops[k].
func (c Calls) Answer(res []backend.Result, replies []Reply) {
	for k, i := range c.at {
		replies[i] = finish(c.specs[k], res[k])
	}
}
