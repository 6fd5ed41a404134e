package commands

import (
	"github.com/prepkey/prepkey/backend"
)

// Each parser validates in the same order: arity (in the caller), option
// syntax, namespace, key sizes, value sizes, expire time. It fills *op
// with the store call to make and returns nil, or returns the error reply
// when the request is refused (*op is then not to be used); the store only
// ever sees requests that passed every check.

// PK.PREPARE name key value [EX s|PX ms|EXAT s|PXAT ms]
func (h *Handler) parsePrepare(args [][]byte, op *backend.Op) *Reply {
	opts := args[4:]
	o, ok := parseOptions(opts, optTTL)
	if !ok {
		return refuse(ErrSyntax.Reply())
	}
	ns, key, value := args[1], args[2], args[3]
	if r := h.checkName(ns, key); r != nil {
		return r
	}
	if r := h.limits.checkValue(value); r != nil {
		return r
	}
	exp, r := o.expiry(h, opts, "pk.prepare")
	if r != nil {
		return r
	}
	h.setOp(op, backend.OpPrepare, ns, key, value)
	op.Exp = exp
	return nil
}

// PK.GET name key and PK.GETVALUE name key: one store read; they differ in
// their replies only.
func (h *Handler) parseGet(args [][]byte, op *backend.Op) *Reply {
	ns, key := args[1], args[2]
	if r := h.checkName(ns, key); r != nil {
		return r
	}
	h.setOp(op, backend.OpGet, ns, key, nil)
	return nil
}

// PK.ROLLBACK name key [IFEQ value]
func (h *Handler) parseRollback(args [][]byte, op *backend.Op) *Reply {
	opts := args[3:]
	o, ok := parseOptions(opts, optIfEq)
	if !ok {
		return refuse(ErrSyntax.Reply())
	}
	ns, key := args[1], args[2]
	if r := h.checkName(ns, key); r != nil {
		return r
	}
	ifeq := o.ifEq(opts)
	if r := h.limits.checkValue(ifeq.Value); r != nil {
		return r
	}
	h.setOp(op, backend.OpRollback, ns, key, nil)
	op.Cond = ifeq
	return nil
}

// PK.REPREPARE name key value [IFEQ current] [KEEPTTL | TTL option]
// PK.REPREPARE name newKey newValue FROM oldKey IFEQ oldValue [TTL option]
func (h *Handler) parseReprepare(args [][]byte, op *backend.Op) *Reply {
	opts := args[4:]
	o, ok := parseOptions(opts, optTTL|optKeepTTL|optIfEq|optFrom)
	if !ok || (o.from != 0 && o.keepTTL) {
		return refuse(ErrSyntax.Reply())
	}
	ns, key, value := args[1], args[2], args[3]
	ifeq := o.ifEq(opts)
	var from []byte
	if o.from != 0 {
		if !ifeq.Set {
			return refuse(ErrFromNeedsIfEq.Reply())
		}
		from = opts[o.from]
		if r := h.checkName(ns, key); r != nil {
			return r
		}
		if r := h.limits.checkKey(from); r != nil {
			return r
		}
	} else if r := h.checkName(ns, key); r != nil {
		return r
	}
	if r := h.limits.checkValue(value); r != nil {
		return r
	}
	if r := h.limits.checkValue(ifeq.Value); r != nil {
		return r
	}
	exp, r := o.expiry(h, opts, "pk.reprepare")
	if r != nil {
		return r
	}
	if o.from == 0 {
		h.setOp(op, backend.OpReprepare, ns, key, value)
		op.Cond, op.Exp = ifeq, exp
		return nil
	}
	if string(from) == string(key) {
		return refuse(ErrFromSameKey.Reply())
	}
	h.setOp(op, backend.OpMove, ns, key, value)
	op.OldKey, op.OldValue, op.Exp = from, ifeq.Value, exp
	return nil
}

// setOp makes *op an op of kind on ns, key and value, its other fields
// cleared, writing the fields one by one. The op is the caller's, reused
// from command to command. On WebAssembly `*op = backend.Op{...}` zeroes
// a temporary of 208 bytes and copies it: Go compiles the zeroing to
// memory.fill, which wazero runs as eight calls of memmove, and the copy
// to a ninth; such copies and zeroings were a tenth of the module's CPU at
// pipeline 16 (issue 34, docs/wasm.md).
func (h *Handler) setOp(op *backend.Op, kind backend.OpKind, ns, key, value []byte) {
	op.Kind = kind
	op.NS = h.names.intern(ns)
	op.Key, op.Value = key, value
	op.Cond = backend.Cond{}
	op.Exp = backend.Expiry{}
	op.OldKey, op.OldValue = nil, nil
	op.Entries = nil
	op.Count = 0
	op.Keep = nil
}

// replyGet answers PK.GET: the live value or nil.
func replyGet(res *backend.Result, r *Reply) {
	if !res.Found || !res.Record.Live {
		r.set(Nil, 0, nil)
		return
	}
	r.set(Bulk, 0, res.Record.Value)
}

// replyGetValue answers PK.GETVALUE: [value, ttlAt] for any retained
// record, ttlAt -1 for forever.
func replyGetValue(res *backend.Result, r *Reply) {
	if !res.Found {
		r.set(NilArray, 0, nil)
		return
	}
	ttlAt := res.Record.TTLAt
	if ttlAt == backend.Forever {
		ttlAt = -1
	}
	r.set(Record, ttlAt, res.Record.Value)
}

// replyWrite answers the write commands.
func replyWrite(res *backend.Result, r *Reply) {
	r.setInt(res.OK)
}

// replyReprepare answers both forms of PK.REPREPARE.
func replyReprepare(res *backend.Result, r *Reply) {
	switch res.Move {
	case 0:
		r.setInt(res.OK)
	case backend.Moved:
		r.setInt(true)
	case backend.NewKeyTaken:
		r.setInt(false)
	default:
		*r = ErrMismatch.Reply()
	}
}
