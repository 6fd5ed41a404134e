package scheduler

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend/watchdog"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// batch is the unit of work sent to a store: the runs of one or more of a
// loop's connections (runs, their commands one after the other in cmds),
// answered together. A driver makes it (scheduler.go): the wire driver
// writes it to the loop's own connection to Redis (a wireBatch,
// wire_batch.go, answered on the loop), and the batch and calls drivers
// send it to Store.Batch on a goroutine, as a storeBatch.
type batch struct {
	runs  []Conn
	cmds  [][][]byte
	stats *stats.Loop // the loop's counters (store calls)
}

// newBatch is runs as one batch, counted into the loop's st.
func newBatch(runs []Conn, st *stats.Loop) batch {
	return batch{runs: runs, cmds: runsOf(runs), stats: st}
}

// storeBatch is a batch sent to Store.Batch on a goroutine other than
// the loop's (start, run), so that whoever sends it waits only as long as
// it chooses: the loop for OnLoopBudget, the batch driver's goroutine and
// a store that does not batch for the backend timeout. (The wire's batch
// is the plain one: what is here costs the wire's hot path nothing.)
//
// At the store, a batch is bounded by --backend-timeout counted as the
// store's silence (its watch, package watchdog): when the store has not
// answered for that long, the runs are answered -UNAVAILABLE whatever the
// store does. A store that ignores its context, or that cannot stop (an
// fsync that hangs does not return), holds only the batch's goroutine and
// its copy of the runs' arguments, never the connections. As the contract
// says, such a command may or may not take effect. The bound is not on a
// deep pipeline as a whole: the batch gives the store perCall commands at
// a time (maxCallCmds; one at a time to a store that does not batch), each
// call with its own deadline, and expires only when one call has gone
// unanswered for the timeout.
//
// Its replies are written by whichever claims it first, the store or the
// deadline; the other's are dropped. The connections are resumed once, by
// the loop if it still waits on the batch (state), else through the loop's
// queue.
type storeBatch struct {
	batch
	loop     transport.Loop // where its runs are resumed; nil: each run's own (calls)
	timeout  time.Duration
	d        *batchDriver // the loop's batch driver, or nil (calls)
	perCall  int          // commands per store call (maxCallCmds, or 1)
	began    time.Time
	watch    watchdog.Watch
	state    atomic.Int32  // batchWaited, batchLeft or batchResumed
	answered chan struct{} // closed once the replies are written
	took     time.Duration // how long the store took, when it answered first
}

const (
	batchWaited  int32 = iota // the loop waits for the batch and resumes its runs
	batchLeft                 // nobody waits: the batch resumes its runs on the loop
	batchResumed              // answered while the loop waited: the loop resumes them
)

// maxAtStore bounds the batches of one batch driver still at the store:
// past it a batch is answered -UNAVAILABLE without going to the store, so
// that a store that hangs for minutes does not collect a goroutine and a
// copy of each batch every --backend-timeout. A healthy store has one or
// two.
const maxAtStore = 16

// maxCallCmds is how many commands of a batch a store that batches gets in
// one call: four of the embedded store's commits (256 commands each), a
// quarter of a loop's runs under way (MaxLoopCmds) as one Redis pipeline,
// well within the timeout while the store is healthy. A store that does
// not batch gets one at a time.
const maxCallCmds = 1024

// start sends b to the store on a goroutine and returns at once: to one of
// d's workers, or (d nil: a store that does not batch) a goroutine of its
// own. A loop that will wait for it passes waited (wait); otherwise the
// batch resumes the connections itself.
func (b *storeBatch) start(cfg *Config, loop transport.Loop, d *batchDriver, perCall int, waited bool) {
	b.loop, b.timeout, b.d, b.perCall, b.began = loop, cfg.Deadline, d, perCall, time.Now()
	b.answered = make(chan struct{})
	if !waited {
		b.state.Store(batchLeft)
	}
	if d != nil && d.atStore.Add(1) > maxAtStore {
		d.atStore.Add(-1)
		if b.watch.Claim() {
			b.expire(fmt.Errorf("no answer within %s: %d batches still at the backend", b.timeout, maxAtStore))
		}
		return
	}
	if d == nil {
		go b.run(cfg.Store)
		return
	}
	d.dispatch(b)
}

