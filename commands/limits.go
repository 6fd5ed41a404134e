package commands

import (
	"strings"
)

// Limits bound what a client may store, so that one request cannot make the
// backend hold arbitrarily large records.
type Limits struct {
	MaxKeyBytes   int
	MaxValueBytes int
}

// DefaultLimits are the contract's defaults.
var DefaultLimits = Limits{MaxKeyBytes: 1024, MaxValueBytes: 65536}

func (l Limits) checkKey(key []byte) (Reply, bool) {
	switch {
	case len(key) == 0:
		return ErrKeyEmpty.Replyf(l.MaxKeyBytes), false
	case len(key) > l.MaxKeyBytes:
		return ErrKeyTooLarge.Replyf(l.MaxKeyBytes), false
	}
	return Reply{}, true
}

func (l Limits) checkValue(value []byte) (Reply, bool) {
	if len(value) > l.MaxValueBytes {
		return ErrValueTooLarge.Replyf(l.MaxValueBytes), false
	}
	return Reply{}, true
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
