//go:build !wasip1

package loopconn

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/backend"
)

// GnetLoop is a backend.Loop that is a gnet event loop: what a submission
// must come from to be written on a loop's own connection. Package
// protocol/transport's GnetLoop (what the server passes as
// Submission.Loop) implements it.
type GnetLoop interface {
	Gnet() gnet.EventLoop
}

// Options are the Loops' own: what every connection is made with.
type Options struct {
	// Timeout is the one deadline of the store's submissions (the
	// store's Info.Deadline): how long the backend may be silent while
	// replies are outstanding, and how long a dial may take.
	Timeout time.Duration
	Logger  *slog.Logger
}

// Loops are a store's own connections, one per event loop, each made
// (and dialled) on the first submission from its loop: the standalone
// Redis store's way of completing a submission on the loop it comes from
// (package redis: Store.UseLoopConns). The server sees none of it: it
// submits to the store, which writes the submission here, and the loop
// hands the connection its gnet events (its context is the *Conn).
type Loops struct {
	wire  Wire
	opts  Options
	conns sync.Map // gnet.EventLoop → *Conn
	seq   atomic.Int64

	mu      sync.Mutex
	closed  bool
	up      *atomic.Int64
	closing func() bool
	ownUp   atomic.Int64
}

// NewLoops returns the Loops of the store behind w. No connection is made
// until a submission comes from a loop.
func NewLoops(w Wire, opts Options) *Loops {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Loops{wire: w, opts: opts}
	l.up = &l.ownUp
	l.closing = l.isClosed
	return l
}

// Serve gives the Loops the server's: up counts the connections up (INFO's
// loop_backend_conns, stats.Counters.UpstreamsUp), and closing reports
// that the server is shutting down (a connection lost then is neither
// logged nor dialled again). Called before the first submission; without
// it the Loops count their own and close with the store.
func (l *Loops) Serve(up *atomic.Int64, closing func() bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if up != nil {
		l.up = up
	}
	if closing != nil {
		l.closing = func() bool { return closing() || l.isClosed() }
	}
}

func (l *Loops) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// Submit writes sub on its loop's own connection and reports true: the
// connection finishes it OnLoop once its replies are read, or hands it to
// again (on the loop) when some ops are to go through the store's own
// client (a scan, which has no request on the wire; ops answered
// NOSCRIPT): again runs them and finishes sub. It reports false, having
// done nothing, when sub has no gnet loop or no ops, or when the loop's
// connection is not up (it is dialled on the loop's first submission):
// the store takes sub another way. Called on sub.Loop.
func (l *Loops) Submit(sub *backend.Submission, again func(*backend.Submission, []int)) bool {
	gl, ok := sub.Loop.(GnetLoop)
	if !ok || len(sub.Ops) == 0 {
		return false
	}
	el := gl.Gnet()
	c, ok := l.conns.Load(el)
	if !ok {
		l.start(el)
		return false
	}
	u := c.(*Conn)
	if !u.Ready() {
		return false
	}
	u.submit(sub, again)
	return true
}

// start makes el's connection, which dials.
func (l *Loops) start(el gnet.EventLoop) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if _, ok := l.conns.Load(el); ok {
		return
	}
	l.conns.Store(el, New(Config{
		Wire:    l.wire,
		Timeout: l.opts.Timeout,
		Loop:    el,
		Name:    fmt.Sprintf("loop-%d", l.seq.Add(1)),
		Logger:  l.opts.Logger,
		Up:      l.up,
		Closing: l.closing,
	}))
}

// Up is how many connections are up, when the server gave no counter
// (Serve).
func (l *Loops) Up() int64 { return l.ownUp.Load() }

// Close stops every connection's dialling and watching; the loops close
// the connections. Submissions after it take the store's other way.
func (l *Loops) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.conns.Range(func(k, c any) bool {
		c.(*Conn).Close()
		l.conns.Delete(k)
		return true
	})
}
