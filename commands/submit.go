package commands

import (
	"context"
	"errors"

	"github.com/prepkey/prepkey/backend"
)

// The server's side of the store contract (backend.Submission): it parses
// PK commands into ops on its event loop (ParseBatch, ParseOne), submits
// them (Submit), and turns the results into replies when the submission
// is finished (Parsed.Answer, AnswerOne, ExecAnswer). Nothing here waits
// on I/O but LoadSecret, which the server calls off its loop.

// Submit hands s to the store (backend.Store.Submit).
func (h *Handler) Submit(s *backend.Submission) { h.store.Submit(s) }

// Completes is how the store finishes a submission, and Joins whether it
// takes several connections' runs as one (backend.Info).
func (h *Handler) Completes() (backend.Completion, bool) {
	i := h.store.Info()
	return i.Completes, i.Joins
}

// ParseOne parses one command into *op, for a submission of its own. ok
// is false when args[0] names no PK command. Otherwise spec is the
// command's, to answer its result with AnswerOne, or nil when validation
// refused it: refused is then its reply. op is the caller's (a
// connection's, reused), as AnswerOne's reply is, so that a command alone
// is parsed, submitted and answered with no copy of its op or reply but
// into them.
//
// A scan's cursor is opened here with the store's secret, loaded on the
// calling goroutine if it is not yet: the server calls ParseOne on its
// loop only for a store that finishes at once (Info.Completes AtOnce),
// whose Secret does not wait on I/O either.
func (h *Handler) ParseOne(args [][]byte, op *backend.Op) (spec *Spec, refused *Reply, ok bool) {
	spec = h.lookup(args[0])
	if spec == nil {
		return nil, nil, false
	}
	if r := h.parse(spec, args, op); r != nil {
		return nil, r, true
	}
	if op.Kind == backend.OpScan {
		if err := h.LoadSecret(context.Background()); err != nil {
			return nil, refuse(unavailable(err)), true
		}
		if !h.openScan(op) {
			return nil, refuse(ErrInvalidCursor.Reply()), true
		}
	}
	return spec, nil, true
}

// AnswerOne writes into *r the reply of op (parsed by ParseOne for spec)
// from its result.
func (h *Handler) AnswerOne(spec *Spec, op *backend.Op, res *backend.Result, r *Reply) {
	if op.Kind == backend.OpScan {
		h.sealScan(op, res)
	}
	finish(spec, res, r)
}

// LoadSecret reads the store's secret for the scan cursors, once (it is
// cached after that): I/O, not for the event loop (but for a store that
// finishes at once).
func (h *Handler) LoadSecret(ctx context.Context) error {
	_, err := h.secret(ctx)
	return err
}

// cachedSecret is the store's secret if it was loaded, nil otherwise; it
// never waits.
func (h *Handler) cachedSecret() []byte {
	if k := h.sec.ready.Load(); k != nil {
		return *k
	}
	return nil
}

// openScan replaces a scan's sealed cursor (op.Key) with the store's
// position; false when the cursor fails its tag. The secret is loaded.
func (h *Handler) openScan(op *backend.Op) bool {
	if op.Key == nil {
		return true
	}
	pos, ok := openCursor(h.cachedSecret(), op.NS, op.Key)
	if !ok {
		return false
	}
	op.Key = pos
	return true
}

// sealScan turns a scan's page's position into the cursor handed to the
// client ("0" when the scan is done).
func (h *Handler) sealScan(op *backend.Op, res *backend.Result) {
	if res.Err != nil || res.Page == nil {
		return
	}
	if res.Page.Done {
		res.Page.Next = []byte("0")
		return
	}
	res.Page.Next = encodeCursor(h.cachedSecret(), op.NS, res.Page.Next)
}

// HasScans reports whether the batch holds a scan, whose cursor is opened
// (OpenScans) before its ops go to the store.
func (c *Parsed) HasScans() bool { return c.scans > 0 }

// OpenScans opens the scans' cursors with the store's secret, answering
// in replies those that fail their tag (they leave Ops: the store never
// sees a cursor it did not hand out). It reports false, changing nothing,
// when the secret is not loaded yet: the caller loads it off its loop
// (Handler.LoadSecret) and calls OpenScans again with that call's error,
// which, when not nil, answers every scan -UNAVAILABLE.
func (c *Parsed) OpenScans(replies []Reply, loadErr error) bool {
	if c.scans == 0 {
		return true
	}
	if loadErr == nil && c.h.cachedSecret() == nil {
		return false
	}
	kept := 0
	for k := range c.Ops {
		op := &c.Ops[k]
		if op.Kind == backend.OpScan {
			switch {
			case loadErr != nil:
				replies[c.at[k]] = unavailable(loadErr)
				continue
			case !c.h.openScan(op):
				replies[c.at[k]] = ErrInvalidCursor.Reply()
				continue
			}
		}
		c.Ops[kept], c.specs[kept], c.at[kept] = c.Ops[k], c.specs[k], c.at[k]
		kept++
	}
	clear(c.Ops[kept:])
	c.Ops, c.specs, c.at = c.Ops[:kept], c.specs[:kept], c.at[:kept]
	c.scans = 0
	return true
}

// ExecAnswer checks a transaction block parsed by ParseBatch before it is
// submitted (Isolated): ok is false with EXEC's reply when it is not to
// run (a scan: many reads, not one isolated step).
func (c *Parsed) ExecCheck() (abort Reply, ok bool) {
	for _, spec := range c.specs {
		if spec.alone {
			return ErrExecAbort.Replyf(spec.Name + " does not run in a transaction (a scan is many reads, not one isolated step)"), false
		}
	}
	return Reply{}, true
}

// ExecAnswer writes the replies of a transaction block from the results of
// its Isolated submission, res and err (the block's outcome, Submission.Err).
// It returns ok false with the reply of EXEC itself when the block did
// not run: -EXECABORT when the store cannot isolate it (a
// *backend.NotIsolated: nothing ran), or -UNAVAILABLE when the store
// failed (it may or may not have taken effect).
func (c *Parsed) ExecAnswer(res []backend.Result, err error, replies []Reply) (abort Reply, ok bool) {
	if err != nil {
		if ni, isNI := errors.AsType[*backend.NotIsolated](err); isNI {
			return ErrExecAbort.Replyf(oneLine(ni.Reason)), false
		}
		return unavailable(err), false
	}
	for _, r := range res[:len(c.Ops)] {
		// A store failure is the whole block's; a refusal of one
		// command's arguments is that command's entry.
		if _, refused := errors.AsType[*backend.Refusal](r.Err); r.Err != nil && !refused {
			return unavailable(r.Err), false
		}
	}
	c.Answer(res, replies)
	return Reply{}, true
}
