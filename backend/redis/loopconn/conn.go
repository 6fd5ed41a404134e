//go:build !wasip1

package loopconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/watchdog"
)

// Config is what a Conn is made of.
type Config struct {
	Wire Wire
	// Timeout is the one deadline of the store's submissions (the
	// server's, scheduler.Config.Deadline): how long the backend may be
	// silent while replies are outstanding, and how long a dial may take.
	Timeout time.Duration
	// Loop is the event loop that owns the connection: it is enrolled
	// there, and every method but Close runs there.
	Loop gnet.EventLoop
	// Name tells the connection apart in log lines ("loop-N").
	Name   string
	Logger *slog.Logger
	// Up counts the connections up, across loops (INFO's
	// loop_backend_conns, metrics).
	Up *atomic.Int64
	// Closing reports whether the server is shutting down: a connection
	// lost then is neither logged nor dialled again.
	Closing func() bool
}

// Conn is one loop's connection to a Wire backend. Every field but stop,
// lost and watch is the loop's.
type Conn struct {
	cfg   Config
	gc    gnet.Conn    // nil while there is no connection
	sent  []*sentBatch // batches on the connection, oldest first
	out   []byte
	fault error // why the loop closes gc, for Lost
	stop  chan struct{}
	lost  atomic.Bool // the connection dropped; the next dial logs it regained
	// maxInput bounds a reply not yet complete (Wire.MaxReply): past it
	// (a reply larger than the Wire takes, or one that does not parse: a
	// desynchronized stream) the connection is closed instead of waiting
	// for the timeout.
	maxInput int
	// watch closes a connection whose backend has been silent for the
	// timeout while replies are outstanding (watchdog.Watch): since it last
	// answered, or since it was given a request while none was
	// outstanding. It measures the backend's silence, not the time
	// requests wait behind each other: a backend that answers is never
	// timed out, however many requests wait behind each other (issue 9: a
	// deep pipeline made a healthy Redis look down when the timeout
	// counted from the oldest request's sending).
	watch watchdog.Watch
}

// sentBatch is a batch, or a submission, whose requests are on the
// connection.
type sentBatch struct {
	batch Batch // nil for a submission
	// sub is a submission (Loops.Submit): its results are written into
	// sub.Res, and it is finished (or handed to againFn) when read.
	sub     *backend.Submission
	againFn func(*backend.Submission, []int)
	ops     []backend.Op
	res     []backend.Result
	again   []int // the ops answered "again", and the scans
	read    int   // how many ops have their reply (a prefix: requests answer in order)
	sync    bool  // a Wire.AppendSync request follows the ops, its reply not read yet
	at      time.Time
}

var errNoRequest = errors.New("reply to no request")

// New starts dialling the loop's connection; each connection is watched
// for a backend that goes silent (OnOpen). Close stops both.
func New(cfg Config) *Conn {
	u := &Conn{cfg: cfg, stop: make(chan struct{}), maxInput: cfg.Wire.MaxReply()}
	go u.dial()
	return u
}

// Ready reports whether batches can go on the connection; otherwise they
// go through the store's own client (the wire driver's batch path, which
// fails with the backend's error while it is down).
func (u *Conn) Ready() bool { return u.gc != nil }

// Send writes the requests of b's ops and keeps b as sent. Ready must
// be true.
func (u *Conn) Send(b Batch) {
	f := &sentBatch{batch: b, ops: b.Ops()}
	if len(f.ops) == 0 { // all refused by validation
		u.land(f)
		return
	}
	f.res = make([]backend.Result, len(f.ops))
	u.send(f)
}

// submit writes the requests of sub's ops (at least one), whose results
// go into sub.Res. Ready must be true.
func (u *Conn) submit(sub *backend.Submission, again func(*backend.Submission, []int)) {
	u.send(&sentBatch{sub: sub, againFn: again, ops: sub.Ops, res: sub.Res[:len(sub.Ops)]})
}

// send writes the requests of f's ops and keeps f as sent.
func (u *Conn) send(f *sentBatch) {
	out := u.cfg.Wire.Append(u.out[:0], f.ops)
	out, f.sync = u.cfg.Wire.AppendSync(out, f.ops)
	f.at = time.Now()
	if len(out) == 0 && len(u.sent) == 0 {
		// Only scans, which have no request: no reply to wait for.
		f.readReplies(u.cfg.Wire, nil)
		u.land(f)
		return
	}
	if len(u.sent) == 0 {
		u.watch.Busy(f.at)
	}
	u.sent = append(u.sent, f)
	// gnet writes now, and keeps what the socket does not take; an error
	// closes the connection, and OnClose answers the batch.
	_, _ = u.gc.Write(out)
	if cap(out) > 1<<20 {
		out = nil // do not pin a burst's buffer
	}
	u.out = out
}

// OnOpen: the connection dial enrolled is the loop's now, watched while
// replies are outstanding.
func (u *Conn) OnOpen(gc gnet.Conn) gnet.Action {
	u.gc = gc
	u.watchConn(gc)
	return gnet.None
}

// watchConn watches gc (watch): late runs once the backend may have been
// silent for the timeout while replies are outstanding.
func (u *Conn) watchConn(gc gnet.Conn) {
	select {
	case <-u.stop: // Close came first: nothing is watched after it
		return
	default:
	}
	u.watch.Start(u.cfg.Timeout, func() {
		if u.watch.Expired() {
			u.late(gc)
		}
	})
	if len(u.sent) == 0 {
		u.watch.Idle()
	}
}

