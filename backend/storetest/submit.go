package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// The submission rows drive the store through Submit, the server's one way
// to its ops (issue 33), and hold it to the contract of backend.Submission:
// the results of a submission are those Run gives, in order; a scan in a
// pipelined submission reads what the ops before it wrote; Done runs
// exactly once, with the how that Info.Completes allows
// (Submission.Watch states the rule); a store held past the deadline is
// answered Late, and its own Finish is then dropped.

// submitTimeout is the deadline of the suite's submissions that are not
// meant to meet it: long enough for a real server on a loaded machine.
const submitTimeout = 30 * time.Second

// testLoop is a backend.Loop: one goroutine running what it is given, in
// order, as an event loop does. on reports whether the caller is running
// on it (a func given to Later).
type testLoop struct {
	funcs chan func()
	stop  chan struct{}
	on    atomic.Bool
}

func newTestLoop(t *testing.T) *testLoop {
	l := &testLoop{funcs: make(chan func(), 64), stop: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case f := <-l.funcs:
				l.on.Store(true)
				f()
				l.on.Store(false)
			case <-l.stop:
				return
			}
		}
	}()
	t.Cleanup(func() { close(l.stop); <-done })
	return l
}

func (l *testLoop) Later(f func()) error {
	select {
	case l.funcs <- f:
		return nil
	case <-l.stop:
		return errors.New("loop stopped")
	}
}

// submitted is the outcome of one submission as the suite saw it.
type submitted struct {
	sub *backend.Submission
	how backend.Completion
	// inSubmit: Done ran before Submit returned.
	inSubmit bool
	// onLoop: Done ran on the suite's loop; ownLoop: the submission's
	// Loop is still the suite's (a harness's store may submit from a loop
	// of its own, a gnet loop).
	onLoop, ownLoop bool
	dones           *atomic.Int32
}

// submission builds a submission of ops from the loop l (nil: none).
func submission(ops []backend.Op, iso backend.Isolation, timeout time.Duration, l *testLoop) *backend.Submission {
	s := &backend.Submission{Ops: ops, Res: make([]backend.Result, len(ops)), Isolation: iso, Timeout: timeout}
	if l != nil {
		s.Loop = l
	}
	return s
}

// start submits s to the store as the server does: its deadline armed
// unless the store finishes at once. The channel receives the outcome of
// the first Done; later ones are counted in dones.
func (e *env) start(s *backend.Submission, l *testLoop) (<-chan submitted, *atomic.Int32) {
	dones := new(atomic.Int32)
	var returned atomic.Bool
	out := make(chan submitted, 1)
	s.Done = func(got *backend.Submission, how backend.Completion) {
		if dones.Add(1) > 1 {
			if how != backend.Dropped {
				e.t.Errorf("a second Done of a submission, %d: only Dropped after Late", how)
			}
			return
		}
		out <- submitted{sub: got, how: how, inSubmit: !returned.Load(), onLoop: l != nil && l.on.Load(), ownLoop: l != nil && got.Loop == backend.Loop(l), dones: dones}
	}
	if e.h.Store.Info().Watched() {
		s.Watch()
	}
	e.h.Store.Submit(s)
	returned.Store(true)
	return out, dones
}

// wait waits for the outcome of a submission started with start.
func (e *env) wait(out <-chan submitted) submitted {
	e.t.Helper()
	select {
	case got := <-out:
		return got
	case <-time.After(2 * submitTimeout):
		e.t.Fatalf("no Done within %s", 2*submitTimeout)
		return submitted{}
	}
}

// submit submits ops and waits for Done; it checks the rule between the
// store's Completes and Done's how.
func (e *env) submit(ops []backend.Op, iso backend.Isolation) submitted {
	e.t.Helper()
	l := newTestLoop(e.t)
	out, _ := e.start(submission(ops, iso, submitTimeout, l), l)
	got := e.wait(out)
	e.requireCompletion(got)
	return got
}

