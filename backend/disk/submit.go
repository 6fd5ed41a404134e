package disk

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
)

// Submit takes a submission (backend.Submitter): it joins the store's next
// group commit and is finished Elsewhere, from the store's committer
// goroutine, once its ops are durable. Submit itself only queues it: a hung
// fsync holds the committer and the submissions in its group (their
// deadlines answer them), never the caller, the server's event loop.
//
// The group commit is bbolt's DB.Batch (etcd-io/bbolt, db.go: Batch,
// batch.trigger), without its delay: the submissions that arrive, from
// every loop, while commits are under way (maxCommitters of them) wait
// for one to end and then go together into the next one: one pebble batch
// and one fsync (per batchChunk ops), as one Run of their ops, in the
// order they came. Groups committing at once keep no order between them:
// their submissions were in flight at once, from connections that are
// concurrent (a connection has one submission in flight).
// Waiting MaxBatchDelay for more would only add latency: under load the
// commit under way is the wait, and alone a submission commits at once.
// An isolated submission (EXEC) and a scan run in their place in that
// order, on their own.
func (s *Store) Submit(sub *backend.Submission) {
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, sub)
	var c *committer
	if g.running < maxCommitters {
		g.running++
		if n := len(g.free); n > 0 {
			c, g.free = g.free[n-1], g.free[:n-1]
		} else {
			c = new(committer)
		}
	}
	g.mu.Unlock()
	if c != nil {
		go s.commitGroups(c)
	}
}

// maxCommitters bounds the groups committing at once. One, as in bbolt
// (one writer), serialized the fsyncs: a group waited for the one before
// to be durable before it was even written, and 16 submitters made half
// the commits per second of 16 callers of Run, whose commits pebble
// pipelines and syncs together (one writes its WAL entry while another's
// fsync runs). With 8, Submit from 16 submitters is on a par with RunOne
// from 16 callers (BenchmarkSubmit), and past 8 submitters at once the
// rest join groups.
const maxCommitters = 8

// group is the store's group commit: the submissions waiting for the next
// commit, and the committers.
type group struct {
	mu      sync.Mutex
	pending []*backend.Submission
	running int // committers running
	// groups counts the groups committed (tests: how many commits a
	// burst of submissions took).
	groups atomic.Int64
	free   []*committer
}

// committer is one committer goroutine's buffers, reused from group to
// group.
type committer struct {
	taken []*backend.Submission
	ops   []backend.Op
	res   []backend.Result
	at    []*backend.Result // where each of ops' results goes
}

// commitGroups is a committer: it commits the pending submissions as one
// group, then the ones that came meanwhile, until none is left.
func (s *Store) commitGroups(c *committer) {
	g := &s.group
	for {
		g.mu.Lock()
		subs := g.pending
		if len(subs) == 0 {
			g.running--
			g.free = append(g.free, c)
			g.mu.Unlock()
			return
		}
		g.pending, c.taken = c.taken[:0], subs
		g.mu.Unlock()
		g.groups.Add(1)
		s.commitGroup(c, subs)
		clear(subs) // let the finished submissions go
	}
}

// commitGroup runs subs as one group, then finishes them, in order.
func (s *Store) commitGroup(g *committer, subs []*backend.Submission) {
	var timeout time.Duration
	for _, sub := range subs {
		timeout = max(timeout, sub.Timeout)
	}
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	if len(subs) == 1 && len(subs[0].Ops) == 1 && subs[0].Isolation == backend.Pipelined {
		// A command alone (pipeline 1): its own stripes and commit, the
		// path Run takes for one op, which reads without an indexed batch.
		sub := subs[0]
		if sub.Ops[0].Kind == backend.OpScan {
			sub.Res[0] = backend.ScanOp(ctx, s, &sub.Ops[0])
		} else {
			sub.Res[0] = s.one(ctx, &sub.Ops[0])
		}
		sub.Finish(backend.Elsewhere)
		return
	}
	var failed error // a failed commit fails every op after it, as Run's
	for _, sub := range subs {
		switch {
		case sub.Expired():
			// The deadline answered it: its ops are not run.
		case sub.Isolation == backend.Isolated:
			failed = s.flushGroup(ctx, g, failed)
			if failed != nil {
				sub.Err = failed
				break
			}
			sub.Err = s.isolated(ctx, sub.Ops, sub.Res)
		default:
			for i := range sub.Ops {
				op := &sub.Ops[i]
				if op.Kind == backend.OpScan {
					failed = s.flushGroup(ctx, g, failed)
					sub.Res[i] = backend.ScanOp(ctx, s, op)
					continue
				}
				g.ops = append(g.ops, *op)
				g.at = append(g.at, &sub.Res[i])
				if len(g.ops) == batchChunk {
					failed = s.flushGroup(ctx, g, failed)
				}
			}
		}
	}
	s.flushGroup(ctx, g, failed)
	for _, sub := range subs {
		sub.Finish(backend.Elsewhere)
	}
}

// flushGroup commits the ops gathered so far (one batch, one fsync) and
// hands each its result; after a failure of the whole batch (failed, or
// its own), every op fails with it unrun. It returns the failure.
func (s *Store) flushGroup(ctx context.Context, g *committer, failed error) error {
	if len(g.ops) == 0 {
		return failed
	}
	if cap(g.res) < len(g.ops) {
		g.res = make([]backend.Result, len(g.ops), batchChunk)
	}
	g.res = g.res[:len(g.ops)]
	clear(g.res)
	if failed == nil {
		failed = s.batch(ctx, g.ops, g.res)
	}
	for i, at := range g.at {
		if failed != nil {
			*at = backend.Result{Err: failed}
			continue
		}
		*at = g.res[i]
	}
	clear(g.ops) // the ops alias the submitters' buffers
	g.ops, g.at = g.ops[:0], g.at[:0]
	return failed
}
