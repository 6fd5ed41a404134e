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

// Batches reports whether the store takes a batch at once (a Batcher);
// otherwise Batch is one store call after the other.
func (h *Handler) Batches() bool {
	_, ok := h.store.(Batcher)
	return ok
}

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
	specs := make([]*Spec, len(cmds))
	ops := make([]backend.Op, 0, len(cmds))
	at := make([]int, 0, len(cmds)) // at[k] is the command of ops[k]
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
		specs[i] = spec
		ops = append(ops, op)
		at = append(at, i)
	}
	if len(ops) == 0 {
		return
	}
	res := make([]backend.Result, len(ops))
	b.Batch(ctx, ops, res)
	for k, i := range at {
		replies[i] = finish(specs[i], res[k])
	}
}
