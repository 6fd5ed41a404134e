package backend

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Store is the contract between the server and a reservation store,
// declared here once: package commands runs PK commands on it, the
// server's scheduler takes runs of them to it, and storetest checks every
// backend against it. A store runs lists of ops (Runner: Run, and RunOne
// for a command alone), reads the pages of a scan (Scan), keeps the
// secret of the scan cursors (Secret), reports whether it can serve
// (Ping), and says what it offers beyond that (Info), so that nobody
// finds a store's features by type assertion.
//
// Arguments alias the connection's read buffer: a store that keeps a key
// or value past the call must copy it.
//
// A failure means the store failed or did not answer; the command may or
// may not have taken effect. It is reported as -UNAVAILABLE, never as :0.
type Store interface {
	Runner
	// Submitter takes a submission (submit.go): the server's one way to
	// its ops (issue 33).
	Submitter
	// Scan returns the next records of namespace ns, live or expired but
	// retained, from pos (nil: the start), about count of them. Every
	// record present and unchanged from the first call to the last is
	// returned at least once. pos is only ever a Page.Next this store
	// returned for ns, but a store must still fail cleanly (an error, not
	// a panic) on one it cannot read.
	Scan(ctx context.Context, ns string, pos []byte, count int) (Page, error)
	// Secret returns the store's secret of SecretBytes random bytes, made
	// on the first call and kept by the backend, so that the sidecar
	// authenticates its scan cursors with a key that every sidecar on
	// this backend shares, across restarts.
	Secret(ctx context.Context) ([]byte, error)
	// Ping reports whether the store can serve commands now.
	Ping(ctx context.Context) error
	// Info is what the store offers beyond the calls above. It is read
	// once, when the server is built, and does not change.
	Info() Info
}

// Info is what a store declares of itself (Store.Info): the optional
// features that were once found by asserting other interfaces on it, so
// that a method whose signature drifted fell silently out of use. The zero
// Info is a store with none of them.
type Info struct {
	// ArgCheck is the store layout's own check of an op, for a layout
	// that holds fewer names or keys than the contract allows (with
	// layout=wow, Wow's names and keys are Kotlin strings: valid UTF-8).
	// Package commands applies it to every PK command's op after the
	// command's own checks, alone, pipelined or queued in MULTI, so a
	// refused command changes nothing and a transaction holding one is
	// aborted; its error's text is the whole -ERR reply. Nil when the
	// layout takes whatever the contract allows: such a store's commands
	// pay nothing for it.
	ArgCheck func(op *Op) error
	// Metrics is the store's own metrics for /metrics (swept records, the
	// embedded store's sizes...), or nil.
	Metrics prometheus.Collector
	// Timeout is how long one call of this store may take before the
	// server answers its commands -UNAVAILABLE: the one deadline of every
	// submission to the store, whatever the path (a batch, EXEC, the
	// loop's own connection to Redis). Zero is the server's
	// --backend-timeout. A store that waits on purpose beyond its backend
	// timeout says so here: Redis with ?wait=N waits for replicas up to
	// wait-timeout after the writes (docs/redis.md), so its calls take up
	// to the backend timeout plus wait-timeout.
	Timeout time.Duration
	// Completes is how the store finishes a submission (Submit): AtOnce
	// (memory:; the server arms no deadline and joins no runs), OnLoop
	// (may finish on the submitter's loop: the server never waits for it
	// there), or Elsewhere (from a goroutine of its own).
	Completes Completion
	// Joins reports whether the server is to join the runs of several
	// connections into one submission (one fsync, one Redis pipeline);
	// otherwise each connection's run is a submission of its own (MongoDB:
	// no batch of atomic document operations).
	Joins bool
}

// Watched reports whether the submitter arms a submission's deadline
// (Submission.Watch) before it submits to a store with this Info: only for
// one that finishes Elsewhere. An AtOnce store needs none; an OnLoop store
// bounds what it writes on a loop's own connection by that connection's
// watch and arms Watch itself on what it hands elsewhere (docs/submit.md).
func (i Info) Watched() bool { return i.Completes == Elsewhere }

// Deadline is the one bound of a submission to a store with this Info:
// Timeout, or backendTimeout (--backend-timeout) when the store leaves it
// zero.
func (i Info) Deadline(backendTimeout time.Duration) time.Duration {
	if i.Timeout > 0 {
		return i.Timeout
	}
	return backendTimeout
}
