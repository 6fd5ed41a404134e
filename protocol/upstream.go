//go:build !wasip1

package protocol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
)

// Wire is a backend that an event loop reaches over a connection of its
// own (redis.Wire, for a standalone Redis). The loop writes a batch's
// requests and goes on serving clients; the replies come back as input on
// that connection, on the same loop, and are read in order. So no goroutine
// waits on the backend, and several batches are on their way at once:
// Redis works on one while the loop reads the next requests. Waiting for
// each batch held the loop for the round trip, and the sidecar reached
// only 0.75 of direct EVALSHA's throughput at pipeline 1.
type Wire interface {
	// Dial opens a connection ready for requests.
	Dial(ctx context.Context) (net.Conn, error)
	// Append appends the requests of a batch's ops: one or a few script
	// calls, each running several ops (redis.Wire: block.lua, bounded so
	// that one call holds Redis for at most about a millisecond).
	Append(dst []byte, ops []backend.Op) []byte
	// Read decodes, at the start of b, the reply to the first request that
	// Append wrote for ops, into res[:k]: it answers ops[:k]. n is 0 until b
	// holds a complete reply. again asks for ops[:k] to be run again
	// through Handler.Batch (the backend lost its scripts: none of them
	// ran). Where one request ends must follow from the ops alone, from the
	// first: the loop calls Read with the ops from the first unanswered.
	Read(b []byte, ops []backend.Op, res []backend.Result) (n, k int, again bool)
	// Lost is op's failure when the connection went before its reply.
	Lost(op backend.Op, cause error) error
	// Late is the cause given to Lost when no reply came within Timeout.
	Late() error
	// Timeout is how long a reply may take (--backend-timeout).
	Timeout() time.Duration
}

// WireSync is a Wire whose writes are answered only once replicas have
// them (redis.Wire with ?wait=N): after a batch's requests it sends one
// more (WAIT), on the same connection, whose reply decides the writes'
// outcome.
type WireSync interface {
	// AppendSync appends the request that follows ops' requests; ok is
	// false when none is needed (no write among ops, or no wait set).
	AppendSync(dst []byte, ops []backend.Op) (out []byte, ok bool)
	// ReadSync decodes its reply at the start of b (n is 0 until it is
	// complete) and fails the writes in res that it does not confirm.
	ReadSync(b []byte, ops []backend.Op, res []backend.Result) (n int)
	// FailSync fails the writes in res when the connection went before
	// the reply.
	FailSync(ops []backend.Op, res []backend.Result, cause error)
}

// upstream is one loop's connection to a Wire backend. Every field but
// stop is the loop's.
type upstream struct {
	srv     *Server
	wire    Wire
	loop    gnet.EventLoop
	gc      gnet.Conn // nil while there is no connection
	flights []*flight // sent, oldest first
	out     []byte
	fault   error // why the loop closes gc, for Lost
	stop    chan struct{}
	name    string      // "loop-N", in its log lines
	lost    atomic.Bool // the connection dropped; the next dial logs it regained
	// heard is when the backend last answered, or when it was last given
	// a request while none was outstanding: the timeout measures the
	// backend's silence, not the time requests wait behind each other.
	heard time.Time
}

// flight is a batch whose requests are on the upstream connection.
type flight struct {
	conns   []*conn
	cmds    [][][]byte
	replies []commands.Reply
	calls   commands.Calls
	res     []backend.Result
	again   []int // the ops answered "again"
	read    int   // how many ops have their reply (a prefix: requests answer in order)
	sync    bool  // a WireSync request follows the ops, its reply not read yet
	sent    time.Time
}

// maxUpstreamInput bounds replies that do not parse (a desynchronized
// stream): past it the connection is closed instead of waiting for the
// timeout.
const maxUpstreamInput = 256 << 20

var errNoRequest = errors.New("reply to no request")

func newUpstream(s *Server, w Wire, loop connLoop) *upstream {
	u := &upstream{srv: s, wire: w, loop: loop.(gnetLoop).EventLoop, stop: make(chan struct{}),
		name: fmt.Sprintf("loop-%d", s.stats.upstreamSeq.Add(1))}
	go u.dial()
	go u.watch()
	return u
}

