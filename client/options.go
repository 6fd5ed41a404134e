package client

import (
	"time"
)

// Expiry says when a reservation expires. The zero Expiry, like giving none,
// means forever. Build one with TTL or ExpireAt.
type Expiry struct {
	ttl time.Duration // TTL's; 0 when at is used or forever
	at  time.Time     // ExpireAt's
	set bool
}

// TTL expires a reservation d after the command runs, counted on the
// backend's clock (PX). d is sent in whole milliseconds, rounded down as
// go-redis does for SET; below one millisecond it is an ErrInvalidArgument.
func TTL(d time.Duration) Expiry { return Expiry{ttl: d, set: true} }

// ExpireAt expires a reservation at t (PXAT, t in Unix milliseconds, rounded
// down). A time already past is refused by the sidecar (a *ReplyError,
// "invalid expire time"), judged on its clock.
func ExpireAt(t time.Time) Expiry { return Expiry{at: t, set: true} }

// args returns the TTL option's words, nil for forever.
func (e Expiry) args(command string) ([]any, error) {
	switch {
	case !e.set:
		return nil, nil
	case !e.at.IsZero():
		ms := e.at.UnixMilli()
		if ms <= 0 {
			return nil, invalid(command, "ExpireAt %v is not after 1970", e.at)
		}
		return []any{"PXAT", ms}, nil
	case e.ttl < time.Millisecond:
		return nil, invalid(command, "TTL %v is below one millisecond", e.ttl)
	default:
		return []any{"PX", e.ttl.Milliseconds()}, nil
	}
}

func (e Expiry) applyReprepare(r *reprepareArgs) { r.expiries = append(r.expiries, e) }

// oneExpiry returns the TTL option's words of at most one Expiry.
func oneExpiry(command string, exps []Expiry) ([]any, error) {
	switch len(exps) {
	case 0:
		return nil, nil
	case 1:
		return exps[0].args(command)
	default:
		return nil, invalid(command, "%d expiries given, at most one is allowed", len(exps))
	}
}

// ReprepareOption is an option of Reprepare: IfEq, KeepTTL, or an Expiry
// (TTL, ExpireAt).
type ReprepareOption interface {
	applyReprepare(*reprepareArgs)
}

type reprepareArgs struct {
	ifEq     [][]byte
	keepTTL  int
	expiries []Expiry
	err      error // an option's own (Key.IfEq's encoding)
}

type ifEqOption []byte

func (v ifEqOption) applyReprepare(r *reprepareArgs) { r.ifEq = append(r.ifEq, []byte(v)) }

// IfEq makes Reprepare replace the record only while its value is current
// (compared byte for byte; an empty value is a value, nil is the same as
// empty).
func IfEq(current []byte) ReprepareOption { return ifEqOption(current) }

type keepTTLOption struct{}

func (keepTTLOption) applyReprepare(r *reprepareArgs) { r.keepTTL++ }

// KeepTTL makes Reprepare keep the record's expiry. Without it, and without
// an Expiry, the replaced record is forever.
func KeepTTL() ReprepareOption { return keepTTLOption{} }

// args returns the options' words for PK.REPREPARE.
func (r *reprepareArgs) args(command string) ([]any, error) {
	if r.err != nil {
		return nil, r.err
	}
	if len(r.ifEq) > 1 {
		return nil, invalid(command, "IfEq given %d times", len(r.ifEq))
	}
	if r.keepTTL > 1 {
		return nil, invalid(command, "KeepTTL given %d times", r.keepTTL)
	}
	if r.keepTTL == 1 && len(r.expiries) > 0 {
		return nil, invalid(command, "KeepTTL with an expiry")
	}
	var out []any
	if len(r.ifEq) == 1 {
		out = append(out, "IFEQ", r.ifEq[0])
	}
	if r.keepTTL == 1 {
		out = append(out, "KEEPTTL")
	}
	ttl, err := oneExpiry(command, r.expiries)
	return append(out, ttl...), err
}

// ScanOption is an option of Scan.
type ScanOption func(*scanArgs)

type scanArgs struct {
	match         []string
	count         []int
	live, expired int
}

// ScanMatch keeps the keys that match pattern, Redis's glob (*, ?, [...],
// \ escapes), matched by the sidecar after it reads them: pages may come
// back empty while the scan goes on.
func ScanMatch(pattern string) ScanOption {
	return func(s *scanArgs) { s.match = append(s.match, pattern) }
}

// ScanCount is a hint for the records the sidecar reads per page, 1 to 1000
// (the sidecar's default: 10).
func ScanCount(n int) ScanOption { return func(s *scanArgs) { s.count = append(s.count, n) } }

// ScanLive keeps live records only (forever, or not yet at their expiry).
func ScanLive() ScanOption { return func(s *scanArgs) { s.live++ } }

// ScanExpired keeps expired records only (retained by the sidecar for
// --expired-retention after their expiry).
func ScanExpired() ScanOption { return func(s *scanArgs) { s.expired++ } }

// args returns the options' words for PK.SCAN.
func (s *scanArgs) args(command string) ([]any, error) {
	var out []any
	switch {
	case len(s.match) > 1, len(s.count) > 1, s.live > 1, s.expired > 1:
		return nil, invalid(command, "an option given twice")
	case s.live == 1 && s.expired == 1:
		return nil, invalid(command, "ScanLive with ScanExpired")
	}
	if len(s.match) == 1 {
		out = append(out, "MATCH", s.match[0])
	}
	if len(s.count) == 1 {
		if n := s.count[0]; n < 1 || n > 1000 {
			return nil, invalid(command, "ScanCount %d is not within 1 to 1000", n)
		}
		out = append(out, "COUNT", s.count[0])
	}
	if s.live == 1 {
		out = append(out, "LIVE")
	}
	if s.expired == 1 {
		out = append(out, "EXPIRED")
	}
	return out, nil
}
