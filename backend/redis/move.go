package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// Move implements commands.Store. It is one atomic script when both keys
// are in one hash slot: always on standalone and Sentinel, and on a Cluster
// when the slots happen to match (or the key prefix holds a hash tag). On a
// Cluster otherwise it composes two scripts, see moveAcross.
func (s *Store) Move(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	nk, ok := s.keys.recordKey(ns, newKey), s.keys.recordKey(ns, oldKey)
	if s.composed && slot(nk) != slot(ok) {
		return s.moveAcross(ctx, nk, newValue, ok, oldValue, exp)
	}
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	res, err := s.run(ctx, s.moveCall(nk, newValue, ok, oldValue, exp))
	if err != nil {
		return 0, err
	}
	mr, err := decodeMove(res)
	return mr, s.fail(ctx, "move", err)
}

// moveAcross is a key change between two Cluster slots, which no script
// can span: reserve the new key, then release the old one if it holds
// oldValue (as PK.ROLLBACK … IFEQ). When the release does not happen the
// reservation is undone before answering, putting back the expired record
// it may have replaced, so nothing is left half done:
//
//   - new key taken: NewKeyTaken, nothing changed;
//   - old key mismatch: the reservation is undone, OldKeyMismatch;
//   - the release fails: the store reads the old key to learn whether the
//     release happened. If the old record still holds oldValue the
//     reservation is undone and the error returned; if it is gone the key
//     change took effect and Moved is returned;
//   - anything else fails: the reservation is undone (if it was made: when
//     its reply was lost, the new key is deleted if it holds newValue) and
//     the error returned.
//
// The forward steps share one timeout; the recovery gets its own, so a
// composed key change takes at most twice the timeout. Between the two
// steps other clients see both keys reserved. The undo only touches the new
// key while it holds newValue, so it never deletes another client's
// reservation (unless that one holds the very same value).
func (s *Store) moveAcross(ctx context.Context, newKey string, newValue []byte, oldKey string, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	fwd, cancel := s.deadlines.bound(ctx)
	defer cancel()
	var prev *replaced
	reserved, err := false, s.inject("reserve")
	if err == nil {
		prev, reserved, err = s.reserve(fwd, newKey, newValue, exp)
	}
	if err == nil {
		if err = s.inject("reserved"); err != nil {
			prev, reserved = nil, false // as if the reply were lost
		}
	}
	if err == nil && !reserved {
		return backend.NewKeyTaken, nil
	}
	var released bool
	if err == nil {
		if err = s.inject("release"); err == nil {
			released, err = s.flag(fwd, s.rollbackCall(oldKey, backend.IfEq(oldValue)))
		}
		if err == nil {
			err = s.inject("released")
		}
		if err == nil && released {
			return backend.Moved, nil
		}
	}

	rec, cancel2 := s.deadlines.bound(context.WithoutCancel(ctx))
	defer cancel2()
	if err != nil && reserved {
		// The release may have run: look before undoing the reservation.
		old, found, gerr := s.get(rec, oldKey)
		if gerr == nil && (!found || !bytes.Equal(old.Value, oldValue)) {
			return backend.Moved, nil
		}
	}
	if uerr := s.unreserve(rec, newKey, newValue, prev); uerr != nil {
		if err == nil {
			err = errors.New("old key mismatch")
		}
		return 0, &Error{Op: "move", err: errors.Join(err, uerr),
			msg: fmt.Sprintf("%s; undoing the new key's reservation failed too: %s", errMsg(err), errMsg(uerr))}
	}
	if err != nil {
		return 0, err
	}
	return backend.OldKeyMismatch, nil
}

// inject returns the failure a test injects at a step of moveAcross:
// "reserve" and "release" fail before the step runs, "reserved" and
// "released" after it ran, as a lost reply does.
func (s *Store) inject(step string) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(step)
}

// replaced is the expired record that reserve.lua replaced.
type replaced struct {
	value, ttlAt string
}

// reserve runs reserve.lua; prev is nil when the key had no record.
func (s *Store) reserve(ctx context.Context, rkey string, value []byte, exp backend.Expiry) (prev *replaced, ok bool, err error) {
	mode, ms := expiryArgs(exp)
	res, err := s.run(ctx, call{"move", s.scripts.reserve, []string{rkey}, []string{string(value), mode, ms, s.retention}})
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
	_, err := s.flag(ctx, call{"move", s.scripts.unreserve, []string{rkey}, args})
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