// ready reports whether batches can go on the connection; otherwise they
// go to Handler.Batch (which reaches the backend its own way, and fails
// with the backend's error while it is down).
func (u *upstream) ready() bool { return u != nil && u.gc != nil }

// send writes the requests of conns' runs and keeps them as a flight.
func (u *upstream) send(conns []*conn) {
	cmds := runsOf(conns)
	f := &flight{conns: conns, cmds: cmds, replies: make([]commands.Reply, len(cmds))}
	f.calls = u.srv.handler.Calls(f.cmds, f.replies)
	if len(f.calls.Ops) == 0 { // all refused by validation
		u.land(f)
		return
	}
	f.res = make([]backend.Result, len(f.calls.Ops))
	out := u.wire.Append(u.out[:0], f.calls.Ops)
	if ws, ok := u.wire.(WireSync); ok {
		out, f.sync = ws.AppendSync(out, f.calls.Ops)
	}
	f.sent = time.Now()
	if len(u.flights) == 0 {
		u.heard = f.sent
	}
	u.flights = append(u.flights, f)
	// gnet writes now, and keeps what the socket does not take; an error
	// closes the connection, and onClose answers the flight.
	_, _ = u.gc.Write(out)
	if cap(out) > 1<<20 {
		out = nil // do not pin a burst's buffer
	}
	u.out = out
}

// OnOpen: the connection dial enrolled is the loop's now.
func (u *upstream) OnOpen(gc gnet.Conn) gnet.Action {
	u.gc = gc
	return gnet.None
}

// OnTraffic reads the replies that have arrived (onTraffic).
func (u *upstream) OnTraffic(gc gnet.Conn) gnet.Action {
	if u.onTraffic(gc) {
		return gnet.Close
	}
	return gnet.None
}

// OnClose answers what waits on the connection (onClose).
func (u *upstream) OnClose(_ gnet.Conn, err error) { u.onClose(err) }

// onTraffic reads the replies that have arrived and answers each flight
// that is complete. It reports whether to close the connection.
func (u *upstream) onTraffic(gc gnet.Conn) (closeIt bool) {
	buf, _ := gc.Peek(-1)
	if len(buf) > 0 {
		u.heard = time.Now()
	}
	off := 0
	for len(u.flights) > 0 {
		f := u.flights[0]
		n, done := f.readReplies(u.wire, buf[off:])
		off += n
		if !done {
			break
		}
		u.flights[0] = nil
		u.flights = u.flights[1:]
		recordStoreCall(f.conns[0].stats, len(f.calls.Ops), time.Since(f.sent))
		u.land(f)
	}
	if off > 0 { // Discard(0) would drop it all
		_, _ = gc.Discard(off)
	}
	switch rest := len(buf) - off; {
	case rest > 0 && len(u.flights) == 0:
		u.fault = errNoRequest
		return true
	case rest > maxUpstreamInput:
		u.fault = errors.New("reply too large or malformed")
		return true
	}
	if len(u.flights) == 0 {
		u.flights = u.flights[:0:0] // let the answered flights go
	}
	return false
}

// readReplies reads the replies in b for the ops of f still waiting; it
// returns the bytes used and whether f is complete.
func (f *flight) readReplies(w Wire, b []byte) (used int, done bool) {
	for f.read < len(f.calls.Ops) {
		n, k, again := w.Read(b[used:], f.calls.Ops[f.read:], f.res[f.read:])
		if n == 0 {
			return used, false
		}
		used += n
		if again {
			for j := f.read; j < f.read+k; j++ {
				f.again = append(f.again, j)
			}
		}
		f.read += k
	}
	if f.sync {
		n := w.(WireSync).ReadSync(b[used:], f.calls.Ops, f.res)
		if n == 0 {
			return used, false
		}
		used += n
		f.sync = false
	}
	return used, true
}