// run is the batch's goroutine: the store calls, bounded by the watch.
// After an expiry it sends no more.
func (b *storeBatch) run(st Store) {
	b.watch.Start(b.timeout, b.watchFired)
	replies := make([]commands.Reply, len(b.cmds))
	for start := 0; start < len(b.cmds) && !b.watch.Claimed(); start += b.perCall {
		end := min(start+b.perCall, len(b.cmds))
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		called := time.Now()
		st.Batch(ctx, b.cmds[start:end], replies[start:end])
		cancel()
		now := time.Now()
		b.stats.StoreCall(b.cmds[start:end], end-start, now.Sub(called))
		b.watch.Heard(now)
	}
	if b.d != nil {
		b.d.atStore.Add(-1)
	}
	if b.watch.Claim() {
		b.took = time.Since(b.began)
		b.finish(replies, false)
	}
}

// watchFired is the watch's: it expires the batch when the store has been
// silent for the timeout.
func (b *storeBatch) watchFired() {
	if b.watch.Expired() {
		b.expire(fmt.Errorf("no answer within %s", b.timeout))
	}
}

// expire answers every command of the batch with err; the batch is
// claimed for the deadline.
func (b *storeBatch) expire(err error) {
	r := commands.Unavailable(err)
	replies := make([]commands.Reply, len(b.cmds))
	for i := range replies {
		replies[i] = r
	}
	b.finish(replies, true)
}

// finish writes the replies to the connections (at the store: their out
// and runs are the batch's) and has them resumed. After a late answer the
// store may still read the runs' arguments: each connection lets go of its
// copy and makes a new one for its next run (Conn.Answer).
func (b *storeBatch) finish(replies []commands.Reply, late bool) {
	answer(b.runs, replies, late)
	if b.d != nil && !late && b.took <= OnLoopBudget {
		// A quick batch off the loop brings the next ones back, before
		// these runs' clients see their replies.
		b.d.offLoop.Store(false)
	}
	close(b.answered)
	if b.state.CompareAndSwap(batchWaited, batchResumed) {
		return // the loop waits in wait and resumes them
	}
	if b.loop == nil { // a calls driver's batch: one run, on its own loop
		for _, r := range b.runs {
			r.ResumeLater()
		}
		return
	}
	runs := b.runs
	_ = b.loop.Later(func() { resumeAll(runs) })
	// An error means the loops are stopping; they close the connections.
}

// wait is the loop waiting for a batch it started with waited, for at most
// budget (t is the batch driver's timer). It reports whether the batch was
// answered in time, in which case its connections are resumed; otherwise
// the batch resumes them when it is answered, and the loop goes on serving.
func (b *storeBatch) wait(t *time.Timer, budget time.Duration) bool {
	t.Reset(budget)
	select {
	case <-b.answered:
		t.Stop()
	case <-t.C:
		if b.state.CompareAndSwap(batchWaited, batchLeft) {
			return false
		}
		<-b.answered // answered at the same moment: the loop resumes them
	}
	resumeAll(b.runs)
	return true
}

// runsOf is the commands of runs, one after the other.
func runsOf(runs []Conn) [][][]byte {
	n := 0
	for _, r := range runs {
		n += len(r.Commands())
	}
	cmds := make([][][]byte, 0, n)
	for _, r := range runs {
		cmds = append(cmds, r.Commands()...)
	}
	return cmds
}

// answer hands each run its replies, in the order of runsOf(runs), all
// written now (late: see Conn.Answer).
func answer(runs []Conn, replies []commands.Reply, late bool) {
	now := time.Now()
	i := 0
	for _, r := range runs {
		n := len(r.Commands())
		r.Answer(replies[i:i+n:i+n], now, late)
		i += n
	}
}

func resumeAll(runs []Conn) {
	for _, r := range runs {
		r.Resume()
	}
}
