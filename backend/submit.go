package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/prepkey/prepkey/backend/watchdog"
)

// Submission is the unit of work sent to a store, on every path (issue
// 33): ops in order, with their isolation, under one deadline, and a
// completion. The server makes one for a batch of its connections' PK
// commands, for a command alone, for an EXEC block; the store takes it
// (Store.Submit) and finishes it (Finish) once every Res (and, Isolated,
// Err) is final, from wherever it completes: inside Submit (memory:), on
// the submitter's loop (a standalone Redis read on the loop's own
// connection), or from a goroutine of its own (the embedded store's group
// commit, the Redis client, MongoDB).
//
// The ops alias the submitter's buffers until the submission is finished;
// after its deadline answered it (Done's Late) the store may still read
// them and write Res: the submitter lets go of the submission then (a new
// one for the next).
type Submission struct {
	Ops []Op
	// Res[i] is the outcome of Ops[i]; len(Res) >= len(Ops).
	Res       []Result
	Isolation Isolation
	// Err is an Isolated submission's outcome as a whole (what Run
	// returns): a *NotIsolated when nothing ran, another error a failure
	// after which the block may or may not have taken effect.
	Err error
	// Timeout is the submission's one deadline, counted as the store's
	// silence (Watch, Heard): when the store has not been heard from for
	// that long, every op is answered with a failure, whatever it does
	// after. A store bounds each of its calls for the submission by it
	// (Context).
	Timeout time.Duration
	// Loop is the event loop the submission comes from, nil when there is
	// none (the portable transport, tests). A store with connections of its
	// own per loop keys them by it.
	Loop Loop
	// Done receives the outcome, once, as how says: from the store
	// (Finish) or from the deadline (Late); after Late, once more with
	// Dropped when the store finishes.
	Done func(s *Submission, how Completion)
	// LateErr is the deadline's failure, set before Done runs with Late:
	// every op is answered with it. Res and Err are then still the
	// store's, which may be writing them (the deadline does not write
	// them: that raced with the store), and the submitter reads neither.
	LateErr error

	watched bool
	watch   watchdog.Watch
}

// Loop is an event loop as a store sees it: where a submission's
// completion may run (Later), and what a store with connections of its own
// per loop keys them by.
type Loop interface {
	// Later runs f on the loop, after what runs there now. An error means
	// the loop is stopping.
	Later(f func()) error
}

// Completion says where and how a submission was finished (Done's how).
type Completion uint8

const (
	// AtOnce: inside Store.Submit, on the submitter's goroutine (memory:).
	AtOnce Completion = iota
	// OnLoop: later, on the submitter's loop (Submission.Loop): a store
	// that reads its answers there (a standalone Redis, on the loop's own
	// connection).
	OnLoop
	// Elsewhere: on another goroutine (a group commit, a client's
	// pipeline, a call of its own).
	Elsewhere
	// Late: the deadline answered it (every op fails with LateErr; Res
	// and Err are the store's still), on the watch's goroutine; the store
	// may still read the ops and write the results.
	Late
	// Dropped: the store finished, after Late, a submission the deadline
	// had answered: nothing to answer (Done runs a second time, with
	// this). The submitter counts it as no longer at the store: it bounds
	// the submissions left at a hung store (the server's maxAtStore),
	// which only the store's Finish can tell.
	Dropped
)

// Submitter is the half of the store contract that takes submissions.
//
// Submit takes s and returns without waiting on I/O: it finishes s
// (s.Finish) exactly once, inside Submit or later, from wherever it
// completes. Ops are each atomic on its own and take effect in the order
// given (Pipelined), or are one isolated unit (Isolated), as Run's are;
// an OpScan (a page of PK.SCAN: NS, Key the position, Count, Keep) runs
// through the store's Scan (ScanOp). A store that finishes later calls
// s.Heard as it makes progress on a long submission, so that its deadline
// counts silence, not length.
type Submitter interface {
	Submit(s *Submission)
}

// Watch arms s's deadline: when the store has been silent for s.Timeout,
// every op is answered with a failure (LateErr) and Done runs with Late,
// on the watch's goroutine; the store's Finish after that runs Done with
// Dropped. The
// submitter calls it before Store.Submit when the store declares
// Elsewhere (Info.Completes); an AtOnce store needs none, an OnLoop store
// watches its own (below). A Timeout of zero
// or less is no deadline (tests): Watch does nothing.
//
// The rule between Completes and Done's how (storetest checks it on every
// store):
//   - A store that declares AtOnce finishes AtOnce, inside Submit, except a
//     submission it chooses to take elsewhere (memory: one of megabytes of
//     arguments, which would hold the loop; never one under 64 KiB of
//     arguments): it arms the deadline itself (Watch) before Submit
//     returns, and finishes it Elsewhere. So the submitter never needs to
//     know the store's threshold: it acts on how.
//   - A store that declares OnLoop is not watched by the submitter either:
//     what it writes on a loop's own connection is bounded by that
//     connection's watch (its silence fails every submission on it), and
//     it arms Watch itself, before it hands it on, on a submission it
//     takes elsewhere (the Redis client: no loop, the connection down, a
//     scan or a NOSCRIPT re-run). A timer per submission on the loop's
//     path cost a standalone Redis 7-13 % more instructions per request at
//     pipeline 16 (callgrind, wave4c).
//   - A store that declares OnLoop or Elsewhere never finishes AtOnce (the
//     submitter, on its loop, may rely on Done not running inside Submit);
//     it finishes OnLoop only on s.Loop (inside a func given to Later),
//     and Elsewhere otherwise.
//
// A Submission may be submitted again (the server keeps one per
// connection) once Done ran with how other than Late: after Late the
// store may still hold it, and the submitter makes a new one.
func (s *Submission) Watch() {
	if s.Timeout <= 0 {
		return
	}
	s.watched = true
	s.watch.Start(s.Timeout, s.fired)
}

