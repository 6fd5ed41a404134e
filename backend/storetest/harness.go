// Package storetest is the conformance suite that every backend must pass:
// one test per row of the PK contract that a store decides, plus races over
// real goroutines, all on the store's own contract (backend.Store: Run,
// RunOne, Scan, Secret, Ping, Info). It imports no server
// package (commands, protocol), so a backend's test binary links no server;
// the cases that go through the server (PK.SCAN's cursors, MATCH and
// LIVE/EXPIRED, MULTI/EXEC over connections) are in e2e/conformance, on
// every backend. A backend runs it all with one call:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness { ... })
//	}
package storetest

import (
	"testing"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// Harness is one fresh, empty store under test and control of its clock.
type Harness struct {
	// Store is the store under test, on the one contract (backend.Store):
	// the suite calls it one command at a time through backend.Calls (each
	// command one op through RunOne, the sidecar's path for a command
	// alone), and with lists of ops through Run (pipelines, transaction
	// blocks).
	Store backend.Store

	// Now is the store's clock (for Redis, the server's). Nil means
	// time.Now.
	Now func() time.Time

	// Advance moves the store's clock forward by d, so expiry is tested
	// without sleeping. Nil means the store follows real time and the suite
	// sleeps instead (real servers); the suite keeps its durations short for
	// them.
	Advance func(d time.Duration)

	// Fault, for a store that composes commands from steps (Redis Cluster
	// across slots, MongoDB), installs a failure injector in them (nil
	// removes it); nil for stores with atomic commands. The suite then
	// fails or loses the reply of each step in turn.
	Fault func(backend.Fault)

	// Hold, for a store whose calls can be held (the embedded store's
	// fsync), holds them until release is called: a submission under way
	// then waits. Nil: the deadline row holds a composed command's step
	// through Fault, or is skipped.
	Hold func() (release func())

	// SkipRaces names why races on existing records cannot be tested on this
	// store (e.g. a server known not to be atomic there); empty runs them.
	SkipRaces string

	// Isolates reports whether the store runs a transaction block whose PK
	// commands touch keys (of namespace ns) as one isolated unit; when it
	// does not, EXEC must answer -EXECABORT and change nothing. Nil means
	// it always does.
	Isolates func(ns string, keys [][]byte) bool

	// BlockKeys are two keys (of namespace ns) that the store runs in one
	// isolated block, for the isolation races; empty means "a" and "b". A
	// Cluster gives two keys of one slot.
	BlockKeys [2]string

	// Values, for a store that takes only some values (MongoDB in
	// layout=wow: JSON), maps the suite's values to and from the store's
	// (e.g. &JSONValues); nil passes them as they are.
	Values *ValueMap

	// TextKeys, for a store that takes only UTF-8 keys (layout=wow), says
	// why: the keys that are not UTF-8 are left out of the cases that use
	// them (logged), and the cases written for bytes above 0x7f use
	// characters instead. Empty: every key is binary.
	TextKeys string
}

// NewStore returns a fresh, empty store built with opts. It registers its
// own cleanup with t.Cleanup.
type NewStore func(t *testing.T, opts backend.Options) Harness

// Open builds a fresh store with newStore, for suites outside this package
// (e2e/conformance): the harness as the suite's own cases get it, its
// values mapped (Harness.Values) and the store's retention set.
func Open(t *testing.T, newStore NewStore, retention time.Duration) Harness {
	t.Helper()
	return newEnv(t, newStore, retention).h
}
