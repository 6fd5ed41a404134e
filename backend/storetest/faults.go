package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// The fault rows fail, or lose the reply of, each step of a composed
// command in turn (backend.ComposeMove, backend.ComposeMPrepare) and hold
// the store to the contract's guarantees: never both keys of a key change
// released, never the old key released while the new one is not reserved,
// an error whenever the outcome is not known, and never :1 or :0 with
// some keys half done.

// faultPoints are the injections of a command whose steps are named in
// steps with n entries each (n entries of an MPREPARE).
func faultPoints(steps []string, n int) []backend.Step {
	var out []backend.Step
	for _, name := range steps {
		for i := range n {
			out = append(out, backend.Step{Name: name, Index: i}, backend.Step{Name: name, Index: i, Lost: true})
		}
	}
	return out
}

// inject installs a Fault that fails at step only, and reports whether it
// fired.
func inject(e *env, at backend.Step) *bool {
	fired := new(bool)
	e.h.Fault(func(s backend.Step) error {
		if s != at {
			return nil
		}
		*fired = true
		return fmt.Errorf("%s: %w", s, backend.ErrInjected)
	})
	e.t.Cleanup(func() { e.h.Fault(nil) })
	return fired
}

func runFaults(t *testing.T, newStore NewStore) {
	probe := newEnv(t, newStore, tableRetention)
	if probe.h.Fault == nil {
		t.Skip("the store has no composed commands")
	}
	moveSteps := faultPoints([]string{"reserve", "release", "look", "undo"}, 1)
	for _, at := range moveSteps {
		t.Run("move old key matches/"+at.String(), func(t *testing.T) { testMoveFault(t, newStore, at, "ov") })
		t.Run("move old key mismatches/"+at.String(), func(t *testing.T) { testMoveFault(t, newStore, at, "other") })
	}
	for _, at := range faultPoints([]string{"reserve", "undo"}, 3) {
		t.Run("mprepare all free/"+at.String(), func(t *testing.T) { testMPrepareFault(t, newStore, at, false) })
		t.Run("mprepare last key taken/"+at.String(), func(t *testing.T) { testMPrepareFault(t, newStore, at, true) })
	}
	t.Run("undo keeps another client's change", func(t *testing.T) { testUndoKeepsChange(t, newStore) })
}

// testUndoKeepsChange: a composed command that reserved a key and then
// gives up must undo only its own reservation. Another client that
// changed the record in between (REPREPARE KEEPTTL, which a composed
// command's own marks must not survive) keeps its change. MongoDB kept
// its undo mark through a KEEPTTL change until the unrestricted
// linearizability check on FerretDB v2 found it; this row holds every
// composing store to it.
func testUndoKeepsChange(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	// change installs a fault that, when the command is about to run
	// step, has another client change key to value, and reports whether
	// it did.
	change := func(step backend.Step, key, value string) *bool {
		changed := new(bool)
		e.h.Fault(func(s backend.Step) error {
			if s == step && !*changed {
				*changed = e.reprepare(ns, key, value, backend.Cond{}, keepTTL)
			}
			return nil
		})
		e.t.Cleanup(func() { e.h.Fault(nil) })
		return changed
	}

	// MPREPARE a b: a reserved, then changed by another client; b taken,
	// so the command undoes a.
	require.True(t, e.prepare(ns, "b", "taken", forever))
	changed := change(backend.Step{Name: "reserve", Index: 1}, "a", "changed")
	require.False(t, e.mprepare(forever, entry(ns, "a", "mine"), entry(ns, "b", "mine")))
	e.h.Fault(nil)
	require.True(t, *changed, "the fault never ran: the row proves nothing")
	e.requireRecord(ns, "a", "changed", ttlWant{}, true)
	e.requireRecord(ns, "b", "taken", ttlWant{}, true)

	// A key change to n from o whose value differs: n reserved, then
	// changed by another client; the release of o finds no match, so the
	// command undoes n.
	require.True(t, e.prepare(ns, "o", "other", forever))
	changed = change(backend.Step{Name: "release"}, "n", "changed")
	require.Equal(t, backend.OldKeyMismatch, e.move(ns, "n", "mine", "o", "mine", forever))
	e.h.Fault(nil)
	require.True(t, *changed, "the fault never ran: the row proves nothing")
	e.requireRecord(ns, "n", "changed", ttlWant{}, true)
	e.requireRecord(ns, "o", "other", ttlWant{}, true)
}

// testMoveFault: a key change from old (holding held) to new with a fault
// at one step.
func testMoveFault(t *testing.T, newStore NewStore, at backend.Step, held string) {
	e := newEnv(t, newStore, tableRetention)
	require.True(t, e.prepare(ns, "old", held, forever))
	fired := inject(e, at)
	res, err := e.calls.Move(e.ctx, ns, []byte("new"), []byte("nv"), []byte("old"), []byte("ov"), forever)
	e.h.Fault(nil)

	newRec, newHeld := e.get(ns, "new")
	oldRec, oldHeld := e.get(ns, "old")
	moved := newHeld && string(newRec.Value) == "nv" && !oldHeld
	untouched := !newHeld && oldHeld && string(oldRec.Value) == held
	require.False(t, !newHeld && !oldHeld, "both keys released (%v, %v)", res, err)
	require.False(t, !oldHeld && (!newHeld || string(newRec.Value) != "nv"), "old key released, new key not reserved")
	if err != nil {
		require.ErrorIs(t, err, backend.ErrInjected)
		require.True(t, *fired)
		require.True(t, moved || untouched || (newHeld && oldHeld), "after an error: new %v %q, old %v %q", newHeld, newRec.Value, oldHeld, oldRec.Value)
		return
	}
	switch held {
	case "ov":
		require.Equal(t, backend.Moved, res)
		require.True(t, moved, "answered Moved but new %v, old %v", newHeld, oldHeld)
	default:
		require.Equal(t, backend.OldKeyMismatch, res)
		require.True(t, untouched, "answered MISMATCH but new %v %q, old %v", newHeld, newRec.Value, oldHeld)
	}
	// An answer other than an error is only given when the fault did not
	// hide the outcome: a lost reply of the release, looked up.
	if *fired {
		require.Contains(t, []string{"release", "look"}, at.Name, "answered %v through a fault at %s", res, at)
	}
}

// testMPrepareFault: an MPREPARE of three keys (the last one taken when
// taken) with a fault at one step.
func testMPrepareFault(t *testing.T, newStore NewStore, at backend.Step, taken bool) {
	e := newEnv(t, newStore, tableRetention)
	if taken {
		require.True(t, e.prepare(ns, "c", "theirs", forever))
	}
	fired := inject(e, at)
	ok, err := e.calls.MPrepare(e.ctx, []backend.Entry{entry(ns, "c", "vc"), entry(ns, "a", "va"), entry(ns, "b", "vb")}, forever)
	e.h.Fault(nil)

	held := 0
	for _, k := range []string{"a", "b", "c"} {
		if rec, found := e.get(ns, k); found && string(rec.Value) == "v"+k {
			held++
		}
	}
	if taken {
		e.requireRecord(ns, "c", "theirs", ttlWant{}, true)
	}
	if err != nil {
		require.True(t, errors.Is(err, backend.ErrInjected), "%v", err)
		require.True(t, *fired)
		return
	}
	if ok {
		require.False(t, taken, "answered :1 with a key taken")
		require.Equal(t, 3, held, "answered :1 with %d of 3 keys reserved", held)
	} else {
		require.True(t, taken, "answered :0 with every key free")
		require.Zero(t, held, "answered :0 with %d keys left reserved", held)
	}
}