// requireCompletion holds got's how to the rule of
// backend.Submission.Watch for the store's Completes.
func (e *env) requireCompletion(got submitted) {
	e.t.Helper()
	declared := e.h.Store.Info().Completes
	switch got.how {
	case backend.AtOnce:
		require.Equal(e.t, backend.AtOnce, declared, "finished AtOnce, but Info.Completes is %v", declared)
		require.True(e.t, got.inSubmit, "finished AtOnce after Submit returned")
	case backend.OnLoop:
		require.NotEqual(e.t, backend.AtOnce, declared, "finished OnLoop, but Info.Completes is AtOnce")
		if got.ownLoop {
			require.True(e.t, got.onLoop, "finished OnLoop, not on the submission's loop")
		}
	case backend.Elsewhere:
		// Every store may: an AtOnce one for a submission of large
		// arguments it takes off the loop, having armed its deadline
		// itself; never for the suite's small ones.
		require.False(e.t, declared == backend.AtOnce && smallArgs(got.sub.Ops),
			"Info.Completes is AtOnce, but a submission of small arguments finished Elsewhere")
	default:
		e.t.Fatalf("Done's how is %v for a submission that met its deadline", got.how)
	}
}

// smallArgs reports whether ops' arguments are all small (under 64 KiB in
// all), which a store that declares AtOnce finishes at once.
func smallArgs(ops []backend.Op) bool {
	n := 0
	for _, op := range ops {
		n += len(op.Key) + len(op.Value) + len(op.OldKey) + len(op.OldValue) + len(op.Cond.Value)
		for _, en := range op.Entries {
			n += len(en.Key) + len(en.Value)
		}
	}
	return n < 64<<10
}

func runSubmit(t *testing.T, newStore NewStore) {
	t.Run("pipelined as Run", func(t *testing.T) { testSubmitPipelined(t, newStore) })
	t.Run("isolated as Run", func(t *testing.T) { testSubmitIsolated(t, newStore) })
	t.Run("scan among ops", func(t *testing.T) { testSubmitScan(t, newStore) })
	t.Run("done once", func(t *testing.T) { testSubmitOnce(t, newStore) })
	t.Run("deadline", func(t *testing.T) { testSubmitDeadline(t, newStore) })
}

// pipelineOps is a pipeline touching every kind of op, whose results
// depend on the order they run in.
func pipelineOps() []backend.Op {
	k := func(s string) []byte { return []byte(s) }
	return []backend.Op{
		{Kind: backend.OpPrepare, NS: ns, Key: k("a"), Value: k("va")},
		{Kind: backend.OpPrepare, NS: ns, Key: k("a"), Value: k("other")},
		{Kind: backend.OpGet, NS: ns, Key: k("a")},
		{Kind: backend.OpReprepare, NS: ns, Key: k("a"), Value: k("va2"), Cond: backend.IfEq(k("va"))},
		{Kind: backend.OpMove, NS: ns, Key: k("b"), Value: k("vb"), OldKey: k("a"), OldValue: k("va2")},
		{Kind: backend.OpGet, NS: ns, Key: k("a")},
		{Kind: backend.OpMPrepare, Entries: []backend.Entry{entry(ns, "c", "vc"), entry(ns, "d", "vd")}},
		{Kind: backend.OpMPrepare, Entries: []backend.Entry{entry(ns, "e", "ve"), entry(ns, "b", "taken")}},
		{Kind: backend.OpRollback, NS: ns, Key: k("c"), Cond: backend.IfEq(k("vc"))},
		{Kind: backend.OpGet, NS: ns, Key: k("b")},
		{Kind: backend.OpGet, NS: ns, Key: k("c")},
		{Kind: backend.OpGet, NS: ns, Key: k("d")},
		{Kind: backend.OpGet, NS: ns, Key: k("e")},
	}
}

// testSubmitPipelined: a pipelined submission answers what Run answers
// for the same ops on a fresh store, op by op, in order.
func testSubmitPipelined(t *testing.T, newStore NewStore) {
	viaRun := newEnv(t, newStore, tableRetention)
	want := make([]backend.Result, len(pipelineOps()))
	require.NoError(t, viaRun.h.Store.Run(viaRun.ctx, pipelineOps(), want, backend.Pipelined))

	e := newEnv(t, newStore, tableRetention)
	got := e.submit(pipelineOps(), backend.Pipelined)
	require.NoError(t, got.sub.Err)
	require.Equal(t, want, got.sub.Res)
	// And what it answered is what the store holds.
	e.requireRecord(ns, "b", "vb", ttlWant{}, true)
	e.requireAbsent(ns, "a")
	e.requireAbsent(ns, "c")
	e.requireRecord(ns, "d", "vd", ttlWant{}, true)
	e.requireAbsent(ns, "e")
}