func (s *Submission) fired() {
	if !s.watch.Expired() {
		return
	}
	s.LateErr = fmt.Errorf("no answer within %s", s.Timeout)
	s.Done(s, Late)
}

// Heard notes that the store made progress on s at now: its deadline
// moves to Timeout from now.
func (s *Submission) Heard(now time.Time) {
	if s.watched {
		s.watch.Heard(now)
	}
}

// Expired reports whether the deadline has answered s: a store working
// through a long submission in parts sends no more.
func (s *Submission) Expired() bool { return s.watched && s.watch.Claimed() }

// Finish is the store's: every Res (and Err) is final. It runs Done with
// how, or with Dropped when the deadline answered s first (Late).
//
// After a Finish that runs Done, s is no longer watched, so that it can be
// submitted again (to an AtOnce store, which is not watched).
func (s *Submission) Finish(how Completion) {
	if s.watched {
		if !s.watch.Claim() {
			s.Done(s, Dropped)
			return
		}
		s.watched = false
	}
	s.Done(s, how)
}

// Context is a context for one store call of s, bounded by its deadline
// (none when Timeout is zero or less).
func (s *Submission) Context() (context.Context, context.CancelFunc) {
	if s.Timeout <= 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), s.Timeout)
}

// ArgBytes is the size of ops' arguments (keys and values), counted up to
// limit: a store that would hold its caller over a submission of
// megabytes takes it elsewhere from such a size (memory:, the standalone
// Redis's loop connections).
func ArgBytes(ops []Op, limit int) int {
	n := 0
	for i := range ops {
		op := &ops[i]
		n += len(op.Key) + len(op.Value) + len(op.OldKey) + len(op.OldValue) + len(op.Cond.Value)
		for j := range op.Entries {
			n += len(op.Entries[j].Key) + len(op.Entries[j].Value)
		}
		if n >= limit {
			break
		}
	}
	return n
}

// ScanOp runs an OpScan op through st's Scan: the page of op.NS from the
// position op.Key (nil: the start), about op.Count records, filtered by
// op.Keep.
func ScanOp(ctx context.Context, st interface {
	Scan(ctx context.Context, ns string, pos []byte, count int) (Page, error)
}, op *Op) Result {
	page, err := st.Scan(ctx, op.NS, op.Key, op.Count)
	if err != nil {
		return Result{Err: err}
	}
	if page.Done && len(page.Next) != 0 {
		return Result{Err: fmt.Errorf("store ended a scan with a position")}
	}
	kept := page.Records[:0]
	for _, r := range page.Records {
		if op.Keep == nil || op.Keep(r) {
			kept = append(kept, r)
		}
	}
	page.Records = kept
	return Result{Page: &page}
}

// RunSubmission runs s with st's Run (and ScanOp for its scans, between the
// Runs of the ops around them) on the calling goroutine: the body of a
// store's Submit that has no better way (it runs it on a goroutine of its
// own and finishes it Elsewhere), or that answers at once (AtOnce).
func RunSubmission(st interface {
	Runner
	Scan(ctx context.Context, ns string, pos []byte, count int) (Page, error)
}, s *Submission) {
	ctx, cancel := s.Context()
	defer cancel()
	if s.Isolation == Isolated {
		s.Err = st.Run(ctx, s.Ops, s.Res, Isolated)
		return
	}
	from := 0
	for k := range s.Ops {
		if s.Ops[k].Kind != OpScan {
			continue
		}
		runPipelined(ctx, st, s.Ops[from:k], s.Res[from:k])
		s.Res[k] = ScanOp(ctx, st, &s.Ops[k])
		from = k + 1
	}
	runPipelined(ctx, st, s.Ops[from:], s.Res[from:])
}

func runPipelined(ctx context.Context, st Runner, ops []Op, res []Result) {
	switch len(ops) {
	case 0:
		return
	case 1:
		res[0] = st.RunOne(ctx, ops[0])
		return
	}
	if err := st.Run(ctx, ops, res, Pipelined); err != nil {
		// A Pipelined Run reports failures per op; an error of the whole
		// run (a store outside the contract) fails each op.
		for i := range ops {
			res[i] = Result{Err: err}
		}
	}
}
