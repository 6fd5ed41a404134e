package protocol

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler"
)

// echoHandler answers "PK.ECHO n" with :n, from the event loop (inline:
// it declares it finishes at once) or off it, each run its own submission
// or joined (batches), so that the server's paths are tested without a
// store. Its ops are n as the key; it is its own store (Submit).
type echoHandler struct {
	inline  bool          // declares backend.AtOnce
	batches bool          // declares Joins, completing Elsewhere (else each run alone)
	onLoop  bool          // declares Joins, completing on the submitter's loop (OnLoop)
	delay   time.Duration // each submission waits this long, as a store would

	mu      sync.Mutex
	sizes   []int         // ops per submission
	hold    chan struct{} // when set, a submission waits for it to close,
	entered chan struct{} // after a send here
}

// Info: the echo store declares how it completes, and no timeout: the
// server's bounds it.
func (h *echoHandler) Info() backend.Info {
	switch {
	case h.inline:
		return backend.Info{Completes: backend.AtOnce}
	case h.onLoop:
		return backend.Info{Completes: backend.OnLoop, Joins: true}
	}
	return backend.Info{Completes: backend.Elsewhere, Joins: h.batches}
}

func (h *echoHandler) IsPK(name []byte) bool { return strings.EqualFold(string(name), "PK.ECHO") }

func (h *echoHandler) answer(args [][]byte) commands.Reply {
	if len(args) < 2 {
		return commands.Reply{Kind: commands.Error, Text: "ERR wrong number of arguments"}
	}
	n, err := strconv.ParseInt(string(args[1]), 10, 64)
	if err != nil && string(args[1]) != "fail" {
		return commands.Reply{Kind: commands.Error, Text: "ERR not a number"}
	}
	return commands.Reply{Kind: commands.Int, Int: n}
}

// reply is the echo of an op's result.
func (h *echoHandler) reply(op *backend.Op, res backend.Result) commands.Reply {
	if res.Err != nil {
		return commands.Unavailable(res.Err)
	}
	return h.answer([][]byte{nil, op.Key})
}

func (h *echoHandler) ParseOne(args [][]byte, op *backend.Op) (*commands.Spec, *commands.Reply, bool) {
	if !h.IsPK(args[0]) {
		return nil, nil, false
	}
	if r := h.answer(args); r.Kind == commands.Error {
		return nil, &r, true
	}
	*op = backend.Op{Key: args[1]}
	return &commands.Spec{}, nil, true
}

func (h *echoHandler) AnswerOne(_ *commands.Spec, op *backend.Op, res *backend.Result, r *commands.Reply) {
	*r = h.reply(op, *res)
}

// ParseBatch refuses what answer refuses; the others are ops.
func (h *echoHandler) ParseBatch(cmds [][][]byte, replies []commands.Reply) commands.Parsed {
	var ops []backend.Op
	var at []int
	for i, args := range cmds {
		if r := h.answer(args); r.Kind == commands.Error {
			replies[i] = r
			continue
		}
		ops = append(ops, backend.Op{Key: args[1]})
		at = append(at, i)
	}
	return commands.ParsedOf(ops, at, func(k int, res backend.Result) commands.Reply { return h.reply(&ops[k], res) })
}

func (h *echoHandler) LoadSecret(context.Context) error { return nil }

// Submit is the echo store: it waits as told, then answers every op; an
// isolated block holding "PK.ECHO fail" fails as a whole, as a store that
// fails during EXEC.
func (h *echoHandler) Submit(s *backend.Submission) {
	if h.inline {
		h.run(s)
		s.Finish(backend.AtOnce)
		return
	}
	if h.onLoop {
		s.Watch() // an OnLoop store watches its own submissions
	}
	go func() {
		h.run(s)
		if h.onLoop && s.Loop != nil && s.Loop.Later(func() { s.Finish(backend.OnLoop) }) == nil {
			return
		}
		s.Finish(backend.Elsewhere)
	}()
}

func (h *echoHandler) run(s *backend.Submission) {
	h.mu.Lock()
	h.sizes = append(h.sizes, len(s.Ops))
	hold, delay := h.hold, h.delay
	h.mu.Unlock()
	if hold != nil {
		h.entered <- struct{}{}
		<-hold
	}
	time.Sleep(delay) // the store's slowness itself, not a wait for an event
	for i := range s.Ops {
		s.Res[i] = backend.Result{}
		if s.Isolation == backend.Isolated && string(s.Ops[i].Key) == "fail" {
			s.Err = errors.New("fake: failed")
		}
	}
}

