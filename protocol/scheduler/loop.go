package scheduler

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// Loop is one event loop's scheduling of its connections' runs (or the
// portable transport's connections', with no event loop). A connection
// asks it to Admit a run, then Submits it; the run goes to the store in a
// job (a submission, or a few in a row for a deep pipeline) and the
// connection is resumed with its replies (Landed counts them).
//
// What the store declares (backend.Info) decides, here only:
//
//	Joins        the runs submitted in one loop round go together, in
//	             one job, sent after the round's I/O (Later): one fsync,
//	             one Redis pipeline for many clients; the loop's runs
//	             under way are bounded (MaxLoopCmds). Otherwise each run
//	             is a job of its own, sent at once (MongoDB).
//	Elsewhere    (joined) one job at a time: the runs that arrive while
//	             one is at the store wait and go together in the next,
//	             so the job grows with the load and no timer delays a
//	             lone request; and the loop waits for the job a moment
//	             (OnLoopBudget), which costs less than waking it again.
//	OnLoop       (joined) the loop never waits: the store finishes on
//	             the loop (a standalone Redis read on the loop's own
//	             connection), and several jobs may be on their way.
//	AtOnce       no deadline armed: the store answers inside Submit. The
//	             connection submits its commands itself (package
//	             protocol's conn.dispatch); only a request of megabytes
//	             is a run.
//
// The portable transport's Loop joins the runs of all its connections
// (Joins), one job at a time.
type Loop struct {
	loopRuns // the loop's runs under way, and who waits for room

	cfg   *Config
	loop  transport.Loop // nil: the portable transport
	stats *stats.Loop    // the loop's counters
	join  bool           // runs join (Info.Joins)
	// serial: one joined job at a time (all but OnLoop); wait: the loop
	// waits for a job a moment (Elsewhere, on an event loop).
	serial, wait bool
	timer        *time.Timer // the loop's wait for a job; stopped while unused
	offLoop      atomic.Bool // a job took longer than OnLoopBudget: do not wait
	late         atomic.Int32

	// pending is the runs for the next job; inFlight: a serial job is at
	// the store. The loop's own, or under mu on the portable transport,
	// whose connections submit from goroutines of their own.
	mu       sync.Mutex
	pending  []Conn
	inFlight bool
}

// OnLoopBudget is how long a loop waits for a job before it goes on
// serving and the next jobs are not waited for: a Redis round trip or an
// fsync takes well under it. Waiting cost less than handing the job to
// another thread and back (fewer thread wake-ups: 19 against 25 µs of CPU
// per request at pipeline 1 on file:, scripts/bench.sh).
const OnLoopBudget = 5 * time.Millisecond

// maxAtStore bounds the submissions of one loop that the deadline answered
// and the store still holds (a store that hangs): past it a submission is
// answered -UNAVAILABLE without going to the store, so that a store that
// hangs for minutes does not collect a copy of each run every deadline.
const maxAtStore = 16

// maxCallCmds is how many ops one submission holds at most: four of the
// embedded store's commits (256 commands each), a quarter of a loop's
// runs under way (MaxLoopCmds) as one Redis pipeline, well within the
// deadline while the store is healthy. A deeper job is sent as several
// submissions one after the other, each with its own deadline: the
// deadline counts the store's silence, not a long pipeline's length.
const maxCallCmds = 1024

func newLoop(cfg *Config, loop transport.Loop, st *stats.Loop) *Loop {
	i := cfg.Info
	l := &Loop{cfg: cfg, loop: loop, stats: st, join: i.Joins}
	l.serial = l.join && i.Completes != backend.OnLoop
	l.wait = l.serial && loop != nil && i.Completes == backend.Elsewhere
	if l.wait {
		l.timer = time.NewTimer(time.Hour)
		l.timer.Stop()
	}
	return l
}

// bounded reports whether the loop's runs under way are bounded
// (MaxLoopCmds): joined runs on an event loop. A run of its own, or the
// portable transport's, is one per connection.
func (l *Loop) bounded() bool { return l.join && l.loop != nil }

// Admit reports whether r may start a run now; otherwise r is parked
// (Conn.Park), its input unread, and served again (Conn.Unpark) once the
// runs under way leave room (Landed). On the loop.
func (l *Loop) Admit(r Conn) bool { return !l.bounded() || l.admit(r) }

// Landed counts n commands of a run as answered, when the connection is
// resumed, on the loop.
func (l *Loop) Landed(n int) {
	if l.bounded() {
		l.landed(n)
	}
}

