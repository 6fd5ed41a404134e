package commands

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Store is what the PK commands need from a backend: one call that takes a
// list of ops (Run: a pipeline, the runs of several clients together, a
// transaction block with backend.Isolated) and its shape for one op
// (RunOne: a command alone), plus the reads that are not ops. Each op is one atomic step on the store (but
// Move and MPrepare, where a backend documents otherwise); the per-command
// calls over Run are backend.Calls, for tests and tools.
//
// How the server takes commands to a store (on its event loop, in batches,
// over a connection of its own, one call at a time) is not asked of the
// store: whoever opens it says so (backend.Drive, protocol.Config.Drive;
// cmd/sidecar's openers).
//
// Arguments alias the connection's read buffer: a store that keeps a key or
// value past the call must copy it.
//
// A failure means the store failed or did not answer; the command may or
// may not have taken effect. It is reported as -UNAVAILABLE, never as :0.
type Store interface {
	// Run runs ops (never an OpScan) and sets res[i] to the outcome of
	// ops[i], each atomic on its own and in order (backend.Pipelined:
	// failures are each op's Result.Err) or as one isolated unit
	// (backend.Isolated: an error is the whole block's, a
	// *backend.NotIsolated when nothing ran). See backend.Runner.
	Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error
	// RunOne runs op alone (never an OpScan): Run of that one op,
	// Pipelined, without the lists, so that a command alone costs no
	// allocation (see backend.Runner).
	RunOne(ctx context.Context, op backend.Op) backend.Result
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
}
