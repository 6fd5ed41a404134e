package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Each handler validates in the same order: arity (in Do), option syntax,
// namespace, key sizes, value sizes, expire time. The store is called only
// with arguments that passed all of them.

// PK.PREPARE name key value [EX s|PX ms|EXAT s|PXAT ms]
func (h *Handler) prepare(ctx context.Context, args [][]byte) Reply {
	o, ok := parseOptions(args[4:], optTTL)
	if !ok {
		return errReply(errSyntax)
	}
	ns, key, value := args[1], args[2], args[3]
	if r, ok := h.checkNames(ns, key); !ok {
		return r
	}
	if r, ok := h.checkValues(value); !ok {
		return r
	}
	exp, ok := o.expiry(h.nowMs())
	if !ok {
		return invalidExpire("pk.prepare")
	}
	done, err := h.store.Prepare(ctx, string(ns), key, value, exp)
	if err != nil {
		return unavailable(err)
	}
	return intReply(done)
}

// PK.GET name key
func (h *Handler) get(ctx context.Context, args [][]byte) Reply {
	rec, found, r, ok := h.read(ctx, args)
	if !ok {
		return r
	}
	if !found || !rec.Live {
		return Reply{Kind: Nil}
	}
	return Reply{Kind: Bulk, Bytes: rec.Value}
}

// PK.GETVALUE name key
func (h *Handler) getValue(ctx context.Context, args [][]byte) Reply {
	rec, found, r, ok := h.read(ctx, args)
	if !ok {
		return r
	}
	if !found {
		return Reply{Kind: NilArray}
	}
	ttlAt := rec.TTLAt
	if ttlAt == backend.Forever {
		ttlAt = -1
	}
	return Reply{Kind: Record, Bytes: rec.Value, Int: ttlAt}
}

// read is the shared body of GET and GETVALUE. ok is false when r is an
// error reply.
func (h *Handler) read(ctx context.Context, args [][]byte) (rec backend.Record, found bool, r Reply, ok bool) {
	ns, key := args[1], args[2]
	if r, ok := h.checkNames(ns, key); !ok {
		return rec, false, r, false
	}
	rec, found, err := h.store.Get(ctx, string(ns), key)
	if err != nil {
		return rec, false, unavailable(err), false
	}
	return rec, found, Reply{}, true
}

// PK.ROLLBACK name key [IFEQ value]
func (h *Handler) rollback(ctx context.Context, args [][]byte) Reply {
	o, ok := parseOptions(args[3:], optIfEq)
	if !ok {
		return errReply(errSyntax)
	}
	ns, key := args[1], args[2]
	if r, ok := h.checkNames(ns, key); !ok {
		return r
	}
	if r, ok := h.checkValues(o.ifeq.Value); !ok {
		return r
	}
	done, err := h.store.Rollback(ctx, string(ns), key, o.ifeq)
	if err != nil {
		return unavailable(err)
	}
	return intReply(done)
}

// PK.REPREPARE name key value [IFEQ current] [KEEPTTL | TTL option]
// PK.REPREPARE name newKey newValue FROM oldKey IFEQ oldValue [TTL option]
func (h *Handler) reprepare(ctx context.Context, args [][]byte) Reply {
	o, ok := parseOptions(args[4:], optTTL|optKeepTTL|optIfEq|optFrom)
	if !ok || (o.hasFrom && o.keepTTL) {
		return errReply(errSyntax)
	}
	ns, key, value := args[1], args[2], args[3]
	if o.hasFrom {
		if !o.ifeq.Set {
			return errReply(errFromNeedsIfEq)
		}
		if r, ok := h.checkNames(ns, key, o.from); !ok {
			return r
		}
	} else if r, ok := h.checkNames(ns, key); !ok {
		return r
	}
	if r, ok := h.checkValues(value, o.ifeq.Value); !ok {
		return r
	}
	exp, ok := o.expiry(h.nowMs())
	if !ok {
		return invalidExpire("pk.reprepare")
	}
	if !o.hasFrom {
		done, err := h.store.Reprepare(ctx, string(ns), key, value, o.ifeq, exp)
		if err != nil {
			return unavailable(err)
		}
		return intReply(done)
	}
	if string(o.from) == string(key) {
		return errReply(errFromSameKey)
	}
	res, err := h.store.Move(ctx, string(ns), key, value, o.from, o.ifeq.Value, exp)
	switch {
	case err != nil:
		return unavailable(err)
	case res == backend.Moved:
		return intReply(true)
	case res == backend.NewKeyTaken:
		return intReply(false)
	default:
		return errReply(errMismatch)
	}
}
