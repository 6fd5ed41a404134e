package commands

import (
	"github.com/prepkey/prepkey/backend"
)

// Each parser validates in the same order: arity (in the caller), option
// syntax, namespace, key sizes, value sizes, expire time. It returns the
// store call to make, or the error reply when the request is refused; the
// store only ever sees requests that passed every check.

// PK.PREPARE name key value [EX s|PX ms|EXAT s|PXAT ms]
func (h *Handler) parsePrepare(args [][]byte) (backend.Op, Reply, bool) {
	o, ok := parseOptions(args[4:], optTTL)
	if !ok {
		return backend.Op{}, ErrSyntax.Reply(), false
	}
	ns, key, value := args[1], args[2], args[3]
	if r, ok := h.checkNames(ns, key); !ok {
		return backend.Op{}, r, false
	}
	if r, ok := h.checkValues(value); !ok {
		return backend.Op{}, r, false
	}
	exp, r, ok := o.expiry(h, "pk.prepare")
	if !ok {
		return backend.Op{}, r, false
	}
	return backend.Op{Kind: backend.OpPrepare, NS: string(ns), Key: key, Value: value, Exp: exp}, Reply{}, true
}

// PK.GET name key and PK.GETVALUE name key: one store read; they differ in
// their replies only.
func (h *Handler) parseGet(args [][]byte) (backend.Op, Reply, bool) {
	ns, key := args[1], args[2]
	if r, ok := h.checkNames(ns, key); !ok {
		return backend.Op{}, r, false
	}
	return backend.Op{Kind: backend.OpGet, NS: string(ns), Key: key}, Reply{}, true
}

// PK.ROLLBACK name key [IFEQ value]
func (h *Handler) parseRollback(args [][]byte) (backend.Op, Reply, bool) {
	o, ok := parseOptions(args[3:], optIfEq)
	if !ok {
		return backend.Op{}, ErrSyntax.Reply(), false
	}
	ns, key := args[1], args[2]
	if r, ok := h.checkNames(ns, key); !ok {
		return backend.Op{}, r, false
	}
	if r, ok := h.checkValues(o.ifeq.Value); !ok {
		return backend.Op{}, r, false
	}
	return backend.Op{Kind: backend.OpRollback, NS: string(ns), Key: key, Cond: o.ifeq}, Reply{}, true
}

// PK.REPREPARE name key value [IFEQ current] [KEEPTTL | TTL option]
// PK.REPREPARE name newKey newValue FROM oldKey IFEQ oldValue [TTL option]
func (h *Handler) parseReprepare(args [][]byte) (backend.Op, Reply, bool) {
	o, ok := parseOptions(args[4:], optTTL|optKeepTTL|optIfEq|optFrom)
	if !ok || (o.hasFrom && o.keepTTL) {
		return backend.Op{}, ErrSyntax.Reply(), false
	}
	ns, key, value := args[1], args[2], args[3]
	if o.hasFrom {
		if !o.ifeq.Set {
			return backend.Op{}, ErrFromNeedsIfEq.Reply(), false
		}
		if r, ok := h.checkNames(ns, key, o.from); !ok {
			return backend.Op{}, r, false
		}
	} else if r, ok := h.checkNames(ns, key); !ok {
		return backend.Op{}, r, false
	}
	if r, ok := h.checkValues(value, o.ifeq.Value); !ok {
		return backend.Op{}, r, false
	}
	exp, r, ok := o.expiry(h, "pk.reprepare")
	if !ok {
		return backend.Op{}, r, false
	}
	if !o.hasFrom {
		return backend.Op{Kind: backend.OpReprepare, NS: string(ns), Key: key, Value: value, Cond: o.ifeq, Exp: exp}, Reply{}, true
	}
	if string(o.from) == string(key) {
		return backend.Op{}, ErrFromSameKey.Reply(), false
	}
	return backend.Op{Kind: backend.OpMove, NS: string(ns), Key: key, Value: value, OldKey: o.from, OldValue: o.ifeq.Value, Exp: exp}, Reply{}, true
}

// replyGet answers PK.GET: the live value or nil.
func replyGet(res backend.Result) Reply {
	if !res.Found || !res.Record.Live {
		return Reply{Kind: Nil}
	}
	return Reply{Kind: Bulk, Bytes: res.Record.Value}
}

// replyGetValue answers PK.GETVALUE: [value, ttlAt] for any retained
// record, ttlAt -1 for forever.
func replyGetValue(res backend.Result) Reply {
	if !res.Found {
		return Reply{Kind: NilArray}
	}
	ttlAt := res.Record.TTLAt
	if ttlAt == backend.Forever {
		ttlAt = -1
	}
	return Reply{Kind: Record, Bytes: res.Record.Value, Int: ttlAt}
}

// replyWrite answers the write commands.
func replyWrite(res backend.Result) Reply {
	return intReply(res.OK)
}

// replyReprepare answers both forms of PK.REPREPARE.
func replyReprepare(res backend.Result) Reply {
	switch res.Move {
	case 0:
		return intReply(res.OK)
	case backend.Moved:
		return intReply(true)
	case backend.NewKeyTaken:
		return intReply(false)
	default:
		return ErrMismatch.Reply()
	}
}
