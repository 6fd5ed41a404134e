package protocol

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
)

// lineBackend is a reservation server for the upstream tests: one request
// per line, "P key", answered "1" when the key is new and "0" when it is
// taken. A key starting "again" is answered "A" (Wire's again), "err" is
// answered "E boom". It can hang (read and not answer) and drop its
// connections.
type lineBackend struct {
	ln       net.Listener
	accepted atomic.Int32
	hang     atomic.Bool
	delay    atomic.Int64 // nanoseconds before each reply: a slow backend
	// hugeReply, when set, makes a key starting "huge" answered with 1 MiB
	// and no end of line; the connection is sent there.
	hugeReply chan net.Conn

	mu    sync.Mutex
	taken map[string]bool
	conns []net.Conn
}

func startLineBackend(t *testing.T) *lineBackend {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &lineBackend{ln: ln, taken: map[string]bool{}}
	t.Cleanup(func() { _ = ln.Close(); b.drop() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			b.mu.Lock()
			b.conns = append(b.conns, nc)
			b.mu.Unlock()
			go b.serve(nc)
		}
	}()
	return b
}

func (b *lineBackend) serve(nc net.Conn) {
	sc := bufio.NewScanner(nc)
	for sc.Scan() {
		key := strings.TrimPrefix(sc.Text(), "P ")
		var reply string
		switch {
		case strings.HasPrefix(key, "huge") && b.hugeReply != nil:
			_, _ = nc.Write(bytes.Repeat([]byte("x"), 1<<20))
			b.hugeReply <- nc
			continue
		case strings.HasPrefix(key, "again"):
			reply = "A"
		case strings.HasPrefix(key, "err"):
			reply = "E boom"
		default:
			b.mu.Lock()
			reply = "0"
			if !b.taken[key] {
				b.taken[key], reply = true, "1"
			}
			b.mu.Unlock()
		}
		if b.hang.Load() {
			continue
		}
		time.Sleep(time.Duration(b.delay.Load()))
		if _, err := io.WriteString(nc, reply+"\n"); err != nil {
			return
		}
	}
}

// waitTaken waits until the backend has reserved key.
func (b *lineBackend) waitTaken(t *testing.T, key string) {
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.taken[key]
	}, 5*time.Second, time.Millisecond)
}

// drop closes every connection the backend has.
func (b *lineBackend) drop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, nc := range b.conns {
		_ = nc.Close()
	}
	b.conns = nil
}

// lineWire is the Wire of a lineBackend.
type lineWire struct{ addr string }

func (w lineWire) Dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", w.addr)
}

// Append writes one request line per op; Read answers one op per line.
func (w lineWire) Append(dst []byte, ops []backend.Op) []byte {
	for _, op := range ops {
		if op.Kind != backend.OpScan { // a scan has no request (loopconn.Wire)
			dst = fmt.Appendf(dst, "P %s\n", op.Key)
		}
	}
	return dst
}

func (w lineWire) Read(b []byte, _ []backend.Op, res []backend.Result) (int, int, bool) {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return 0, 0, false
	}
	switch line := string(b[:end]); line {
	case "1", "0":
		res[0] = backend.Result{OK: line == "1"}
		return end + 1, 1, false
	case "A":
		return end + 1, 1, true
	default:
		res[0] = backend.Result{Err: errors.New("fake: " + strings.TrimPrefix(line, "E "))}
		return end + 1, 1, false
	}
}

func (w lineWire) Lost(op backend.Op, cause error) error {
	return fmt.Errorf("fake: %s lost: %w", op.Key, cause)
}

func (w lineWire) Late() error { return errors.New("no answer") }

// MaxReply: 256 MiB, a bound far past any reply of the tests.
func (w lineWire) MaxReply() int { return 256 << 20 }

// The line backend has no replicas: no request follows a batch's.
func (w lineWire) AppendSync(dst []byte, _ []backend.Op) ([]byte, bool) { return dst, false }
func (w lineWire) ReadSync([]byte, []backend.Op, []backend.Result) int  { return 0 }
func (w lineWire) FailSync([]backend.Op, []backend.Result, error)       {}

// batchingMemory is the memory store served as a batching store (the
// tests drive it DriveWire), so that the server gives each loop an
// upstream. It is where runs go
// while the upstream is down, and where "again" sends an op.
// holdNext makes the next store calls wait until hold is closed, after a
// send on entered.
type batchingMemory struct {
	*memory.Store
	mu            sync.Mutex
	hold, entered chan struct{}
}

func (m *batchingMemory) holdNext(hold, entered chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hold, m.entered = hold, entered
}

func (m *batchingMemory) wait() {
	m.mu.Lock()
	hold, entered := m.hold, m.entered
	m.mu.Unlock()
	if hold != nil {
		entered <- struct{}{}
		<-hold
	}
}

