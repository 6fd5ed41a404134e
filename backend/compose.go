package backend

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
)

// Steps are the one-key operations a backend composes a command from where
// it has no atomic step over several keys (Redis Cluster across slots,
// MongoDB). Each is atomic on its key. P is what Reserve learns about the
// record it replaced, which Unreserve needs to put it back.
//
// Each method bounds its own call with the backend's timeout; an error
// means the step may or may not have taken effect.
type Steps[P any] interface {
	// Reserve is PK.PREPARE of key that also returns what it replaced.
	Reserve(ctx context.Context, ns string, key, value []byte, exp Expiry) (prev P, ok bool, err error)
	// Release is PK.ROLLBACK key IFEQ value.
	Release(ctx context.Context, ns string, key, value []byte) (bool, error)
	// Look is PK.GETVALUE key.
	Look(ctx context.Context, ns string, key []byte) (Record, bool, error)
	// Unreserve undoes a Reserve of key for value: only when key still
	// holds what that Reserve wrote, it puts back prev (the zero P: deletes
	// it). known is false when Reserve's reply was lost: prev is then
	// unknown and the record, if Reserve wrote it, is deleted.
	Unreserve(ctx context.Context, ns string, key, value []byte, prev P, known bool) error
}

// Step names a step of a composed command, for fault injection.
type Step struct {
	// Name is "reserve", "release", "look" or "undo".
	Name string
	// Index is the entry of an MPrepare in the order reserved (Move: 0).
	Index int
	// Lost is false for a failure before the step runs, true for one after
	// it ran (its reply lost).
	Lost bool
}

func (s Step) String() string {
	when := "before"
	if s.Lost {
		when = "lost reply of"
	}
	return fmt.Sprintf("%s %s #%d", when, s.Name, s.Index)
}

// Fault is a test's failure injector: a non-nil error is the step's
// failure. Stores hold a nil Fault outside tests.
type Fault func(Step) error

// ErrInjected is what tests return from a Fault.
var ErrInjected = errors.New("injected failure")

// composer runs the steps of one composed command with fault injection.
type composer[P any] struct {
	st    Steps[P]
	fault Fault
}

func (c composer[P]) inject(name string, i int, lost bool) error {
	if c.fault == nil {
		return nil
	}
	return c.fault(Step{Name: name, Index: i, Lost: lost})
}

func (c composer[P]) reserve(ctx context.Context, i int, ns string, key, value []byte, exp Expiry) (prev P, ok bool, err error) {
	if err = c.inject("reserve", i, false); err != nil {
		return prev, false, err
	}
	prev, ok, err = c.st.Reserve(ctx, ns, key, value, exp)
	if err == nil {
		if err = c.inject("reserve", i, true); err != nil {
			var zero P
			return zero, false, err
		}
	}
	return prev, ok, err
}

func (c composer[P]) release(ctx context.Context, ns string, key, value []byte) (bool, error) {
	if err := c.inject("release", 0, false); err != nil {
		return false, err
	}
	ok, err := c.st.Release(ctx, ns, key, value)
	if err == nil {
		if err = c.inject("release", 0, true); err != nil {
			return false, err
		}
	}
	return ok, err
}

func (c composer[P]) look(ctx context.Context, ns string, key []byte) (Record, bool, error) {
	if err := c.inject("look", 0, false); err != nil {
		return Record{}, false, err
	}
	rec, ok, err := c.st.Look(ctx, ns, key)
	if err == nil {
		if err = c.inject("look", 0, true); err != nil {
			return Record{}, false, err
		}
	}
	return rec, ok, err
}

func (c composer[P]) undo(ctx context.Context, i int, ns string, key, value []byte, prev P, known bool) error {
	if err := c.inject("undo", i, false); err != nil {
		return err
	}
	if err := c.st.Unreserve(ctx, ns, key, value, prev, known); err != nil {
		return err
	}
	return c.inject("undo", i, true)
}

