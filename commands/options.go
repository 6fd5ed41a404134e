package commands

import (
	"bytes"
	"math"

	"github.com/prepkey/prepkey/backend"
)

// option bits say which options a command accepts; any other word is a
// syntax error, as in Redis.
const (
	optTTL = 1 << iota
	optKeepTTL
	optIfEq
	optFrom
)

// maxTTLAt bounds absolute expiry times to the end of year 9999 (Unix ms).
// Every backend stores it exactly: Redis's Lua numbers are doubles (exact to
// 2^53) and MongoDB dates are int64 milliseconds.
const maxTTLAt int64 = 253402300799999

// options are the parsed optional arguments of a PK command: where each
// option's argument is in the options' arguments (0 when the option is
// absent: index 0 is always an option's word). Indexes, not the arguments'
// slices, keep it at 16 bytes: returned by value, a larger struct is a
// copy that WebAssembly runs as a call of memmove (setOp says why that
// matters).
type options struct {
	ttl, ifeq, from int32 // the argument of EX/PX/EXAT/PXAT, IFEQ, FROM
	keepTTL         bool
}

// parseOptions reads args as keyword options, each at most once. allowed is
// a set of opt bits.
func parseOptions(args [][]byte, allowed int) (options, bool) {
	var o options
	for i := 0; i < len(args); i++ {
		word := args[i]
		var bit int
		switch {
		case isTTLWord(word):
			bit = optTTL
		case bytes.EqualFold(word, []byte("KEEPTTL")):
			bit = optKeepTTL
		case bytes.EqualFold(word, []byte("IFEQ")):
			bit = optIfEq
		case bytes.EqualFold(word, []byte("FROM")):
			bit = optFrom
		default:
			return o, false
		}
		if allowed&bit == 0 {
			return o, false
		}
		if bit == optKeepTTL {
			if o.keepTTL {
				return o, false
			}
			o.keepTTL = true
			continue
		}
		if i+1 == len(args) {
			return o, false
		}
		i++
		at := &o.ttl
		switch bit {
		case optIfEq:
			at = &o.ifeq
		case optFrom:
			at = &o.from
		}
		if *at != 0 {
			return o, false
		}
		*at = int32(i)
	}
	if o.keepTTL && o.ttl != 0 {
		return o, false
	}
	return o, true
}

// ifEq is the IFEQ condition among args (the options parsed into o), or
// none.
func (o options) ifEq(args [][]byte) backend.Cond {
	if o.ifeq == 0 {
		return backend.Cond{}
	}
	return backend.IfEq(args[o.ifeq])
}

func isTTLWord(w []byte) bool {
	return bytes.EqualFold(w, []byte("EX")) || bytes.EqualFold(w, []byte("PX")) ||
		bytes.EqualFold(w, []byte("EXAT")) || bytes.EqualFold(w, []byte("PXAT"))
}

// expiry turns the TTL option into a backend.Expiry, or the error reply of
// command cmd. nowMs is the sidecar's clock: it judges whether an absolute
// time is already past and bounds relative times so that now+ttl stays in
// range. EX/PX are still counted from the backend's own clock when the
// backend applies them.
//
// A numeral that Redis's string2ll refuses ("+5", "007", "-0") gets Redis's
// own "value is not an integer or out of range", as SET ... EX +5 does. The
// contract keeps "invalid expire time" for the rest: a number that is not an
// integer ("1.5", "abc"), one out of range, zero or negative, a time past.
//
// The clock (h.nowMs) is read only for a TTL option, the one that needs it:
// read for every command, it was one of three clock reads a PK.PREPARE
// made on memory: at pipeline 1 (docs/benchmarks.md, "One parse pass").
func (o options) expiry(h *Handler, args [][]byte, cmd string) (backend.Expiry, *Reply) {
	if o.keepTTL {
		return backend.Expiry{Kind: backend.KeepTTL}, nil
	}
	if o.ttl == 0 {
		return backend.Expiry{}, nil
	}
	word, arg := args[o.ttl-1], args[o.ttl]
	n, ok := parseInt(arg)
	if !ok && numeral(arg) && !overflows(arg) {
		return backend.Expiry{}, refuse(ErrNotInteger.Reply())
	}
	// The error is formatted only when it is the answer: on every PK.PREPARE
	// with PX it was an fmt.Sprintf (0.3 % of the CPU at pipeline 1).
	if !ok || n <= 0 {
		return backend.Expiry{}, refuse(invalidExpire(cmd))
	}
	if word[0]|0x20 == 'e' { // EX, EXAT count seconds
		if n > math.MaxInt64/1000 {
			return backend.Expiry{}, refuse(invalidExpire(cmd))
		}
		n *= 1000
	}
	nowMs := h.nowMs()
	if len(word) == 2 { // EX, PX
		if n > maxTTLAt-nowMs {
			return backend.Expiry{}, refuse(invalidExpire(cmd))
		}
		return backend.Expiry{Kind: backend.ExpireAfter, Millis: n}, nil
	}
	if n <= nowMs || n > maxTTLAt {
		return backend.Expiry{}, refuse(invalidExpire(cmd))
	}
	return backend.Expiry{Kind: backend.ExpireAt, Millis: n}, nil
}

func wrongArgs(name string) Reply { return ErrArity.Replyf(name) }

func invalidExpire(name string) Reply { return ErrInvalidExpire.Replyf(name) }