// Submit takes r's run (Conn.Commands) to the store; r is at the store
// until its replies are written (Conn.Answer) and it is resumed
// (Conn.Resume). On the loop (on the portable transport, on r's
// goroutine).
func (l *Loop) Submit(r Conn) {
	if l.bounded() {
		l.queued += len(r.Commands())
	}
	if !l.join || r.Big() {
		// A request of megabytes goes alone: the loop does not hold the
		// others' runs behind it.
		l.start(&job{l: l, runs: []Conn{r}})
		return
	}
	if l.loop == nil {
		l.mu.Lock()
		l.pending = append(l.pending, r)
		if l.inFlight {
			l.mu.Unlock()
			return
		}
		l.inFlight = true
		runs := l.takePending()
		l.mu.Unlock()
		l.start(&job{l: l, runs: runs, serial: true})
		return
	}
	l.pending = append(l.pending, r)
	if len(l.pending) == 1 && !l.inFlight {
		// After the round's I/O: with every run submitted meanwhile
		// (docs/serving.md, "The event loop: what gnet guarantees").
		_ = l.loop.Later(l.flush)
	}
}

// takePending returns the runs for the next job. The job keeps that slice
// until they are resumed: the next is new, sized for a round like this.
func (l *Loop) takePending() []Conn {
	runs := l.pending
	l.pending = make([]Conn, 0, 2*len(runs))
	return runs
}

// flush sends the runs submitted meanwhile as one job, on the loop, and
// waits for it a moment when the store completes elsewhere.
func (l *Loop) flush() {
	if len(l.pending) == 0 {
		return
	}
	j := &job{l: l, runs: l.takePending(), serial: l.serial}
	if l.serial {
		l.inFlight = true
	}
	waits := l.wait && !l.offLoop.Load()
	if waits {
		j.answered = make(chan struct{})
	}
	if !l.start(j) {
		waits = false // it waits for the store's secret first
		j.state.Store(jobLeft)
	}
	if waits && !j.waitFor(l.timer, OnLoopBudget) {
		l.offLoop.Store(true)
	}
}

// landedJob resumes a job's connections, on the loop, and sends the runs
// that waited for it.
func (l *Loop) landedJob(j *job) {
	resumeAll(j.runs)
	if j.serial {
		l.inFlight = false
		if len(l.pending) > 0 {
			l.flush()
		}
	}
}

// landedPortable is landedJob on the portable transport: each connection
// is resumed on its own goroutine.
func (l *Loop) landedPortable(j *job) {
	for _, r := range j.runs {
		r.ResumeLater()
	}
	if !j.serial {
		return
	}
	l.mu.Lock()
	if len(l.pending) == 0 {
		l.inFlight = false
		l.mu.Unlock()
		return
	}
	runs := l.takePending()
	l.mu.Unlock()
	l.start(&job{l: l, runs: runs, serial: true})
}

// start parses j's runs into ops (the refused commands answered now) and
// sends them; it reports false when the job waits for the store's secret
// first, loaded off the loop, to open a scan's cursor.
func (l *Loop) start(j *job) bool {
	j.began = time.Now()
	j.cmds = runsOf(j.runs)
	j.replies = make([]commands.Reply, len(j.cmds))
	j.parsed = l.cfg.Store.ParseBatch(j.cmds, j.replies)
	if j.parsed.OpenScans(j.replies, nil) {
		j.send()
		return true
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Deadline)
		err := l.cfg.Store.LoadSecret(ctx)
		cancel()
		l.onLoop(func() {
			j.parsed.OpenScans(j.replies, err)
			j.send()
		})
	}()
	return false
}

// onLoop runs f on the loop (on the portable transport, here).
func (l *Loop) onLoop(f func()) {
	if l.loop == nil {
		f()
		return
	}
	_ = l.loop.Later(f)
	// An error means the loops are stopping; they close the connections.
}

// job is the runs of one or more of a loop's connections (their commands
// one after the other in cmds), parsed into ops and sent to the store as
// submissions of at most maxCallCmds ops, one after the other; answered
// together when the last is finished, or when the deadline answers one.
type job struct {
	l       *Loop
	runs    []Conn
	serial  bool // the loop's one job in flight (Loop.serial)
	cmds    [][][]byte
	replies []commands.Reply
	parsed  commands.Parsed
	res     []backend.Result
	next    int  // the first op not yet submitted
	late    bool // the deadline answered a submission: the store may still read the ops
	began   time.Time
	sent    time.Time // when the last submission was sent
	// sub is the job's submission, sent again for each part of its ops
	// (the contract allows it once finished, but after Late, when the
	// job sends no more).
	sub backend.Submission

	// The loop's wait for the job (waitFor), when it waits: state says
	// who resumes the connections, answered is closed once the replies
	// are written.
	state    atomic.Int32
	answered chan struct{}
}

