package mongo

import (
	"time"

	"github.com/prepkey/prepkey/backend"
)

// Submit takes a submission (backend.Submitter): its ops run in order on a
// goroutine of its own, one store call each (Run's atomic document
// operations: MongoDB has no batch of them, so nothing is gained by
// joining connections' runs, Info.Joins is false), and it finishes
// Elsewhere. Each answered op is progress (Heard), so a long run is bounded
// by the store's silence, not its length; once the deadline answered it,
// the rest are not sent.
func (s *Store) Submit(sub *backend.Submission) {
	go s.runSubmission(sub)
}

func (s *Store) runSubmission(sub *backend.Submission) {
	defer sub.Finish(backend.Elsewhere)
	ctx, cancel := sub.Context()
	defer cancel()
	if sub.Isolation == backend.Isolated {
		sub.Err = s.Run(ctx, sub.Ops, sub.Res, backend.Isolated)
		return
	}
	for i := range sub.Ops {
		if sub.Expired() {
			return
		}
		op := &sub.Ops[i]
		if op.Kind == backend.OpScan {
			sub.Res[i] = backend.ScanOp(ctx, s, op)
		} else {
			sub.Res[i] = s.one(ctx, op)
		}
		sub.Heard(time.Now())
	}
}