// land writes f's replies to its connections and resumes them. The ops
// answered "again" (the backend lost its scripts) go through
// Handler.Batch first, which loads the scripts again; that waits on the
// backend, so it happens on a goroutine, and the flight's replies are
// written when it is done, in order.
func (u *upstream) land(f *flight) {
	f.calls.Answer(f.res, f.replies)
	if len(f.again) == 0 {
		f.deliver()
		return
	}
	go func() {
		cmds := make([][][]byte, len(f.again))
		replies := make([]commands.Reply, len(f.again))
		for j, k := range f.again {
			cmds[j] = f.cmds[f.calls.Index(k)]
		}
		u.srv.handler.Batch(context.Background(), cmds, replies)
		for j, k := range f.again {
			f.replies[f.calls.Index(k)] = replies[j]
		}
		_ = u.loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
			f.deliver()
			return nil
		}))
		// An error means the loops are stopping; they close the connections.
	}()
}

// deliver writes f's replies to its connections' output and resumes them.
func (f *flight) deliver() {
	writeReplies(f.conns, f.replies)
	resumeAll(f.conns)
}

// onClose answers the flights still waiting with the failure: their ops
// may or may not have run. A new connection is dialled.
func (u *upstream) onClose(err error) {
	cause := u.fault
	if cause == nil {
		cause = err
	}
	if cause == nil {
		cause = errors.New("closed")
	}
	u.gc, u.fault = nil, nil
	u.srv.stats.upstreamsUp.Add(-1)
	flights := u.flights
	u.flights = nil
	if !u.srv.closing.Load() {
		// Every drop is logged with its cause, and how many commands it
		// leaves answered -UNAVAILABLE (they may or may not have run).
		waiting := 0
		for _, f := range flights {
			waiting += len(f.calls.Ops) - f.read
		}
		u.lost.Store(true)
		u.srv.cfg.Logger.Warn("backend connection lost", "conn", u.name, "err", cause, "unanswered", waiting)
	}
	for _, f := range flights {
		for k := f.read; k < len(f.calls.Ops); k++ {
			f.res[k] = backend.Result{Err: u.wire.Lost(f.calls.Ops[k], cause)}
		}
		if f.sync { // the writes ran, no replica is known to have them
			u.wire.(WireSync).FailSync(f.calls.Ops, f.res, cause)
		}
		u.land(f)
	}
	if !u.srv.closing.Load() {
		go u.dial()
	}
}

// dial connects until it succeeds or the server stops, backing off up to
// a second between tries. Meanwhile batches go through Handler.Batch.
func (u *upstream) dial() {
	var delay time.Duration
	for {
		select {
		case <-u.stop:
			return
		case <-time.After(delay):
		}
		delay = min(max(2*delay, 50*time.Millisecond), time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), u.wire.Timeout())
		nc, err := u.wire.Dial(ctx)
		cancel()
		if err != nil {
			u.srv.cfg.Logger.Debug("backend connection for the event loop", "err", err)
			continue
		}
		// gnet takes over a duplicate of the socket and closes nc.
		registered, err := u.loop.Enroll(gnet.NewContext(context.Background(), u), nc)
		if err != nil {
			_ = nc.Close()
			return // the loops are stopping
		}
		if r := <-registered; r.Err == nil {
			u.srv.stats.upstreamsUp.Add(1)
			if u.lost.Swap(false) {
				u.srv.cfg.Logger.Info("backend connection regained", "conn", u.name)
			}
			return
		}
	}
}

// watch closes a connection whose backend has been silent for longer than
// the timeout while replies are outstanding: it hangs, or the stream cannot
// be read. A backend that answers is never timed out, however many requests
// wait behind each other (issue 9: a deep pipeline made a healthy Redis
// look down when the timeout counted from the oldest request's sending).
func (u *upstream) watch() {
	t := time.NewTicker(max(u.wire.Timeout()/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-u.stop:
			return
		case <-t.C:
			_ = u.loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
				if u.gc != nil && len(u.flights) > 0 && time.Since(u.heard) > u.wire.Timeout() {
					u.fault = u.wire.Late()
					_ = u.loop.Close(u.gc)
				}
				return nil
			}))
		}
	}
}

func (u *upstream) close() { close(u.stop) }