// testSubmitIsolated: an isolated submission (EXEC) answers what Run
// answers, Err included: a *backend.NotIsolated with nothing changed where
// the store refuses the block.
func testSubmitIsolated(t *testing.T, newStore NewStore) {
	a, b := "a", "b"
	blocks := map[string][2]string{"two keys": {a, b}}
	probe := newEnv(t, newStore, tableRetention)
	ka, kb := probe.blockKeys()
	blocks["block keys"] = [2]string{ka, kb}
	for name, keys := range blocks {
		t.Run(name, func(t *testing.T) {
			ops := func() []backend.Op {
				return []backend.Op{
					{Kind: backend.OpPrepare, NS: ns, Key: []byte(keys[0]), Value: []byte("v")},
					{Kind: backend.OpPrepare, NS: ns, Key: []byte(keys[1]), Value: []byte("v")},
					{Kind: backend.OpGet, NS: ns, Key: []byte(keys[0])},
					{Kind: backend.OpRollback, NS: ns, Key: []byte(keys[1]), Cond: backend.IfEq([]byte("v"))},
				}
			}
			viaRun := newEnv(t, newStore, tableRetention)
			want := make([]backend.Result, 4)
			wantErr := viaRun.h.Store.Run(viaRun.ctx, ops(), want, backend.Isolated)

			e := newEnv(t, newStore, tableRetention)
			got := e.submit(ops(), backend.Isolated)
			if !e.isolates(keys[:]) {
				var refused *backend.NotIsolated
				require.ErrorAs(t, wantErr, &refused, "Run of a block the store does not isolate")
				require.ErrorAs(t, got.sub.Err, &refused, "Submit of a block the store does not isolate")
				e.requireAbsent(ns, keys[0])
				e.requireAbsent(ns, keys[1])
				return
			}
			require.NoError(t, wantErr)
			require.NoError(t, got.sub.Err)
			require.Equal(t, want, got.sub.Res)
			e.requireRecord(ns, keys[0], "v", ttlWant{}, true)
			e.requireAbsent(ns, keys[1])
		})
	}
}

// testSubmitScan: an OpScan in the middle of a pipelined submission reads
// the writes of the ops before it (in order) through the store's Scan,
// filtered by its Keep, and the ops after it run after it.
func testSubmitScan(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	for _, k := range []string{"s1", "s2", "skip"} {
		require.True(t, e.prepare(ns, k, "v"+k, forever))
	}
	keep := func(r backend.ScanRecord) bool { return string(r.Key) != "skip" }
	ops := []backend.Op{
		{Kind: backend.OpPrepare, NS: ns, Key: []byte("s3"), Value: []byte("vs3")},
		{Kind: backend.OpScan, NS: ns, Count: 1000, Keep: keep},
		{Kind: backend.OpRollback, NS: ns, Key: []byte("s1"), Cond: backend.IfEq([]byte("vs1"))},
		{Kind: backend.OpGet, NS: ns, Key: []byte("s1")},
	}
	got := e.submit(ops, backend.Pipelined)
	res := got.sub.Res
	require.NoError(t, res[0].Err)
	require.True(t, res[0].OK)
	require.NoError(t, res[1].Err)
	require.NotNil(t, res[1].Page, "a scan's result has its page")
	require.NoError(t, res[2].Err)
	require.True(t, res[2].OK)
	require.NoError(t, res[3].Err)
	require.False(t, res[3].Found, "the Get after the Rollback")

	// The page, and the rest of the scan from where it stopped, hold every
	// record but the one Keep left out; s1 (rolled back after the page)
	// only if the page read it.
	scanned := map[string]string{}
	page := *res[1].Page
	for {
		for _, r := range page.Records {
			require.NotEqual(t, "skip", string(r.Key), "Keep left it out")
			scanned[string(r.Key)] = string(r.Value)
		}
		if page.Done {
			break
		}
		var err error
		page, err = e.h.Store.Scan(e.ctx, ns, page.Next, 1000)
		require.NoError(t, err)
		// The rest is read directly: filter as Keep would.
		kept := page.Records[:0]
		for _, r := range page.Records {
			if keep(r) {
				kept = append(kept, r)
			}
		}
		page.Records = kept
	}
	require.Equal(t, "vs2", scanned["s2"])
	require.Equal(t, "vs3", scanned["s3"], "the scan read the prepare before it")
	for _, r := range res[1].Page.Records {
		if string(r.Key) == "s1" {
			require.Equal(t, "vs1", string(r.Value))
		}
	}
}

