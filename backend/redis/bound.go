package redis

import (
	"context"
	"strconv"
	"strings"

	"github.com/prepkey/prepkey/backend"
)

// tooLarge starts the error the scripts answer, in place of a record, for
// a record whose value is longer than the store's read bound (maxValue,
// --max-value-bytes) or whose ttlAt text is longer than 20 bytes: block.lua
// and wow_block.lua to a get, reserve.lua for the expired record it would
// replace. Its number is the record's size (value and ttlAt). Only another
// writer stores such a record (a Wow service, anyone with access to the
// Redis): it is refused inside the script, so Redis never sends it and the
// sidecar never holds it.
const tooLarge = "TOOLARGE "

// tooLargeSize reports whether msg, a script's error, is tooLarge, and
// the size it names.
func tooLargeSize(msg string) (int64, bool) {
	rest, ok := strings.CutPrefix(msg, tooLarge)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(rest, 10, 64)
	return n, err == nil
}

// refuseTooLarge returns the refusal naming (ns, key) when err is a
// script's tooLarge, else nil.
func (s *Store) refuseTooLarge(ns string, key []byte, err error) *backend.Refusal {
	if err == nil {
		return nil
	}
	if n, ok := tooLargeSize(err.Error()); ok {
		return backend.RecordTooLarge(ns, key, n, s.maxValue)
	}
	return nil
}

// opError is op's error from its answer in a script's array: a record too
// large to return is the refusal that names it, anything else Redis's
// failure (fail).
func (s *Store) opError(ctx context.Context, op *Op, err error) error {
	if r := s.refuseTooLarge(op.NS, op.Key, err); r != nil {
		return r
	}
	return s.fail(ctx, opName(op.Kind), err)
}