// Check refuses what answer refuses.
func (h *echoHandler) Check(args [][]byte) (commands.Reply, bool) {
	r := h.answer(args)
	return r, r.Kind != commands.Error
}

type readyPinger struct{}

func (readyPinger) Ping(context.Context) error { return nil }

// serve starts a Server on a loopback port and returns its address.
func serve(t *testing.T, cfg Config, h Handler) string {
	t.Helper()
	addr, _ := serveServer(t, cfg, h)
	return addr
}

// serveServer starts a Server on a loopback port.
func serveServer(t *testing.T, cfg Config, h Handler) (string, *Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Portable = cfg.Portable || testPortable
	srv := New(cfg, h, readyPinger{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.ErrorIs(t, <-done, ErrServerClosed)
	})
	return ln.Addr().String(), srv
}

func echoReq(n int) string { return req("PK.ECHO", strconv.Itoa(n)) }

// TestPipelineOrder sends long pipelines, mixed with connection commands,
// from several clients at once, on every path a PK command can take, and
// checks each client gets every reply in order.
func TestPipelineOrder(t *testing.T) {
	paths := map[string]struct {
		inline bool
		h      *echoHandler
	}{
		"inline":    {true, &echoHandler{inline: true}},
		"goroutine": {false, &echoHandler{delay: 50 * time.Microsecond}},
		"batched":   {false, &echoHandler{batches: true, delay: 200 * time.Microsecond}},
		"onloop":    {false, &echoHandler{onLoop: true, delay: 200 * time.Microsecond}},
	}
	for name, p := range paths {
		t.Run(name, func(t *testing.T) {
			// Three loops: several batch drivers, connections spread over them.
			addr := serve(t, Config{EventLoops: 3}, p.h)
			const clients, each = 8, 3000
			eachClient(t, addr, clients, func(cl int, nc net.Conn) {
				var want strings.Builder
				var stream strings.Builder
				for i := range each {
					n := cl*each + i
					if i%97 == 0 {
						stream.WriteString(req("PING"))
						want.WriteString("+PONG\r\n")
					}
					stream.WriteString(echoReq(n))
					want.WriteString(":" + strconv.Itoa(n) + "\r\n")
				}
				go func() { _, _ = io.WriteString(nc, stream.String()) }()
				_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
				got := make([]byte, want.Len())
				_, err := io.ReadFull(bufio.NewReader(nc), got)
				if assertNoError(t, err) && string(got) != want.String() {
					t.Errorf("client %d: replies out of order", cl)
				}
			})
		})
	}
}

// eachClient runs fn for n connections to addr at once, and waits for all.
func eachClient(t *testing.T, addr string, n int, fn func(i int, nc net.Conn)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if !assertNoError(t, err) {
				return
			}
			defer nc.Close()
			fn(i, nc)
		}()
	}
	wg.Wait()
}

func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// TestBatchesJoinClients checks that runs of several connections that wait
// together go to the store in one Batch call: while one batch is held at
// the store, the runs of 15 other clients are queued (the test waits until
// the batch driver holds all of them), then go in one Batch.
func TestBatchesJoinClients(t *testing.T) {
	h := &echoHandler{batches: true, delay: 2 * scheduler.OnLoopBudget}
	addr, srv := serveServer(t, Config{}, h)
	const clients = 16
	conns := make([]net.Conn, clients)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		conns[i] = nc
	}
	roundTrip := func(i int) {
		t.Helper()
		want := fmt.Sprintf(":%d\r\n", i)
		got := make([]byte, len(want))
		_, err := io.ReadFull(conns[i], got)
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	// A slow batch on the loop sends the next ones off it, to the batch driver's
	// goroutine, which takes its queue at once.
	_, err := io.WriteString(conns[0], echoReq(0))
	require.NoError(t, err)
	roundTrip(0)

	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // a failure below must not leave the store held
	h.mu.Lock()
	h.hold, h.entered, h.delay = hold, make(chan struct{}, 1), 0
	h.mu.Unlock()
	_, err = io.WriteString(conns[0], echoReq(0))
	require.NoError(t, err)
	<-h.entered
	h.mu.Lock()
	h.hold = nil // only this batch is held
	h.mu.Unlock()
	for i := 1; i < clients; i++ {
		_, err := io.WriteString(conns[i], echoReq(i))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		for _, g := range batchGauges(srv) {
			return g.Pending == clients-1
		}
		return false
	}, 10*time.Second, time.Millisecond, "the other clients' runs are queued")
	release()
	for i := range clients {
		roundTrip(i)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Equal(t, []int{1, 1, clients - 1}, h.sizes)
}

