package redis

import "github.com/prepkey/prepkey/backend"

// Submit takes a submission (backend.Submitter): for now its ops run with
// Run on a goroutine of their own, finished Elsewhere.
func (s *Store) Submit(sub *backend.Submission) {
	go func() {
		backend.RunSubmission(s, sub)
		sub.Finish(backend.Elsewhere)
	}()
}
