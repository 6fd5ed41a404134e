// Package schedtest serves a store under each of the schedules a store
// may declare (backend.Info: Completes, Joins), for the tests of the
// server's paths: what the backend's own Submit would choose for one
// backend, any store can be given here, so that every path is tested on
// memory:, on a store made slow or failing by a test, or on a fake.
package schedtest

import "github.com/prepkey/prepkey/backend"

// Schedule is how a store declares it completes a submission and whether
// runs join.
type Schedule struct {
	Completes backend.Completion
	Joins     bool
}

// The schedules of the sidecar's stores.
var (
	// AtOnce: answered inside Submit, on the loop (memory:).
	AtOnce = Schedule{backend.AtOnce, false}
	// Joined: runs joined, finished elsewhere (file:, Redis through
	// rueidis).
	Joined = Schedule{backend.Elsewhere, true}
	// OnLoop: runs joined, finished on the submitter's loop (a
	// standalone Redis on the loop's own connection).
	OnLoop = Schedule{backend.OnLoop, true}
	// Alone: each run its own submission, finished elsewhere (MongoDB).
	Alone = Schedule{backend.Elsewhere, false}
)

// All is every schedule, named, for tests that run on each.
var All = []struct {
	Name string
	Schedule
}{{"atonce", AtOnce}, {"joined", Joined}, {"onloop", OnLoop}, {"alone", Alone}}

// Declare is st declaring sc (Info) and completing its submissions so:
// its ops run with st's own Run and Scan (backend.RunSubmission), so a
// test's wrapper of a store (a slow one, a failing one) is what runs them.
func Declare(st backend.Store, sc Schedule) backend.Store { return &declared{st, sc} }

type declared struct {
	backend.Store
	sc Schedule
}

func (d *declared) Info() backend.Info {
	i := d.Store.Info()
	i.Completes, i.Joins = d.sc.Completes, d.sc.Joins
	return i
}

func (d *declared) Submit(s *backend.Submission) {
	switch d.sc.Completes {
	case backend.AtOnce:
		backend.RunSubmission(d.Store, s)
		s.Finish(backend.AtOnce)
	case backend.OnLoop:
		s.Watch() // an OnLoop store watches its own submissions
		go func() {
			backend.RunSubmission(d.Store, s)
			if s.Loop == nil || s.Loop.Later(func() { s.Finish(backend.OnLoop) }) != nil {
				s.Finish(backend.Elsewhere)
			}
		}()
	default:
		go func() {
			backend.RunSubmission(d.Store, s)
			s.Finish(backend.Elsewhere)
		}()
	}
}