// ComposeMove is PK.REPREPARE … FROM … as two steps: reserve newKey, then
// release oldKey if it holds oldValue. On any other outcome the reservation
// is undone, but only after looking:
//
//   - newKey taken: NewKeyTaken, nothing changed.
//   - oldKey mismatch: newKey is undone; OldKeyMismatch, or an error if the
//     undo failed (newKey may be left reserved).
//   - the reserve failed or its reply was lost: oldKey was not touched;
//     newKey is undone if it holds newValue, and the error returned.
//   - the release failed or its reply was lost: oldKey is read. Gone: the
//     release happened (or oldKey went since), Moved. Still holding
//     oldValue: it did not, newKey is undone and the error returned.
//     Holding another value, or the read fails: nothing is undone (the
//     release may have happened, and undoing newKey then would leave
//     neither key reserved) and the error returned, newKey left reserved
//     for the client to check.
//
// So it never leaves both keys released, never releases oldKey while
// newKey is not reserved, and answers an error whenever it does not know
// the outcome. The forward steps run under ctx; looking and undoing under
// a context that outlives the caller's cancellation (each step still has
// the backend's timeout), since stopping halfway is what they prevent.
func ComposeMove[P any](ctx context.Context, st Steps[P], fault Fault, ns string, newKey, newValue, oldKey, oldValue []byte, exp Expiry) (MoveResult, error) {
	c := composer[P]{st: st, fault: fault}
	prev, reserved, err := c.reserve(ctx, 0, ns, newKey, newValue, exp)
	if err == nil && !reserved {
		return NewKeyTaken, nil
	}
	rec := context.WithoutCancel(ctx)
	if err != nil {
		// Not known whether newKey was reserved; oldKey is untouched.
		var zero P
		if uerr := c.undo(rec, 0, ns, newKey, newValue, zero, false); uerr != nil {
			return 0, fmt.Errorf("reserve new key: %w; undoing it: %w", err, uerr)
		}
		return 0, fmt.Errorf("reserve new key: %w", err)
	}
	released, err := c.release(ctx, ns, oldKey, oldValue)
	if err == nil && released {
		return Moved, nil
	}
	if err != nil {
		old, found, lerr := c.look(rec, ns, oldKey)
		if lerr != nil {
			return 0, fmt.Errorf("release old key: %w; reading it to learn whether it was released: %w (the new key stays reserved)", err, lerr)
		}
		switch {
		case !found:
			// Released, by this command or since: the state is the key
			// change's.
			return Moved, nil
		case !bytes.Equal(old.Value, oldValue):
			// Either released by this command and reserved again by
			// someone else, or never held oldValue: undoing newKey could
			// leave the client neither key, keeping it could leave it
			// both. Keep it, and say the outcome is unknown.
			return 0, fmt.Errorf("release old key: %w; the old key now holds another value (the new key stays reserved)", err)
		}
	}
	if uerr := c.undo(rec, 0, ns, newKey, newValue, prev, true); uerr != nil {
		if err == nil {
			return 0, fmt.Errorf("old key mismatch; undoing the new key's reservation: %w", uerr)
		}
		return 0, fmt.Errorf("release old key: %w; undoing the new key's reservation: %w", err, uerr)
	}
	if err != nil {
		return 0, fmt.Errorf("release old key: %w", err)
	}
	return OldKeyMismatch, nil
}

// ComposeMPrepare is PK.MPREPARE as one reservation after the other, in
// the order of (namespace, key), so that two MPREPAREs sharing keys meet
// on the first shared one and one of them wins. When a key is taken, or a
// reservation fails, those this command reserved are undone (each only if
// it still holds this command's value):
//
//   - every key reserved: true.
//   - a key taken, every undo done: false, nothing left reserved.
//   - a reservation failed or its reply was lost, or an undo failed: an
//     error; keys may be left reserved, and the client checks.
//
// It never answers true or false with some keys left half done.
func ComposeMPrepare[P any](ctx context.Context, st Steps[P], fault Fault, entries []Entry, exp Expiry) (bool, error) {
	c := composer[P]{st: st, fault: fault}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(entries[a].NS, entries[b].NS), bytes.Compare(entries[a].Key, entries[b].Key))
	})
	// With exp.Kind ExpireAfter each key's ttlAt would count from its own
	// step: resolve it once, on the first step's clock, by the caller.
	prevs := make([]P, 0, len(entries))
	var failed error
	n := 0 // entries of order reserved
	for n < len(order) {
		e := entries[order[n]]
		prev, ok, err := c.reserve(ctx, n, e.NS, e.Key, e.Value, exp)
		if err != nil {
			failed = fmt.Errorf("reserve %s key %d: %w", e.NS, n+1, err)
			break
		}
		if !ok {
			break
		}
		prevs = append(prevs, prev)
		n++
	}
	if n == len(order) {
		return true, nil
	}
	rec := context.WithoutCancel(ctx)
	var undoErrs []error
	if failed != nil {
		// The failed reservation may have been made.
		e := entries[order[n]]
		var zero P
		if err := c.undo(rec, n, e.NS, e.Key, e.Value, zero, false); err != nil {
			undoErrs = append(undoErrs, err)
		}
	}
	for j := n - 1; j >= 0; j-- {
		e := entries[order[j]]
		if err := c.undo(rec, j, e.NS, e.Key, e.Value, prevs[j], true); err != nil {
			undoErrs = append(undoErrs, err)
		}
	}
	if len(undoErrs) > 0 {
		return false, errors.Join(cmp.Or(failed, errors.New("a key is taken")), fmt.Errorf("undoing the reservations: %w", errors.Join(undoErrs...)))
	}
	if failed != nil {
		return false, failed
	}
	return false, nil
}
