package redis

import (
	"github.com/prepkey/prepkey/backend"
)

// LoopConns are the event loops' own connections to a standalone Redis
// (package loopconn's Loops, which needs gnet: package redis does not
// import it, so that the store's other users, the WebAssembly build among
// them, do not link gnet). The opener gives them to the store
// (UseLoopConns).
type LoopConns interface {
	// Submit writes sub on its loop's own connection and reports true, or
	// reports false having done nothing (no gnet loop, the connection not
	// up). The connection finishes sub OnLoop, or hands it to again, on
	// the loop, with the ops that are to go through the store's client.
	Submit(sub *backend.Submission, again func(*backend.Submission, []int)) bool
	// Close stops the connections (Store.Close).
	Close()
}

// UseLoopConns has the store write the submissions that come from an
// event loop on that loop's own connection to Redis (l, made over the
// store's Wire): Info.Completes is then OnLoop. Called once, before the
// store serves.
func (s *Store) UseLoopConns(l LoopConns) {
	s.loops = l
	s.againFn = s.again
}

// maxWorkers bounds the goroutines that live on to run the submissions
// taken through the client (backend.Workers): a healthy Redis has one or
// two at once per loop.
const maxWorkers = 16

// loopAt is the size of a submission's arguments from which it is not
// written on the loop's connection: encoding megabytes and copying them
// into the connection's output took the loop seconds (issue 23, N1),
// while the client does it on a goroutine. It is the server's bound of an
// assembled request (a request of megabytes), below which a loop always
// wrote.
const loopAt = 256 << 10

// Submit takes a submission (backend.Submitter). From an event loop, with
// the loops' connections (UseLoopConns), it is written on the loop's own
// connection and finished OnLoop when its replies are read there: no
// goroutine waits on Redis, and several submissions are on their way at
// once. Otherwise (no loop, that connection down or still dialling, a
// submission of megabytes, a Sentinel, Cluster or TLS store, which only the
// rueidis client reaches) its ops run through the client on a goroutine
// of their own (backend.RunSubmission: one pipeline, scans apart), and it
// finishes Elsewhere.
func (s *Store) Submit(sub *backend.Submission) {
	if s.loops != nil && sub.Loop != nil && backend.ArgBytes(sub.Ops, loopAt) < loopAt && s.loops.Submit(sub, s.againFn) {
		return
	}
	if s.loops != nil {
		// Declared OnLoop, the store arms the deadline of a submission it
		// takes elsewhere itself (backend.Submission.Watch); one written
		// on a loop's connection is bounded by that connection's watch.
		sub.Watch()
	}
	s.workers.Go(func() { s.runSubmission(sub) })
}

func (s *Store) runSubmission(sub *backend.Submission) {
	backend.RunSubmission(s, sub)
	sub.Finish(backend.Elsewhere)
}

// again runs, through the client on a goroutine, the ops of sub that its
// loop's connection did not answer (again, in order): scans (many round
// trips: no request on the wire) and ops answered NOSCRIPT (Redis lost
// its scripts; the client loads them again). Each run of ops between the
// scans is one pipeline. Then sub is finished Elsewhere.
func (s *Store) again(sub *backend.Submission, again []int) {
	sub.Watch() // off the loop's connection: the deadline of its own
	s.workers.Go(func() {
		defer sub.Finish(backend.Elsewhere)
		ctx, cancel := sub.Context()
		defer cancel()
		var ops []backend.Op
		var at []int
		flush := func() {
			if len(ops) == 0 {
				return
			}
			res := make([]backend.Result, len(ops))
			s.pipeline(ctx, ops, res)
			for j, k := range at {
				sub.Res[k] = res[j]
			}
			ops, at = ops[:0], at[:0]
		}
		for _, k := range again {
			op := &sub.Ops[k]
			if op.Kind != backend.OpScan {
				ops, at = append(ops, *op), append(at, k)
				continue
			}
			flush()
			sub.Res[k] = backend.ScanOp(ctx, s, op)
		}
		flush()
	})
}
