package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// ExecAbortQueued is EXEC's reply after a command was refused while queued.
func ExecAbortQueued() Reply { return ErrExecAbortQueued.Reply() }

// Check gives a PK command every check it would get on its own (arity,
// syntax, namespace, sizes, expire time), without running it: a
// transaction queues it, or answers the error. ok is false with the error
// reply when it is refused. args[0] must name a PK command (IsPK).
func (h *Handler) Check(args [][]byte) (r Reply, ok bool) {
	spec := h.lookup(args[0])
	if spec == nil {
		return UnknownCommand(args), false
	}
	var op backend.Op
	if r := h.parse(spec, args, &op); r != nil {
		return *r, false
	}
	return Reply{}, true
}

// Exec runs the PK commands of a transaction block, each checked when it
// was queued, as one isolated unit, and writes replies[i] for cmds[i]. It
// returns ok false with the reply of EXEC itself when the block does not
// run: -EXECABORT when the store cannot isolate it (a
// *backend.NotIsolated from its Run with backend.Isolated: nothing ran), or
// -UNAVAILABLE when the store failed (it may or may not have taken
// effect). A block without PK commands does not reach the store.
//
// Each command is parsed again here: an absolute expire time that passed
// between MULTI and EXEC is refused in that command's entry, and the others
// run, as a command that fails at run time in Redis.
func (h *Handler) Exec(ctx context.Context, cmds [][][]byte, replies []Reply) (abort Reply, ok bool) {
	calls := h.ParseBatch(cmds, replies)
	if len(calls.Ops) == 0 {
		return Reply{}, true
	}
	if abort, ok := calls.ExecCheck(); !ok {
		return abort, false
	}
	res := make([]backend.Result, len(calls.Ops))
	err := h.store.Run(ctx, calls.Ops, res, backend.Isolated)
	return calls.ExecAnswer(res, err, replies)
}