// RunOne takes a prepare only: a batch of one (Handler.Batch calls Do).
func (m *batchingMemory) RunOne(ctx context.Context, op backend.Op) backend.Result {
	m.wait()
	if op.Kind != backend.OpPrepare {
		return backend.Result{Err: errors.New("batchingMemory: only prepare")}
	}
	return m.Store.RunOne(ctx, op)
}

// Run takes prepares only; a transaction block is the memory store's.
func (m *batchingMemory) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if iso == backend.Isolated {
		return m.Store.Run(ctx, ops, res, iso)
	}
	m.wait()
	for i := range ops {
		if ops[i].Kind != backend.OpPrepare {
			res[i].Err = errors.New("batchingMemory: only prepare")
			continue
		}
		res[i] = m.Store.RunOne(ctx, ops[i])
	}
	return nil
}

// serveWire starts a server whose store is reached over lineWire, with a
// memory store behind Handler.Batch.
func serveWire(t *testing.T, cfg Config, timeout time.Duration) (*lineBackend, string, *Server) {
	b, addr, srv, _ := serveWireStore(t, cfg, timeout)
	return b, addr, srv
}

func serveWireStore(t *testing.T, cfg Config, timeout time.Duration) (*lineBackend, string, *Server, *batchingMemory) {
	b := startLineBackend(t)
	cfg.Wire = lineWire{addr: b.ln.Addr().String()}
	cfg.BackendTimeout = timeout  // the store's deadline, on the Wire and off it
	cfg.Drive = backend.DriveWire // the tests reach it over lineWire
	m := &batchingMemory{Store: memory.New(backend.Options{})}
	addr, srv := serveServer(t, cfg, commands.New(m, commands.DefaultLimits, nil))
	return b, addr, srv, m
}

// upstreamsReady waits until every loop's upstream is connected, so that
// runs go over the Wire and not through Handler.Batch.
func upstreamsReady(t *testing.T, srv *Server, loops int) { upstreamsAre(t, srv, loops, true) }