// testSubmitOnce: Done runs exactly once per submission, however many
// are under way at once (a store that finished twice, or that lost one,
// is caught here), and each answers its own ops.
func testSubmitOnce(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	l := newTestLoop(t)
	const n = 64
	type pending struct {
		out   <-chan submitted
		dones *atomic.Int32
	}
	subs := make([]pending, n)
	for i := range n {
		ops := []backend.Op{
			{Kind: backend.OpPrepare, NS: ns, Key: fmt.Appendf(nil, "once-%d", i), Value: []byte("v")},
			{Kind: backend.OpGet, NS: ns, Key: fmt.Appendf(nil, "once-%d", i)},
		}
		out, dones := e.start(submission(ops, backend.Pipelined, submitTimeout, l), l)
		subs[i] = pending{out, dones}
	}
	for i, p := range subs {
		got := e.wait(p.out)
		e.requireCompletion(got)
		require.NoError(t, got.sub.Res[0].Err, "submission %d", i)
		require.True(t, got.sub.Res[0].OK, "submission %d", i)
		require.True(t, got.sub.Res[1].Found, "submission %d", i)
		require.Equal(t, fmt.Sprintf("once-%d", i), string(got.sub.Ops[1].Key))
	}
	// A last submission, answered after the others: a second Done of any
	// of them, from the same store's goroutines, would have come by now
	// on a store that answers in order.
	e.submit([]backend.Op{{Kind: backend.OpGet, NS: ns, Key: []byte("once-0")}}, backend.Pipelined)
	for i, p := range subs {
		require.Equal(t, int32(1), p.dones.Load(), "Done calls of submission %d", i)
	}
}

// testSubmitDeadline: a store held past a submission's deadline
// (Harness.Hold, or a Fault that blocks a step of a composed command) is
// answered Late, every op a failure, no sooner than the deadline; its own
// Finish, once let go, is dropped, and the store serves on.
func testSubmitDeadline(t *testing.T, newStore NewStore) {
	e := newEnv(t, newStore, tableRetention)
	if e.h.Store.Info().Completes == backend.AtOnce {
		t.Skip("the store finishes at once: it has no deadline to miss")
	}
	var release func()
	held := make(chan struct{}) // closed when the store reached the hold
	switch {
	case e.h.Hold != nil:
		close(held)
		release = e.h.Hold()
	case e.h.Fault != nil:
		let := make(chan struct{})
		var once sync.Once
		// The fault stays installed (a fresh store per row): after let,
		// it lets every step through, and removing it would race the
		// held submission's steps.
		e.h.Fault(func(backend.Step) error {
			once.Do(func() { close(held) })
			<-let
			return nil
		})
		release = func() { close(let) }
	default:
		t.Skip("the harness has no way to hold the store (Hold, Fault)")
	}
	const timeout = 200 * time.Millisecond
	ops := []backend.Op{{Kind: backend.OpMPrepare, Entries: []backend.Entry{entry(ns, "late-a", "v"), entry(ns, "late-b", "v")}}}
	l := newTestLoop(t)
	began := time.Now()
	out, dones := e.start(submission(ops, backend.Pipelined, timeout, l), l)
	got := e.wait(out)
	took := time.Since(began)
	select {
	case <-held:
	default:
		t.Fatal("answered before the store reached the hold")
	}
	release()
	if e.h.Store.Info().Completes == backend.OnLoop {
		// An OnLoop store watches what it writes on a loop's own
		// connection itself (Submission.Watch: the submitter arms no
		// timer for it): the connection's watch, the same deadline
		// counted as the store's silence, fails every submission on it
		// and finishes them on the loop.
		require.Equal(t, backend.OnLoop, got.how)
		for i := range ops {
			require.Error(t, got.sub.Res[i].Err, "op %d of a submission the store held past its deadline", i)
		}
		after := e.submit([]backend.Op{{Kind: backend.OpGet, NS: ns, Key: []byte("late-a")}}, backend.Pipelined)
		require.NoError(t, after.sub.Res[0].Err)
		require.Equal(t, int32(1), dones.Load(), "Done calls of the held submission")
		return
	}
	require.Equal(t, backend.Late, got.how)
	require.GreaterOrEqual(t, took, timeout, "answered Late before the deadline")
	require.ErrorContains(t, got.sub.LateErr, "no answer within")

	// The store, let go, serves on; its Finish of the held submission
	// comes as a second Done, Dropped (the server counts it as no longer
	// at the store), never as an answer.
	after := e.submit([]backend.Op{{Kind: backend.OpGet, NS: ns, Key: []byte("late-a")}}, backend.Pipelined)
	require.NoError(t, after.sub.Res[0].Err)
	require.Eventually(t, func() bool { return dones.Load() == 2 }, 5*time.Second, time.Millisecond,
		"Done calls of the held submission: Late, then Dropped")
}