const (
	jobWaited  int32 = iota // the loop waits for the job and resumes its runs
	jobLeft                 // nobody waits: the job resumes its runs on the loop
	jobResumed              // answered while the loop waited: the loop resumes them
)

// send submits the next part of the job's ops, or answers the job when
// they are all answered. how is where the previous part was finished (the
// goroutine send runs on).
func (j *job) send() { j.sendFrom(backend.AtOnce) }

func (j *job) sendFrom(how backend.Completion) {
	cfg := j.l.cfg
	ops := j.parsed.Ops
	if j.res == nil {
		j.res = make([]backend.Result, len(ops))
	}
	if j.next >= len(ops) {
		j.finish(how)
		return
	}
	if n := j.l.late.Load(); n >= maxAtStore {
		err := fmt.Errorf("no answer within %s: %d submissions still at the backend", cfg.Deadline, n)
		for k := j.next; k < len(ops); k++ {
			j.res[k] = backend.Result{Err: err}
		}
		j.next = len(ops)
		j.finish(how)
		return
	}
	end := min(j.next+maxCallCmds, len(ops))
	s := &j.sub
	if s.Done == nil {
		s.Timeout, s.Done = cfg.Deadline, j.done
		if j.l.loop != nil {
			s.Loop = j.l.loop
		}
	}
	s.Ops, s.Res = ops[j.next:end], j.res[j.next:end]
	j.next = end
	j.sent = time.Now()
	if cfg.Info.Watched() {
		s.Watch()
	}
	cfg.Store.Submit(s)
}

// done is each submission's completion: the next part goes, or the job
// is answered. After the deadline (Late) the job sends no more: its other
// ops are answered with the same failure.
func (j *job) done(s *backend.Submission, how backend.Completion) {
	switch how {
	case backend.Dropped:
		j.l.late.Add(-1)
		return
	case backend.Late:
		// The store may still write this part's results: the job
		// answers from a copy, the parts before it and failures.
		j.l.late.Add(1)
		j.late = true
		first := j.next - len(s.Ops)
		res := make([]backend.Result, len(j.parsed.Ops))
		copy(res, j.res[:first])
		fail := backend.Result{Err: s.LateErr}
		for k := first; k < len(res); k++ {
			res[k] = fail
		}
		j.res, j.next = res, len(res)
		j.finish(how)
		return
	}
	first := j.next - len(s.Ops)
	j.l.stats.StoreCall(j.cmds[j.parsed.Index(first):j.parsed.Index(j.next-1)+1], len(s.Ops), time.Since(j.sent))
	j.sendFrom(how)
}

// finish writes the replies to the connections (at the store: their out
// and runs are the job's) and has them resumed: by the loop that waits
// for the job, here when the store finished on the loop, else through the
// loop's queue.
func (j *job) finish(how backend.Completion) {
	j.parsed.Answer(j.res, j.replies)
	answer(j.runs, j.replies, j.late)
	l := j.l
	if !j.late && time.Since(j.began) <= OnLoopBudget {
		// A quick job brings the loop's wait back, before these runs'
		// clients see their replies.
		l.offLoop.Store(false)
	}
	if j.answered != nil {
		close(j.answered)
		if j.state.CompareAndSwap(jobWaited, jobResumed) {
			return // the loop waits in waitFor and resumes them
		}
	}
	switch {
	case l.loop == nil:
		l.landedPortable(j)
	case how == backend.OnLoop:
		l.landedJob(j)
	default:
		// Finished elsewhere, or at once inside a connection's serve
		// (a run of its own): the loop resumes them after it.
		_ = l.loop.Later(func() { l.landedJob(j) })
	}
}

// waitFor is the loop waiting for a job it started with answered, for at
// most budget (t is the loop's timer). It reports whether the job was
// answered in time, in which case its connections are resumed; otherwise
// the job resumes them when it is answered, and the loop goes on serving.
func (j *job) waitFor(t *time.Timer, budget time.Duration) bool {
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
	j.l.landedJob(j)
	return true
}

// runsOf is the commands of runs, one after the other.
func runsOf(runs []Conn) [][][]byte {
	if len(runs) == 1 {
		return runs[0].Commands()
	}
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