// TestShutdownAnswersInFlight: a run at the store when Shutdown begins is
// still answered, then the connection is closed; an idle one is closed.
func TestShutdownAnswersInFlight(t *testing.T) {
	for _, batches := range []bool{false, true} {
		t.Run(fmt.Sprint("batches=", batches), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			h := &echoHandler{batches: batches, delay: 300 * time.Millisecond}
			srv := New(Config{Portable: testPortable}, h, readyPinger{})
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()

			idle, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			busy, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			_, err = io.WriteString(busy, req("PING")+echoReq(7))
			require.NoError(t, err)
			rd := bufio.NewReader(busy)
			line, err := rd.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "+PONG\r\n", line) // the run is now at the store

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			require.NoError(t, srv.Shutdown(ctx))
			require.ErrorIs(t, <-served, ErrServerClosed)

			rest, err := io.ReadAll(rd)
			require.NoError(t, err)
			require.Equal(t, ":7\r\n", string(rest))
			_ = idle.SetReadDeadline(time.Now().Add(time.Second))
			n, err := idle.Read(make([]byte, 1))
			require.Equal(t, 0, n)
			require.ErrorIs(t, err, io.EOF)
		})
	}
}

// TestLargeRequests sends requests that span many reads, in pieces of
// random size, on every path, and checks each is answered once, in order.
func TestLargeRequests(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			addr := serve(t, Config{MaxBulk: 1 << 20}, &echoHandler{inline: inline, batches: true})
			nc, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer nc.Close()
			var stream, want strings.Builder
			for i, size := range []int{0, 65536 - 40, 65536, 65537, 200_000, 10, 1 << 20} {
				stream.WriteString(req("PK.ECHO", strconv.Itoa(i), strings.Repeat("p", size)))
				stream.WriteString(req("PING"))
				want.WriteString(":" + strconv.Itoa(i) + "\r\n+PONG\r\n")
			}
			go func() {
				b := []byte(stream.String())
				for len(b) > 0 {
					n := min(len(b), 1+len(b)%70_001)
					if _, err := nc.Write(b[:n]); err != nil {
						return
					}
					b = b[n:]
					time.Sleep(time.Millisecond)
				}
			}()
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			got := make([]byte, want.Len())
			_, err = io.ReadFull(nc, got)
			require.NoError(t, err)
			require.Equal(t, want.String(), string(got))
		})
	}
}

// TestMangledInput sends requests with bytes flipped, cut and repeated,
// and checks the server survives each: a new connection still gets PONG.
// redcon's parser trusts the framing it is given, so this is the guard's
// test as much as the parser's.
func TestMangledInput(t *testing.T) {
	addr := serve(t, Config{Password: "pw", MaxBulk: 1 << 16}, &echoHandler{batches: true})
	valid := req("AUTH", "pw") + req("PK.ECHO", "1") + "PING\r\n" + req("PK.ECHO", "2", "x") + req("HELLO", "3") + req("CLIENT", "SETNAME", "a")
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("*$:+-\r\n0123456789 -\"'\\xPK.ECHO")
	for i := range 1000 {
		b := []byte(valid)
		for range 1 + rng.IntN(4) {
			switch p := rng.IntN(len(b)); rng.IntN(3) {
			case 0:
				b[p] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:p], b[min(len(b), p+1+rng.IntN(5)):]...)
			default:
				ins := []byte{'-', byte('0' + rng.IntN(4))}
				b = append(b[:p], append(ins, b[p:]...)...)
			}
			if len(b) == 0 {
				b = []byte("\r\n")
			}
		}
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, _ = nc.Write(b)
		_ = nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, _ = io.Copy(io.Discard, nc)
		nc.Close()

		probe, err := net.Dial("tcp", addr)
		require.NoError(t, err, "after input %d: %q", i, b)
		_ = probe.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = io.WriteString(probe, "PING\r\n")
		require.NoError(t, err)
		line, err := bufio.NewReader(probe).ReadString('\n')
		require.NoError(t, err, "after input %d: %q", i, b)
		require.Equal(t, "-NOAUTH Authentication required.\r\n", line)
		probe.Close()
	}
}

