package redis

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/redis/loopconn"
	"github.com/prepkey/prepkey/backend/storetest"
	"github.com/prepkey/prepkey/protocol/transport"
)

// The store's loop connections (UseLoopConns) on real gnet event loops
// (package transport, as the server runs them): a submission from a loop
// is written on that loop's own connection and finished OnLoop.

// probe is a connection enrolled on a loop only to learn the loop.
type probe struct{ loop chan gnet.EventLoop }

func (p probe) OnOpen(gc gnet.Conn) gnet.Action {
	p.loop <- gc.EventLoop()
	return gnet.None
}
func (probe) OnTraffic(gnet.Conn) gnet.Action                          { return gnet.None }
func (probe) OnClose(gnet.Conn, error)                                 {}
func (probe) Open(transport.IO, transport.Loop, transport.Handle, int) {}
func (probe) Traffic() bool                                            { return false }
func (probe) Closed()                                                  {}
func (probe) Holding(int) bool                                         { return false }

// startLoop starts one gnet event loop and returns it as the server
// passes it in a submission.
func startLoop(t *testing.T) transport.GnetLoop {
	t.Helper()
	loops, err := transport.StartGnet(1, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = loops.Stop() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { _ = peer.Close() })
	p := probe{loop: make(chan gnet.EventLoop, 1)}
	_, err = loops.Enroll(nc, p)
	require.NoError(t, err)
	return transport.GnetLoop{EventLoop: <-p.loop}
}

// loopStore is a store whose every op goes through Submit from a gnet
// loop, as the server submits: the conformance suite then checks the
// loop's own connection (requests, replies, scans and NOSCRIPT through
// the client), not only the client.
type loopStore struct {
	*Store
	loop  transport.GnetLoop
	loops *loopconn.Loops
	// hows counts the submissions by how they finished.
	hows [backend.Dropped + 1]atomic.Int64
}

// loopTimeout is the loop connections' deadline in these tests: the
// suite's deadline row holds Redis past it (an OnLoop store's submissions
// on the loop's connection are bounded by that connection's watch, not by
// a timer of their own), so it is short; two seconds of Redis's silence is
// still far beyond a loaded CI machine's stalls.
const loopTimeout = 2 * time.Second

func newLoopStore(t *testing.T, s *Store) *loopStore {
	t.Helper()
	require.NotNil(t, s.Wire())
	loops := loopconn.NewLoops(s.Wire(), loopconn.Options{Timeout: loopTimeout})
	s.UseLoopConns(loops)
	ls := &loopStore{Store: s, loop: startLoop(t), loops: loops}
	require.Equal(t, backend.OnLoop, s.Info().Completes)
	ls.waitUp(t)
	return ls
}

// waitUp submits until the loop's connection, dialled on the first
// submission, is up: a submission then finishes OnLoop.
func (ls *loopStore) waitUp(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		sub := ls.do([]backend.Op{{Kind: backend.OpGet, NS: "ns", Key: []byte("up")}}, backend.Pipelined)
		return sub.how == backend.OnLoop
	}, 10*time.Second, 10*time.Millisecond, "the loop's connection never came up")
}

type outcome struct {
	sub *backend.Submission
	how backend.Completion
}

// Submit submits on the loop, as the server does, from that loop: the
// store gets a submission of its own from the gnet loop (the caller's may
// be watched already), which shares the caller's results and finishes the
// caller's as it finishes.
func (ls *loopStore) Submit(sub *backend.Submission) {
	in := &backend.Submission{Ops: sub.Ops, Res: sub.Res, Isolation: sub.Isolation, Timeout: sub.Timeout, Loop: ls.loop}
	in.Done = func(in *backend.Submission, how backend.Completion) {
		ls.hows[how].Add(1)
		if how == backend.Late {
			sub.LateErr = in.LateErr
		}
		sub.Err = in.Err
		if how == backend.OnLoop && sub.Loop != nil {
			// Finished on the gnet loop: the caller's OnLoop is on its
			// own loop.
			if sub.Loop.Later(func() { sub.Finish(how) }) == nil {
				return
			}
		}
		sub.Finish(how)
	}
	if err := ls.loop.Later(func() { ls.Store.Submit(in) }); err != nil {
		panic(err)
	}
}

// do submits ops from the loop and waits for Done.
func (ls *loopStore) do(ops []backend.Op, iso backend.Isolation) outcome {
	out := make(chan outcome, 1)
	sub := &backend.Submission{Ops: ops, Res: make([]backend.Result, len(ops)), Isolation: iso, Timeout: 10 * time.Second}
	sub.Done = func(s *backend.Submission, how backend.Completion) { out <- outcome{s, how} }
	sub.Watch()
	ls.Submit(sub)
	return <-out
}

func (ls *loopStore) RunOne(_ context.Context, op backend.Op) backend.Result {
	return ls.do([]backend.Op{op}, backend.Pipelined).sub.Res[0]
}

func (ls *loopStore) Run(_ context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	got := ls.do(ops, iso)
	copy(res, got.sub.Res)
	return got.sub.Err
}

