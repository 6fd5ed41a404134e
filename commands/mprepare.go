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
func (h *Handler) parseMPrepare(args [][]byte) (backend.Op, Reply, bool) {
	n, ok := parseInt(args[1])
	if !ok || n < 1 || n > maxMPrepareKeys || int64(len(args)-2) < 3*n {
		return backend.Op{}, ErrSyntax.Reply(), false
	}
	end := 2 + 3*int(n)
	o, ok := parseOptions(args[end:], optTTL)
	if !ok {
		return backend.Op{}, ErrSyntax.Reply(), false
	}
	entries := make([]backend.Entry, n)
	for i := range entries {
		ns, key, value := args[2+3*i], args[3+3*i], args[4+3*i]
		if r, ok := h.checkNames(ns, key); !ok {
			return backend.Op{}, r, false
		}
		if r, ok := h.checkValues(value); !ok {
			return backend.Op{}, r, false
		}
		entries[i] = backend.Entry{NS: string(ns), Key: key, Value: value}
	}
	if hasDuplicate(entries) {
		return backend.Op{}, ErrDuplicateKey.Reply(), false
	}
	exp, r, ok := o.expiry(h, "pk.mprepare")
	if !ok {
		return backend.Op{}, r, false
	}
	return backend.Op{Kind: backend.OpMPrepare, Entries: entries, Exp: exp}, Reply{}, true
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
