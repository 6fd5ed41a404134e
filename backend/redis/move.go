package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// steps are the one-key scripts that a command across Cluster slots is
// composed of (backend.ComposeMove, backend.ComposeMPrepare); each bounds
// its own call with the store's timeout.
type steps struct{ s *Store }

// Reserve runs reserve.lua, which also returns the expired record it
// replaced (nil when there was none).
func (st steps) Reserve(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (*replaced, bool, error) {
	ctx, cancel := st.s.deadlines.bound(ctx)
	defer cancel()
	prev, ok, err := st.s.reserve(ctx, st.s.keys.recordKey(ns, key), value, exp)
	if re := (*rueidis.RedisError)(nil); errors.As(err, &re) {
		// The expired record it would replace is too large to hand
		// back for the undo: refused, with nothing written.
		if r := st.s.refuseTooLarge(ns, key, re); r != nil {
			return nil, false, r
		}
	}
	return prev, ok, err
}

// Release is PK.ROLLBACK key IFEQ value.
func (st steps) Release(ctx context.Context, ns string, key, value []byte) (bool, error) {
	r := st.s.one(ctx, Op{Kind: OpRollback, NS: ns, Key: key, Cond: backend.IfEq(value)})
	return r.OK, r.Err
}

// Look is PK.GETVALUE key.
func (st steps) Look(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	r := st.s.one(ctx, Op{Kind: OpGet, NS: ns, Key: key})
	return r.Record, r.Found, r.Err
}

// Unreserve runs unreserve.lua: the key is put back as it was (or deleted)
// only while it holds value. With the reserve's reply lost, prev is
// unknown and the key is deleted if it holds value.
func (st steps) Unreserve(ctx context.Context, ns string, key, value []byte, prev *replaced, _ bool) error {
	ctx, cancel := st.s.deadlines.bound(ctx)
	defer cancel()
	return st.s.unreserve(ctx, st.s.keys.recordKey(ns, key), value, prev)
}

// moveAcross is a key change between two Cluster slots, which no script
// can span: backend.ComposeMove, with its undo that looks first.
func (s *Store) moveAcross(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	r, err := backend.ComposeMove(ctx, steps{s}, s.fault, ns, newKey, newValue, oldKey, oldValue, exp)
	if err != nil {
		return 0, s.composedError("move", err)
	}
	return r, nil
}

// composedError is the error of a composed command: the steps' own errors
// already name Redis's failure.
func (s *Store) composedError(op string, err error) error {
	return &Error{Op: op, msg: strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error()), err: err}
}

// replaced is the expired record that reserve.lua replaced.
type replaced struct {
	value, ttlAt string
}

// reserve runs reserve.lua; prev is nil when the key had no record.
func (s *Store) reserve(ctx context.Context, rkey string, value []byte, exp backend.Expiry) (prev *replaced, ok bool, err error) {
	mode, ms := expiryArgs(exp)
	res, err := s.run(ctx, call{"move", s.scripts.reserve, []string{rkey}, []string{string(value), mode, ms, s.retention}, true})
	if err != nil {
		return nil, false, err
	}
	if n, err := res.AsInt64(); err == nil && n == 0 {
		return nil, false, nil
	}
	prev, err = decodeReserve(res)
	if err != nil {
		return nil, false, s.fail(ctx, "move", err)
	}
	return prev, true, nil
}

func decodeReserve(res rueidis.RedisResult) (*replaced, error) {
	arr, err := res.ToArray()
	if err != nil || (len(arr) != 1 && len(arr) != 3) {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	if n, err := arr[0].AsInt64(); err != nil || n != 1 {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	if len(arr) == 1 {
		return nil, nil
	}
	v, err1 := arr[1].ToString()
	t, err2 := arr[2].ToString()
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("unexpected reply %v", res)
	}
	return &replaced{value: v, ttlAt: t}, nil
}

// unreserve runs unreserve.lua: it undoes reserve if the new key still
// holds value.
func (s *Store) unreserve(ctx context.Context, rkey string, value []byte, prev *replaced) error {
	args := []string{string(value), "0", "", "0", s.retention}
	if prev != nil {
		args[1], args[2], args[3] = "1", prev.value, prev.ttlAt
	}
	_, err := s.flag(ctx, call{"move", s.scripts.unreserve, []string{rkey}, args, true})
	return err
}

// errMsg is the message of err without the "redis: op: " prefix.
func errMsg(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.msg
	}
	return err.Error()
}