// TestSlowStoreLeavesLoop: a batch that the store holds past the budget
// is left to itself: the loop goes on answering other clients while the
// store holds it, and the next batches go off the loop, to the batch driver's
// goroutine; a fast batch there brings them back. Each step waits on an
// event (the store entered, a reply read, the batch driver's state), never on
// how long something took: the store holds a batch until the test
// releases it, which is past the budget by construction (the loop has
// given up waiting for it before the test sees its PONG), and the fast
// batches are sent until one has brought the batches back, so a run slowed
// by load (-race, a busy machine) takes longer but cannot fail.
func TestSlowStoreLeavesLoop(t *testing.T) {
	h := &echoHandler{batches: true}
	addr, srv := serveServer(t, Config{}, h)
	a, b := dialLines(t, addr), dialLines(t, addr)
	for _, c := range []*lineReader{a, b} { // open: the loop's batch driver exists
		c.send(req("PING"))
		c.expect("+PONG\r\n")
	}
	require.Len(t, batchGauges(srv), 1) // one loop: a and b share it
	gauge := func() scheduler.Gauge { return batchGauges(srv)[0] }
	require.False(t, gauge().OffLoop)
	queued := func() int { return gauge().Pending }

	// A batch on the loop, held at the store: the loop stops waiting for
	// it after the budget and answers b; the next batches go off the loop.
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // a failure below must not leave the store held
	h.mu.Lock()
	h.hold, h.entered = hold, make(chan struct{}, 1)
	h.mu.Unlock()
	a.send(echoReq(1))
	<-h.entered
	b.send(req("PING"))
	b.expect("+PONG\r\n") // the loop is free while a's batch waits
	// The loop set it before it read b's PING: it had left a's batch.
	require.True(t, gauge().OffLoop, "a batch held past the budget sends the next ones off the loop")
	release()
	a.expect(":1\r\n")
	require.True(t, gauge().OffLoop, "a batch that took longer than the budget does not bring them back")

	// Off the loop: a's next batch, held at the store, goes to the
	// batch driver's goroutine, and b's, sent meanwhile, waits in its queue,
	// not on the loop; the loop answers b's PING all along.
	hold = make(chan struct{})
	release = sync.OnceFunc(func() { close(hold) })
	defer release()
	h.mu.Lock()
	h.hold = hold
	h.mu.Unlock()
	a.send(echoReq(2))
	<-h.entered
	h.mu.Lock()
	h.hold = nil // only a's batch is held
	h.mu.Unlock()
	b.send(req("PING"))
	b.expect("+PONG\r\n")
	b.send(echoReq(3))
	require.Eventually(t, func() bool { return queued() == 1 }, 10*time.Second, time.Millisecond,
		"b's run waits in the batch driver's queue behind a's held batch")
	release()
	a.expect(":2\r\n")
	b.expect(":3\r\n")

	// A batch off the loop answered within the budget brings the next
	// ones back. Under load one may take longer: send them until one
	// was fast. Without that rule, none ever would.
	for i := 4; gauge().OffLoop; i++ {
		require.Less(t, i, 1000, "no fast batch brought the batches back on the loop")
		a.send(echoReq(i))
		a.expect(fmt.Sprintf(":%d\r\n", i))
	}
}

// name is the path the echo store's declaration gives its commands, as
// the subtests are named.
func (h *echoHandler) name() string {
	switch {
	case h.inline:
		return "inline"
	case h.onLoop:
		return "onloop"
	case h.batches:
		return "batch"
	}
	return "calls"
}

// TestServerNow: a turn's time (Server.now, one reading of the monotonic
// clock) is the wall time as time.Now tells it, and carries a monotonic
// reading, so that latencies and idle times are measured on it.
func TestServerNow(t *testing.T) {
	s := &Server{started: time.Now()}
	before := time.Now()
	now := s.now()
	after := time.Now()
	if now.Before(before) || now.After(after) {
		t.Fatalf("now %v is not between %v and %v", now, before, after)
	}
	if !strings.Contains(now.String(), " m=+") {
		t.Fatalf("now %v has no monotonic reading", now)
	}
	if d := now.UnixNano() - before.UnixNano(); d < -int64(time.Millisecond) || d > int64(time.Second) {
		t.Fatalf("now's wall clock is %v off", time.Duration(d))
	}
}