// upstreamsAre waits until every loop's upstream is connected (up) or not.
func upstreamsAre(t *testing.T, srv *Server, loops int, up bool) {
	require.Eventually(t, func() bool {
		ws := wireGauges(srv) // each read on its loop
		if len(ws) != loops {
			return false
		}
		for _, w := range ws {
			if w.LinkUp != up {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
}

// lineReader reads one reply line at a time, within a deadline.
type lineReader struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func dialLines(t *testing.T, addr string) *lineReader {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &lineReader{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (l *lineReader) send(s string) {
	_, err := io.WriteString(l.nc, s)
	require.NoError(l.t, err)
}

func (l *lineReader) expect(want string) {
	l.t.Helper()
	_ = l.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := l.rd.ReadString('\n')
	require.NoError(l.t, err)
	require.Equal(l.t, want, line)
}

// TestWireOrder sends long pipelines from several clients over three
// loops, each loop with its upstream: every client gets every reply in
// order, refused requests and connection commands included, and each key
// is won once.
func TestWireOrder(t *testing.T) {
	b, addr, srv := serveWire(t, Config{EventLoops: 3}, 5*time.Second)
	const clients, each = 9, 2000
	// Connect them all first so that every loop has its upstream.
	conns := make([]*lineReader, clients)
	for i := range conns {
		conns[i] = dialLines(t, addr)
	}
	upstreamsReady(t, srv, 3)
	var wg sync.WaitGroup
	for cl, c := range conns {
		wg.Go(func() {
			var stream, want strings.Builder
			for i := range each {
				key := strconv.Itoa(i) // every client races for the same keys
				if cl%3 == 0 {
					key = fmt.Sprintf("c%d-%d", cl, i) // and some have their own
				}
				stream.WriteString(req("PK.PREPARE", "ns", key, "v"))
				if i%50 == 0 {
					stream.WriteString(req("PING") + req("PK.PREPARE", "ns", key))
					want.WriteString("+PONG\r\n-ERR wrong number of arguments for 'pk.prepare' command\r\n")
				}
			}
			go func() { _, _ = io.WriteString(c.nc, stream.String()) }()
			_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
			won := 0
			for i := range each {
				line, err := c.rd.ReadString('\n')
				if !assertNoError(t, err) {
					return
				}
				switch line {
				case ":1\r\n":
					won++
				case ":0\r\n":
				default:
					t.Errorf("client %d, request %d: %q", cl, i, line)
					return
				}
				if i%50 == 0 {
					for _, w := range []string{"+PONG\r\n", "-ERR wrong number of arguments for 'pk.prepare' command\r\n"} {
						line, err := c.rd.ReadString('\n')
						if !assertNoError(t, err) || line != w {
							t.Errorf("client %d, after request %d: %q, want %q", cl, i, line, w)
							return
						}
					}
				}
			}
			if cl%3 == 0 && won != each {
				t.Errorf("client %d won %d of its own %d keys", cl, won, each)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int32(3), b.accepted.Load(), "one upstream connection per loop")
	b.mu.Lock()
	defer b.mu.Unlock()
	require.Len(t, b.taken, each+clients/3*each, "every key went to the backend")
}

// TestWireHungBackend: a backend that stops answering makes the run wait at
// most the timeout and answer -UNAVAILABLE, while the loop goes on
// answering other clients; a new connection serves again.
func TestWireHungBackend(t *testing.T) {
	b, addr, srv := serveWire(t, Config{}, 300*time.Millisecond)
	a, other := dialLines(t, addr), dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	a.send(req("PK.PREPARE", "ns", "k1", "v"))
	a.expect(":1\r\n")

	b.hang.Store(true)
	began := time.Now()
	a.send(req("PK.PREPARE", "ns", "k2", "v"))
	b.waitTaken(t, "k2") // a's run is at the backend, which will not answer
	other.send(req("PING"))
	other.expect("+PONG\r\n") // not held by a's run
	a.expect("-UNAVAILABLE fake: k2 lost: no answer\r\n")
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond)

	b.hang.Store(false)
	upstreamsReady(t, srv, 1)
	// dialled again (the backend's Accept may return after the loop has the
	// connection)
	require.Eventually(t, func() bool { return b.accepted.Load() == 2 }, 5*time.Second, time.Millisecond)
	a.send(req("PK.PREPARE", "ns", "k3", "v") + req("PK.PREPARE", "ns", "k1", "v"))
	a.expect(":1\r\n")
	a.expect(":0\r\n") // k1 is the backend's, not the fallback's
}

// TestWireSlowBackendAnswers: the timeout measures the backend's silence,
// not how long requests wait behind each other. A backend that answers a
// request every 40 ms, with 20 queued (800 ms for the last), never exceeds
// a 200 ms timeout: every reply is its answer, none -UNAVAILABLE (issue 9:
// a deep pipeline made a healthy Redis look down).
func TestWireSlowBackendAnswers(t *testing.T) {
	b, addr, srv := serveWire(t, Config{}, 200*time.Millisecond)
	a := dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	b.delay.Store(int64(40 * time.Millisecond))
	var pipeline strings.Builder
	for i := range 20 {
		pipeline.WriteString(req("PK.PREPARE", "ns", fmt.Sprint("slow", i), "v"))
	}
	began := time.Now()
	a.send(pipeline.String())
	for range 20 {
		a.expect(":1\r\n")
	}
	require.Greater(t, time.Since(began), 200*time.Millisecond, "the backend took longer than the timeout")
	require.Equal(t, int32(1), b.accepted.Load(), "the connection was never dropped")
}

// TestWireBackendDrops: a run whose connection goes before its reply is
// answered -UNAVAILABLE (it may have run); runs go through Handler.Batch
// until the loop has dialled again.
func TestWireBackendDrops(t *testing.T) {
	b, addr, srv := serveWire(t, Config{}, 5*time.Second)
	a := dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	b.hang.Store(true)
	a.send(req("PK.PREPARE", "ns", "k1", "v"))
	b.waitTaken(t, "k1")
	b.drop()
	a.expect("-UNAVAILABLE fake: k1 lost: read: EOF\r\n")

	b.hang.Store(false)
	upstreamsReady(t, srv, 1)
	a.send(req("PK.PREPARE", "ns", "k1", "v"))
	a.expect(":0\r\n") // it had run
}

// TestWireDownLeavesLoop: while the loop's connection is down (here the
// backend refuses new ones), runs go to Handler.Batch off the loop, so a
// store that waits does not hold other clients.
func TestWireDownLeavesLoop(t *testing.T) {
	b, addr, srv, m := serveWireStore(t, Config{}, 5*time.Second)
	a, other := dialLines(t, addr), dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	require.NoError(t, b.ln.Close())
	b.drop()
	upstreamsAre(t, srv, 1, false)
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	m.holdNext(hold, entered)
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // a failure below must not leave the store held
	a.send(req("PK.PREPARE", "ns", "k", "v"))
	<-entered
	other.send(req("PING"))
	other.expect("+PONG\r\n") // answered while a's run waits at the store
	release()
	a.expect(":1\r\n")
}

// TestWireAgain: a reply asking for the op again sends it through
// Handler.Batch, in its place among the replies.
func TestWireAgain(t *testing.T) {
	_, addr, srv := serveWire(t, Config{}, 5*time.Second)
	a := dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	a.send(req("PK.PREPARE", "ns", "k", "v") + req("PK.PREPARE", "ns", "again", "v") +
		req("PK.PREPARE", "ns", "again", "v") + req("PK.PREPARE", "ns", "err", "v") + req("PK.PREPARE", "ns", "k", "v"))
	a.expect(":1\r\n")
	a.expect(":1\r\n") // the memory store's answer
	a.expect(":0\r\n")
	a.expect("-UNAVAILABLE fake: boom\r\n")
	a.expect(":0\r\n")
}

// TestWireAgainBounded: the ops a reply sends again through
// Handler.Batch (a NOSCRIPT, a scan) are bounded by the store's deadline
// as every batch is: the store held, they are answered -UNAVAILABLE once
// it has been silent that long, in their place, and the connection is
// served again. They once waited on the store with no bound at all.
func TestWireAgainBounded(t *testing.T) {
	_, addr, srv, m := serveWireStore(t, Config{}, 200*time.Millisecond)
	a := dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	hold, entered := make(chan struct{}), make(chan struct{}, 1)
	m.holdNext(hold, entered)
	release := sync.OnceFunc(func() { close(hold) })
	defer release() // a failure below must not leave the store held
	a.send(req("PK.PREPARE", "ns", "k", "v") + req("PK.PREPARE", "ns", "again", "v") + req("PK.PREPARE", "ns", "k", "v"))
	<-entered
	a.expect(":1\r\n")
	a.expect("-UNAVAILABLE no answer within 200ms\r\n")
	a.expect(":0\r\n")
	a.send(req("PING"))
	a.expect("+PONG\r\n")
	m.holdNext(nil, nil)
	release() // the late answer is dropped
	a.send(req("PK.PREPARE", "ns", "again2", "v"))
	a.expect(":1\r\n")
}

// TestWireShutdown: a run on its way to the backend when Shutdown begins
// is answered before its connection closes.
func TestWireShutdown(t *testing.T) {
	b := startLineBackend(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := commands.New(&batchingMemory{Store: memory.New(backend.Options{})}, commands.DefaultLimits, nil)
	srv := New(Config{Drive: backend.DriveWire, Wire: lineWire{addr: b.ln.Addr().String()}, BackendTimeout: 5 * time.Second}, h, readyPinger{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a, idle := dialLines(t, ln.Addr().String()), dialLines(t, ln.Addr().String())
	upstreamsReady(t, srv, 1)
	idle.send(req("PING"))
	idle.expect("+PONG\r\n") // enrolled in its loop
	b.hang.Store(true)
	a.send(req("PK.PREPARE", "ns", "k", "v"))
	b.waitTaken(t, "k")

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	// Shutdown has begun: Serve returned, and Shutdown has woken the
	// connections (it does so under srv.mu, after closing the listener).
	require.ErrorIs(t, <-served, ErrServerClosed)
	srv.mu.Lock()
	require.True(t, srv.closing.Load())
	srv.mu.Unlock()
	// and the idle connection was closed by its loop, which has seen the wake-ups
	_, err = idle.rd.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a run waited for its reply", err)
	default:
	}
	b.mu.Lock()
	nc := b.conns[0]
	b.mu.Unlock()
	_, err = io.WriteString(nc, "1\n") // the late reply
	require.NoError(t, err)
	a.expect(":1\r\n")
	require.NoError(t, <-shut)
	_, err = a.rd.ReadByte()
	require.ErrorIs(t, err, io.EOF)
}

// boundedLineWire is a lineWire that bounds a reply (loopconn.Wire.MaxReply).
type boundedLineWire struct {
	lineWire
	max int
}

func (w boundedLineWire) MaxReply() int { return w.max }

// TestWireReplyBound: a reply that grows past the Wire's MaxReply without
// completing (a backend sending what it should not) closes the loop's
// connection at once, answering its run -UNAVAILABLE … lost, instead of
// buffering it until the timeout; the loop dials again.
func TestWireReplyBound(t *testing.T) {
	b := startLineBackend(t)
	huge := make(chan net.Conn, 1)
	b.hugeReply = huge
	cfg := Config{Drive: backend.DriveWire, Wire: boundedLineWire{lineWire{addr: b.ln.Addr().String()}, 64 << 10}, BackendTimeout: time.Minute}
	m := &batchingMemory{Store: memory.New(backend.Options{})}
	addr, srv := serveServer(t, cfg, commands.New(m, commands.DefaultLimits, nil))
	a := dialLines(t, addr)
	upstreamsReady(t, srv, 1)
	a.send(req("PK.PREPARE", "ns", "huge", "v"))
	a.expect("-UNAVAILABLE fake: huge lost: reply larger than 65536 bytes, or malformed\r\n")
	upstreamsReady(t, srv, 1)
	a.send(req("PK.PREPARE", "ns", "k1", "v"))
	a.expect(":1\r\n")
}
