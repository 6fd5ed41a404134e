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
	// MPrepare reserves every entry for its value, all or none: false when
	// a live record holds any of them (nothing is left reserved). Entries
	// are distinct (namespace, key) pairs; every key gets the same ttlAt.
	// exp.Kind is never KeepTTL. Atomic where the backend documents it;
	// elsewhere composed, never returning with some entries half done.
	MPrepare(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error)
	// Scan returns the next records of namespace ns, live or expired but
	// retained, from pos (nil: the start), about count of them. Every
	// record present and unchanged from the first call to the last is
	// returned at least once. pos is only ever a Page.Next this store
	// returned for ns, but a store must still fail cleanly (an error, not
	// a panic) on one it cannot read.
	Scan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error)
	// Secret returns the store's secret of backend.SecretBytes random
	// bytes, made on the first call and kept by the backend, so that the
	// sidecar authenticates its scan cursors with a key that every sidecar
	// on this backend shares, across restarts.
	Secret(ctx context.Context) ([]byte, error)
	// Ping reports whether the store can serve commands now.
	Ping(ctx context.Context) error
	// Drive declares, once, how the server is to take commands to the
	// store: on its event loop, in batches, over each loop's own
	// connection, or one call at a time (see backend.Drive).
	Drive() backend.Drive
}
