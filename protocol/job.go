package protocol

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/transport"
)

// job is one batch of runs at the store (Handler.Batch), on a goroutine
// other than its sender's (a worker of the loop's batcher, see dispatch,
// or one of its own for a store that does not batch), so that whoever
// sends it waits only as long as it chooses: the
// loop for onLoopBudget, the batcher's goroutine and offloaded runs for the
// backend timeout. When the store has not answered for --backend-timeout,
// the runs are answered -UNAVAILABLE whatever the store does: a store that
// ignores its context, or that cannot stop (an fsync that hangs does not
// return), holds only its own goroutine and a copy of the runs'
// arguments, never the connections. As the contract says, such a command
// may or may not take effect.
//
// The timeout bounds the store's silence, not a deep pipeline as a whole:
// the job gives the store jobChunk commands at a time (one at a time to a
// store that does not batch), each call with its own deadline, and it
// expires only when one call has gone unanswered for the timeout.
//
// Its replies are written by whichever comes first, the store or the
// deadline (answered); the other's are dropped. The connections are
// resumed once, by the loop if it still waits on the job (state), else
// through the loop's queue.
type job struct {
	loop    transport.Loop
	conns   []*conn
	cmds    [][][]byte
	timeout time.Duration
	began   time.Time
	b       *batcher // the loop's batcher, or nil for a store that does not batch
	chunk   int      // commands per store call (jobChunk; 1 for backend.DriveCalls)

	progress atomic.Int64 // when the store last answered, in ns since began
	mu       sync.Mutex
	watchdog *time.Timer // expires the job; under mu

	claimed  atomic.Bool
	state    atomic.Int32  // jobWaited, jobLeft or jobResumed
	answered chan struct{} // closed once the replies are written
	took     time.Duration // how long the store took, when it answered first
}

const (
	jobWaited  int32 = iota // the loop waits for the job and resumes its runs
	jobLeft                 // nobody waits: the job resumes its runs on the loop
	jobResumed              // answered while the loop waited: the loop resumes them
)

// maxJobsInFlight bounds the jobs of one batcher still at the store: past
// it a batch is answered -UNAVAILABLE without going to the store, so that
// a store that hangs for minutes does not collect a goroutine and a copy of
// each batch every --backend-timeout. A healthy store has one or two.
const maxJobsInFlight = 16

// jobChunk is how many commands a job gives a store that batches at once:
// four of the embedded store's commits (256 commands each), a quarter of a
// loop's runs under way (maxLoopCmds) as one Redis pipeline, well within
// the timeout while the store is healthy. A store that does not batch
// gets one at a time.
const jobChunk = 1024

// startJob sends the runs of conns to the store on a goroutine and returns
// at once. A loop that will wait for the job passes waited; otherwise the
// job resumes the connections itself.
func startJob(s *Server, loop transport.Loop, conns []*conn, b *batcher, waited bool) *job {
	j := &job{loop: loop, conns: conns, cmds: runsOf(conns), timeout: s.cfg.BackendTimeout,
		began: time.Now(), b: b, chunk: jobChunk, answered: make(chan struct{})}
	if s.drive == backend.DriveCalls {
		j.chunk = 1
	}
	if !waited {
		j.state.Store(jobLeft)
	}
	if b != nil && b.jobs.Add(1) > maxJobsInFlight {
		b.jobs.Add(-1)
		j.expire(fmt.Errorf("no answer within %s: %d batches still at the backend", j.timeout, maxJobsInFlight))
		return j
	}
	if b == nil {
		go j.run(s.handler)
		return j
	}
	b.dispatch(j)
	return j
}

// dispatch hands j to one of the batcher's workers that waits for a job,
// or to a new one when none waits (the others are at the store, maybe held
// there by a hung disk). A worker lives on after its job: at pipeline 1 a
// goroutine per batch, its stack grown again through pebble's commit each
// time, cost about 4 % of the sidecar's CPU (runtime.newproc and
// runtime.newstack; docs/benchmarks.md, "The embedded store's speed"). At
// most maxJobsInFlight workers live on; past them (a job that ends while
// the next is dispatched) a job gets a goroutine of its own.
func (b *batcher) dispatch(j *job) {
	select {
	case b.work <- j:
		return
	default:
	}
	if b.workers.Add(1) <= maxJobsInFlight {
		go b.worker(j)
		return
	}
	b.workers.Add(-1)
	go j.run(b.handler)
}

