package commands

import (
	"github.com/prepkey/prepkey/backend"
)

// maxMPrepareKeys bounds numkeys: the contract's 64 keeps one command's
// locks, script keys and compensation small.
const maxMPrepareKeys = 64

// PK.MPREPARE numkeys name key value [name key value ...] [TTL option]
//
// Every argument is checked before the store sees anything: the option
// syntax first (numkeys, what follows the triples), then each triple as
// PK.PREPARE checks it (namespace, key, value), then duplicates, then the
// expire time. One bad argument refuses the whole command.
func (h *Handler) parseMPrepare(args [][]byte, op *backend.Op) *Reply {
	n, ok := parseInt(args[1])
	if !ok || n < 1 || n > maxMPrepareKeys || int64(len(args)-2) < 3*n {
		return refuse(ErrSyntax.Reply())
	}
	end := 2 + 3*int(n)
	opts := args[end:]
	o, ok := parseOptions(opts, optTTL)
	if !ok {
		return refuse(ErrSyntax.Reply())
	}
	entries := make([]backend.Entry, n)
	for i := range entries {
		ns, key, value := args[2+3*i], args[3+3*i], args[4+3*i]
		if r := h.checkName(ns, key); r != nil {
			return r
		}
		if r := h.limits.checkValue(value); r != nil {
			return r
		}
		entries[i] = backend.Entry{NS: h.names.intern(ns), Key: key, Value: value}
	}
	if hasDuplicate(entries) {
		return refuse(ErrDuplicateKey.Reply())
	}
	exp, r := o.expiry(h, opts, "pk.mprepare")
	if r != nil {
		return r
	}
	h.setOp(op, backend.OpMPrepare, nil, nil, nil)
	op.Entries, op.Exp = entries, exp
	return nil
}

// hasDuplicate reports whether two entries name the same (namespace, key).
// Namespaces cannot hold a NUL byte, so ns + NUL + key is injective.
func hasDuplicate(entries []backend.Entry) bool {
	if len(entries) < 2 {
		return false
	}
	seen := make(map[string]struct{}, len(entries))
	var buf []byte
	for _, e := range entries {
		buf = append(append(append(buf[:0], e.NS...), 0), e.Key...)
		if _, dup := seen[string(buf)]; dup {
			return true
		}
		seen[string(buf)] = struct{}{}
	}
	return false
}