// pause holds Redis for the suite's deadline row: CLIENT PAUSE WRITE
// blocks every script (a submission on the loop's connection waits for
// its reply), while CLIENT UNPAUSE, not a write, goes through. The pause
// is bounded (10 s) in case the test dies holding it.
func (ls *loopStore) pause(t *testing.T) func() func() {
	return func() func() {
		ctx := context.Background()
		c, err := ls.conn(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Do(ctx, c.B().ClientPause().Timeout(10000).Write().Build()).Error())
		return func() { require.NoError(t, c.Do(ctx, c.B().ClientUnpause().Build()).Error()) }
	}
}

// TestConformanceLoopConns runs the conformance suite through the loop's
// own connection, every op submitted from a gnet loop; most submissions
// finish OnLoop (the others, scans, Elsewhere).
func TestConformanceLoopConns(t *testing.T) {
	url := serverURL(t, envStandalone)
	var onLoop atomic.Int64
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		ls := newLoopStore(t, openStore(t, url, Config{Options: opts}))
		t.Cleanup(func() { onLoop.Add(ls.hows[backend.OnLoop].Load()) })
		return storetest.Harness{Store: ls, Hold: ls.pause(t)}
	})
	require.Positive(t, onLoop.Load(), "no submission finished on the loop")
}

// TestLoopConnsSubmit: a submission from a loop finishes OnLoop with the
// client's results; a scan among its ops, one answered NOSCRIPT (the
// scripts flushed), and one of megabytes go through the client and finish
// Elsewhere, with the same results.
func TestLoopConnsSubmit(t *testing.T) {
	url := serverURL(t, envStandalone)
	s := openStore(t, url, Config{Options: backend.Options{MaxValueBytes: 1 << 20}})
	ls := newLoopStore(t, s)
	k := func(s string) []byte { return []byte(s) }
	var err error

	got := ls.do([]backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: k("a"), Value: k("va")},
		{Kind: backend.OpPrepare, NS: "ns", Key: k("a"), Value: k("vb")},
		{Kind: backend.OpGet, NS: "ns", Key: k("a")},
	}, backend.Pipelined)
	require.Equal(t, backend.OnLoop, got.how)
	require.True(t, got.sub.Res[0].OK)
	require.False(t, got.sub.Res[1].OK)
	require.True(t, got.sub.Res[2].Found)
	require.Equal(t, "va", string(got.sub.Res[2].Record.Value))

	got = ls.do([]backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: k("b"), Value: k("vb")},
		{Kind: backend.OpScan, NS: "ns", Count: 100},
		{Kind: backend.OpGet, NS: "ns", Key: k("b")},
	}, backend.Pipelined)
	require.Equal(t, backend.Elsewhere, got.how, "a scan goes through the client")
	require.True(t, got.sub.Res[0].OK)
	require.NoError(t, got.sub.Res[1].Err)
	require.NotNil(t, got.sub.Res[1].Page)
	// The page and the rest of the scan hold a and b (the prepare before
	// the scan in the submission).
	scanned := map[string]bool{}
	for page := *got.sub.Res[1].Page; ; {
		for _, r := range page.Records {
			scanned[string(r.Key)] = true
		}
		if page.Done {
			break
		}
		page, err = s.Scan(context.Background(), "ns", page.Next, 100)
		require.NoError(t, err)
	}
	require.Equal(t, map[string]bool{"a": true, "b": true}, scanned)
	require.True(t, got.sub.Res[2].Found)

	// The scripts flushed: the loop's connection is answered NOSCRIPT and
	// the ops go again through the client, which loads them.
	c, err := s.conn(context.Background())
	require.NoError(t, err)
	require.NoError(t, c.Do(context.Background(), c.B().ScriptFlush().Build()).Error())
	got = ls.do([]backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: k("c"), Value: k("vc")}, {Kind: backend.OpGet, NS: "ns", Key: k("c")}}, backend.Pipelined)
	require.Equal(t, backend.Elsewhere, got.how, "NOSCRIPT: again through the client")
	require.NoError(t, got.sub.Res[0].Err)
	require.True(t, got.sub.Res[0].OK)
	require.Equal(t, "vc", string(got.sub.Res[1].Record.Value))

	big := make([]byte, loopAt)
	got = ls.do([]backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: k("d"), Value: big}}, backend.Pipelined)
	require.Equal(t, backend.Elsewhere, got.how, "megabytes: through the client")
	require.True(t, got.sub.Res[0].OK)
	got = ls.do([]backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: k("e"), Value: big[:loopAt/2]}}, backend.Pipelined)
	require.Equal(t, backend.OnLoop, got.how)
	require.True(t, got.sub.Res[0].OK)

	// Without a loop (the portable transport), through the client.
	out := make(chan backend.Completion, 1)
	sub := &backend.Submission{Ops: []backend.Op{{Kind: backend.OpGet, NS: "ns", Key: k("e")}}, Res: make([]backend.Result, 1), Timeout: 5 * time.Second,
		Done: func(_ *backend.Submission, how backend.Completion) { out <- how }}
	sub.Watch()
	s.Submit(sub)
	require.Equal(t, backend.Elsewhere, <-out)
	require.NoError(t, sub.Res[0].Err)
	require.True(t, sub.Res[0].Found)
	require.Equal(t, int64(1), ls.loops.Up(), "connections up")
}
