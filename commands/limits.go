package commands

import (
	"strings"
	"sync/atomic"
)

// Limits bound what a client may store, so that one request cannot make the
// backend hold arbitrarily large records.
type Limits struct {
	MaxKeyBytes   int
	MaxValueBytes int
}

// DefaultLimits are the contract's defaults.
var DefaultLimits = Limits{MaxKeyBytes: 1024, MaxValueBytes: 65536}

// checkKey returns the reply refusing key, or nil when it is good.
func (l Limits) checkKey(key []byte) *Reply {
	switch {
	case len(key) == 0:
		return refuse(ErrKeyEmpty.Replyf(l.MaxKeyBytes))
	case len(key) > l.MaxKeyBytes:
		return refuse(ErrKeyTooLarge.Replyf(l.MaxKeyBytes))
	}
	return nil
}

// checkValue returns the reply refusing value, or nil when it is good.
func (l Limits) checkValue(value []byte) *Reply {
	if len(value) > l.MaxValueBytes {
		return refuse(ErrValueTooLarge.Replyf(l.MaxValueBytes))
	}
	return nil
}

// validNamespace reports whether ns is 1 to 64 bytes of A-Z a-z 0-9 _ . -.
func validNamespace(ns []byte) bool {
	if len(ns) == 0 || len(ns) > 64 {
		return false
	}
	for _, c := range ns {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}

// namespaces interns the namespaces of recent commands, so that a command's
// namespace becomes its op's string (backend.Op.NS) without an allocation
// when a recent command named it, as nearly every command does: an
// application uses a few. The allocation and the garbage collection it fed
// were about 4 % of the WebAssembly module's CPU at pipeline 16 (issue
// 34). Eight slots, chosen by length and last byte, each the last name
// seen there: it never grows. Safe for concurrent use (the event loops).
type namespaces struct {
	last [8]atomic.Pointer[string]
}

// intern returns string(ns), from a slot when it holds it.
func (n *namespaces) intern(ns []byte) string {
	if len(ns) == 0 {
		return ""
	}
	slot := &n.last[(len(ns)+int(ns[len(ns)-1]))%len(n.last)]
	if s := slot.Load(); s != nil && *s == string(ns) {
		return *s
	}
	s := string(ns)
	slot.Store(&s)
	return s
}

// oneLine makes text safe for a RESP error or simple string, which end at the
// first CR or LF (Redis does the same to error messages).
func oneLine(text string) string {
	if !strings.ContainsAny(text, "\r\n") {
		return text
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, text)
}