// worker runs jobs until the batcher stops.
func (b *batcher) worker(j *job) {
	defer b.workers.Add(-1)
	for {
		j.run(b.handler)
		select {
		case j = <-b.work:
		case <-b.stop:
			return
		}
	}
}

// run is the job's goroutine: the store calls, each bounded by the
// timeout. After an expiry it sends no more.
func (j *job) run(h Handler) {
	chunk := j.chunk
	j.mu.Lock()
	j.watchdog = time.AfterFunc(j.timeout, j.watch)
	j.mu.Unlock()
	replies := make([]commands.Reply, len(j.cmds))
	for start := 0; start < len(j.cmds) && !j.claimed.Load(); start += chunk {
		end := min(start+chunk, len(j.cmds))
		ctx, cancel := context.WithTimeout(context.Background(), j.timeout)
		called := time.Now()
		h.Batch(ctx, j.cmds[start:end], replies[start:end])
		cancel()
		j.conns[0].stats.StoreCall(end-start, time.Since(called))
		j.progress.Store(int64(time.Since(j.began)))
	}
	j.mu.Lock()
	j.watchdog.Stop()
	j.mu.Unlock()
	if j.b != nil {
		j.b.jobs.Add(-1)
	}
	if j.claimed.CompareAndSwap(false, true) {
		j.took = time.Since(j.began)
		j.finish(replies, false)
	}
}

// watch runs when the timeout has passed since the job began or last
// heard from the store: it expires the job if the store has been silent
// that long, else waits for the rest.
func (j *job) watch() {
	silent := time.Since(j.began) - time.Duration(j.progress.Load())
	if silent < j.timeout {
		j.mu.Lock()
		j.watchdog.Reset(j.timeout - silent)
		j.mu.Unlock()
		return
	}
	j.expire(fmt.Errorf("no answer within %s", j.timeout))
}

// expire answers every command of the job with err, unless the store has
// answered first.
func (j *job) expire(err error) {
	if !j.claimed.CompareAndSwap(false, true) {
		return
	}
	j.took = time.Since(j.began)
	r := commands.Unavailable(err)
	replies := make([]commands.Reply, len(j.cmds))
	for i := range replies {
		replies[i] = r
	}
	j.finish(replies, true)
}

// finish writes the replies to the connections (busy: their out and runs
// are the job's) and has them resumed. After a late answer the store may
// still read the runs' arguments: each connection lets go of its copy and
// makes a new one for its next run.
func (j *job) finish(replies []commands.Reply, late bool) {
	writeReplies(j.conns, replies)
	if late {
		for _, c := range j.conns {
			c.runRaw, c.runFlat, c.runArgs = nil, nil, nil
		}
	}
	if j.b != nil && !late && j.took <= onLoopBudget {
		// A quick batch off the loop brings the next ones back, before
		// these runs' clients see their replies.
		j.b.offLoop.Store(false)
	}
	close(j.answered)
	if j.state.CompareAndSwap(jobWaited, jobResumed) {
		return // the loop waits in wait and resumes them
	}
	conns := j.conns
	_ = j.loop.Later(func() { resumeAll(conns) })
	// An error means the loops are stopping; they close the connections.
}

// wait is the loop waiting for a job it started with waited, for at most
// budget (t is the batcher's timer). It reports whether the job was
// answered in time, in which case its connections are resumed; otherwise
// the job resumes them when it is answered, and the loop goes on serving.
func (j *job) wait(t *time.Timer, budget time.Duration) bool {
	t.Reset(budget)
	select {
	case <-j.answered:
		t.Stop()
	case <-t.C:
		if j.state.CompareAndSwap(jobWaited, jobLeft) {
			return false
		}
		<-j.answered // answered at the same moment: the loop resumes them
	}
	resumeAll(j.conns)
	return true
}
