package memory

import (
	"context"

	"github.com/prepkey/prepkey/backend"
)

// Submit takes a submission (backend.Submitter): it runs at once, on the
// caller (the event loop), and finishes AtOnce: a store in memory answers
// in well under a microsecond, less than handing the work to a goroutine
// and back would cost. It allocates nothing for ops that are not scans or
// EXEC blocks.
//
// A submission of megabytes of arguments (offLoopAt) is the exception:
// even memory takes a while over it (64 MiB of values copied for a
// PK.MPREPARE of 64 x 1 MiB), and the loop would not serve its other
// clients meanwhile. It runs on a goroutine of its own, under the deadline
// the store arms itself (Watch: the server arms none for an AtOnce
// store), and finishes Elsewhere (backend.Submission.Watch states the
// rule).
func (s *Store) Submit(sub *backend.Submission) {
	if backend.ArgBytes(sub.Ops, offLoopAt) >= offLoopAt {
		sub.Watch()
		go func() {
			backend.RunSubmission(s, sub)
			sub.Finish(backend.Elsewhere)
		}()
		return
	}
	s.runAtOnce(sub)
	sub.Finish(backend.AtOnce)
}

// offLoopAt is the size of a submission's arguments from which it runs on
// a goroutine: 1 MiB, which memory: copies in about 0.1 ms (prebuildAt
// builds an MPREPARE's records before its locks from the same size).
const offLoopAt = prebuildAt

// runAtOnce runs sub's ops as Run would (and a scan through Scan), with
// no context: the store's calls do not wait, and a context with a
// deadline is an allocation and a timer per submission.
func (s *Store) runAtOnce(sub *backend.Submission) {
	ctx := context.Background()
	if sub.Isolation == backend.Isolated {
		sub.Err = s.isolated(ctx, sub.Ops, sub.Res)
		return
	}
	for i := range sub.Ops {
		op := &sub.Ops[i]
		if op.Kind == backend.OpScan {
			sub.Res[i] = backend.ScanOp(ctx, s, op)
			continue
		}
		sub.Res[i].Clear()
		s.one(op, &sub.Res[i])
	}
}
