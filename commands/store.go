package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Store is what the PK commands need from a backend. Each method is one
// atomic step on the store (but Move, where a backend documents otherwise).
//
// Arguments alias the connection's read buffer: a store that keeps a key or
// value past the call must copy it.
//
// A returned error means the store failed or did not answer; the command may
// or may not have taken effect. It is reported as -UNAVAILABLE, never as :0.
type Store interface {
	// Prepare reserves key for value when no live record holds it (an
	// expired one is replaced). exp.Kind is never KeepTTL.
	Prepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error)
	// Get returns the record of key, live or expired but retained; ok is
	// false when there is none.
	Get(ctx context.Context, ns string, key []byte) (rec backend.Record, ok bool, err error)
	// Rollback deletes the record of key, live or expired, if ifeq holds.
	Rollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error)
	// Reprepare replaces the value of the live record of key if ifeq holds;
	// the new record's ttlAt comes from exp (KeepTTL allowed).
	Reprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error)
	// Move reserves newKey for newValue and releases oldKey if its value is
	// oldValue (live or expired but retained), never leaving half of it done
	// when it returns. newKey and oldKey differ. exp.Kind is never KeepTTL.
	Move(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error)
	// Ping reports whether the store can serve commands now.
	Ping(ctx context.Context) error
}