// late runs when the watch expired: on the loop, it closes the connection
// if the backend has been silent for the timeout while replies are
// outstanding, and OnClose answers their batches; else (a reply came
// meanwhile) the connection is watched again.
func (u *Conn) late(gc gnet.Conn) {
	_ = u.cfg.Loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		switch {
		case u.gc != gc: // closed meanwhile
		case len(u.sent) > 0 && u.watch.Silent() >= u.cfg.Timeout:
			u.fault = u.cfg.Wire.Late()
			_ = u.cfg.Loop.Close(gc)
		default:
			u.watchConn(gc)
		}
		return nil
	}))
	// An error means the loops are stopping; they close the connection.
}

// OnTraffic reads the replies that have arrived and answers each batch
// that is complete.
func (u *Conn) OnTraffic(gc gnet.Conn) gnet.Action {
	buf, _ := gc.Peek(-1)
	if len(buf) > 0 {
		now := time.Now()
		u.watch.Heard(now)
		// The backend is answering: the submissions behind the one it
		// answers are not timed out for waiting (issue 9).
		for _, f := range u.sent {
			if f.sub != nil {
				f.sub.Heard(now)
			}
		}
	}
	off := 0
	for len(u.sent) > 0 {
		f := u.sent[0]
		n, done := f.readReplies(u.cfg.Wire, buf[off:])
		off += n
		if !done {
			break
		}
		u.sent[0] = nil
		u.sent = u.sent[1:]
		if f.batch != nil {
			f.batch.Stored(len(f.ops), time.Since(f.at))
		}
		u.land(f)
	}
	if off > 0 { // Discard(0) would drop it all
		_, _ = gc.Discard(off)
	}
	switch rest := len(buf) - off; {
	case rest > 0 && len(u.sent) == 0:
		u.fault = errNoRequest
		return gnet.Close
	case rest > u.maxInput:
		u.fault = fmt.Errorf("reply larger than %d bytes, or malformed", u.maxInput)
		return gnet.Close
	}
	if len(u.sent) == 0 {
		u.sent = u.sent[:0:0] // let the answered batches go
		u.watch.Idle()
	}
	return gnet.None
}

// readReplies reads the replies in b for the ops of f still waiting; it
// returns the bytes used and whether f is complete.
func (f *sentBatch) readReplies(w Wire, b []byte) (used int, done bool) {
	for f.read < len(f.ops) {
		if f.ops[f.read].Kind == backend.OpScan {
			// No request on the wire (Wire.Append): it goes through the
			// store's client in its place (Batch.Answer).
			f.again = append(f.again, f.read)
			f.read++
			continue
		}
		n, k, again := w.Read(b[used:], f.ops[f.read:], f.res[f.read:])
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
		n := w.ReadSync(b[used:], f.ops, f.res)
		if n == 0 {
			return used, false
		}
		used += n
		f.sync = false
	}
	return used, true
}

// land hands f's batch its results, and the ops that are to go through
// the store's own client (again); a submission is finished OnLoop, or
// handed to its againFn with those ops.
func (u *Conn) land(f *sentBatch) {
	switch {
	case f.batch != nil:
		f.batch.Answer(f.res, f.again)
	case len(f.again) > 0:
		f.againFn(f.sub, f.again)
	default:
		f.sub.Finish(backend.OnLoop)
	}
}

// OnClose answers the batches still waiting with the failure: their ops
// may or may not have run. A new connection is dialled.
func (u *Conn) OnClose(_ gnet.Conn, err error) {
	cause := u.fault
	if cause == nil {
		cause = err
	}
	if cause == nil {
		cause = errors.New("closed")
	}
	u.gc, u.fault = nil, nil
	u.watch.Claim() // the connection is gone: nothing more to watch
	u.cfg.Up.Add(-1)
	batches := u.sent
	u.sent = nil
	if !u.cfg.Closing() {
		// Every drop is logged with its cause, and how many commands it
		// leaves answered -UNAVAILABLE (they may or may not have run).
		waiting := 0
		for _, f := range batches {
			waiting += len(f.ops) - f.read
		}
		u.lost.Store(true)
		u.cfg.Logger.Warn("backend connection lost", "conn", u.cfg.Name, "err", cause, "unanswered", waiting)
	}
	for _, f := range batches {
		for k := f.read; k < len(f.ops); k++ {
			f.res[k] = backend.Result{Err: u.cfg.Wire.Lost(f.ops[k], cause)}
		}
		if f.sync { // the writes ran, no replica is known to have them
			u.cfg.Wire.FailSync(f.ops, f.res, cause)
		}
		u.land(f)
	}
	if !u.cfg.Closing() {
		go u.dial()
	}
}

// dial connects until it succeeds or the server stops, backing off up to
// a second between tries. Meanwhile batches go through the store's client.
func (u *Conn) dial() {
	var delay time.Duration
	for {
		select {
		case <-u.stop:
			return
		case <-time.After(delay):
		}
		delay = min(max(2*delay, 50*time.Millisecond), time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), u.cfg.Timeout)
		nc, err := u.cfg.Wire.Dial(ctx)
		cancel()
		if err != nil {
			u.cfg.Logger.Debug("backend connection for the event loop", "err", err)
			continue
		}
		// gnet takes over a duplicate of the socket and closes nc. The
		// connection's context is u: package protocol's loop hands u its
		// events.
		registered, err := u.cfg.Loop.Enroll(gnet.NewContext(context.Background(), u), nc)
		if err != nil {
			_ = nc.Close()
			return // the loops are stopping
		}
		if r := <-registered; r.Err == nil {
			u.cfg.Up.Add(1)
			if u.lost.Swap(false) {
				u.cfg.Logger.Info("backend connection regained", "conn", u.cfg.Name)
			}
			return
		}
	}
}

// Close stops dialling and watching; the loops close the connection.
func (u *Conn) Close() {
	close(u.stop)
	u.watch.Claim()
}
