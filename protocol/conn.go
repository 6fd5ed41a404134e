package protocol

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/conncmd"
	"github.com/prepkey/prepkey/protocol/floodlog"
	"github.com/prepkey/prepkey/protocol/resp"
	"github.com/prepkey/prepkey/protocol/scheduler"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// conn is one client connection. It lives on its event loop: every field is
// touched only there. While the connection is at the store (st), out and
// runArgs belong to the store work under way (its loop's job, or a
// goroutine's: offload).
type conn struct {
	srv     *Server
	gc      transport.IO    // gnet's Conn, or the portable transport's (package transport)
	loop    transport.Loop  // the connection's event loop
	sch     *scheduler.Loop // how its runs reach the store (package scheduler)
	inline  bool            // PK commands are answered on the loop (Scheduler.AtOnce)
	one     *oneSub         // the submission of a PK command answered on the loop
	guard   resp.FramingGuard
	scanned int // bytes of gnet's input buffer the guard has seen
	out     resp.Writer
	id      int64
	authed  bool
	st      connState // its phase and whether it is read (conn_state.go)
	tx      tx        // between MULTI and EXEC (transaction.go)

	active time.Time // when the client last sent something (IdleTimeout)

	// refused is the guard's protocol error, answered once the requests
	// before refusedAt (in gnet's input buffer) are.
	refused   string
	refusedAt int

	// What CLIENT LIST shows of the connection (conncmd_env.go): meta
	// changes under metaMu, since another loop may read it; the socket's
	// are set once, before the handle is published.
	addr, laddr string
	fd          int
	unix        bool
	metaMu      sync.Mutex
	meta        conncmd.Meta // what the client says of itself: name, library, protocol
	created     int64        // Unix seconds
	lastInput   atomic.Int64 // Unix seconds of the last input

	backlog bool       // backlogAt of replies written in this serve, or left unsent: it yields (flushFull)
	wrote   int        // bytes of replies this serve wrote by flushFull
	wide    int        // a window that takes in the large request at the front
	epfd    int        // the loop's epoll descriptor, where it can stop reading (st.reading)
	argsBuf [][]byte   // reused by the parser
	runRaw  []byte     // the arguments of the run at the store, copied out of gnet's buffer
	runFlat [][]byte   // those arguments, one after the other
	runArgs [][][]byte // the run's commands, each a slice of runFlat
	bigRun  bool       // the run is an assembled request (runBig): let it go when answered

	// asm takes in a large request as it arrives, out of gnet's buffer
	// (assembleAt); big is such a request, complete, parked until the
	// loop has room for it.
	asm resp.Assembler
	big [][]byte
	// win is the window a pass of serveAt looks at (window), reused.
	win input

	// Counting for INFO and metrics (counting.go, package stats): the
	// loop's counters, when the current read began, the commands answered
	// since (and how many the loop answered), counted at once when their
	// replies are written.
	stats    *stats.Loop
	began    time.Time
	notes    []pendingNote
	answered int64
	lastName []byte
	lastIdx  int

	// handle is the connection for other goroutines (Shutdown wakes it);
	// it is set under Server.mu once the loop has opened the connection.
	handle transport.Handle

	// mem is what the connection held when it last counted (account,
	// clientmem.go), in the server's total; evicting is set once it is
	// chosen to be closed for the bound on that total. Both are read by
	// the loop that evicts, under Server.mu.
	mem      atomic.Int64
	evicting atomic.Bool
}

// Limits on what one connection may hold in memory. Requests are bounded by
// the guard; these bound a client that sends without reading replies, or
// floods while its previous run is at the store. Past them the connection is
// closed, as Redis does at client-output-buffer-limit and
// client-query-buffer-limit.
const (
	maxOutbound     = 64 << 20
	minInboundLimit = 64 << 20
)

// Bounds on the work one connection has under way, so that the memory a
// deep pipeline takes is proportional to them, not to the pipeline (issue
// 9: a million PK.PREPAREs in one write held 1.07 GB as one run, at about
// 1.5-2 KB per command waiting). What the client sends beyond them stays
// in gnet's input buffer, unparsed, at its wire size.
const (
	// maxRunCmds and maxRunBytes bound a run: the commands of one
	// connection at the store at once. A run takes at least one command.
	maxRunCmds  = 1024
	maxRunBytes = 1 << 20
	// maxServe bounds the commands one serve answers before the loop
	// turns to other connections (those answered on the loop).
	maxServe = 128
	// pauseAt is how much unread input a connection may have while its
	// earlier commands are being answered: past it the loop stops reading
	// it until that input is served (flow).
	pauseAt = 1 << 20
	// peekWindow is how much input serve looks at at once; a request
	// larger than it widens the window to take it in (one that is not
	// assembled: an inline request).
	peekWindow = 2 << 20
	// assembleAt is how much of a multibulk request may wait in gnet's
	// buffer, incomplete, before the rest is taken in by the assembler
	// (resp.Assembler) as it arrives: each read of it is then copied once
	// and its arguments are the request's only copy. Below it a request
	// is parsed again at each read, as before, at most a few times
	// (gnet reads 64 KiB at a time). Issue 23, N1: a PK.MPREPARE of
	// 64 x 1 MiB took 9-18 s of the loop and 2.3 GB, copied and parsed
	// again from its start at each of its 1,024 reads.
	assembleAt = 256 << 10
)

func newConn(s *Server) *conn {
	c := &conn{srv: s, id: s.nextID.Add(1), authed: s.cfg.Password == "", created: time.Now().Unix(), lastIdx: -1}
	c.lastInput.Store(c.created)
	c.guard = resp.NewFramingGuard(c.limits)
	return c
}

func (c *conn) limits() resp.Limits {
	if !c.authed {
		return resp.Limits{MaxArgs: resp.PreAuthMaxArgs, MaxBulk: resp.PreAuthMaxBulk, MaxRequest: resp.PreAuthMaxRequest, PreAuth: true}
	}
	return resp.Limits{MaxArgs: c.srv.cfg.MaxArgs, MaxBulk: c.srv.cfg.MaxBulk}
}

// open sets the connection up on its loop, before it is read. What CLIENT
// LIST shows of the socket is read here, on the loop: gnet clears it at
// close. The handle is set here too, before the connection is served
// (Serve sets it once enrolling returns), for CLIENT LIST and KILL; both
// are published under the lock.
func (c *conn) open(io transport.IO, loop transport.Loop, h transport.Handle, fd int) {
	c.gc, c.loop, c.active = io, loop, time.Now()
	local := io.LocalAddr()
	c.addr, c.laddr, c.fd = transport.AddrString(io.RemoteAddr()), transport.AddrString(local), fd
	c.unix = local != nil && local.Network() == "unix"
	c.srv.mu.Lock()
	c.handle = h
	c.srv.mu.Unlock()
}

// Open sets the connection up on the portable transport (transport.Served).
func (c *conn) Open(io transport.IO, loop transport.Loop, h transport.Handle, fd int) {
	c.open(io, loop, h, fd)
	// One set of counters for all (they are atomic): one a connection
	// would grow with every connection ever served.
	c.stats = c.srv.stats.ForLoop(nil)
	c.useScheduler(c.srv.sched.For(nil)) // no loop of its own to wait on a job
}

// Traffic is traffic, for the portable transport (transport.Served).
func (c *conn) Traffic() (closeIt bool) { return c.traffic() }

// Closed is the connection's last event: late results for it are dropped;
// the server forgets it.
func (c *conn) Closed() {
	c.st.close()
	c.endTx()    // a transaction left open releases what it queued
	c.released() // and what it held in buffers (clientmem.go)
	c.srv.forget(c)
}

// Holding reports whether the portable transport is to stop reading the
// connection: it has pauseAt of input waiting behind commands being
// answered, as flow stops epoll from reading it on gnet's loops.
func (c *conn) Holding(inbound int) bool {
	return c.st.behind() && inbound >= pauseAt
}

// traffic is the loop's turn on the connection: input has arrived, or it
// was woken. It reports whether the connection is to be closed.
func (c *conn) traffic() (closeIt bool) {
	c.active = c.srv.now()
	c.lastInput.Store(c.active.Unix())
	c.readByGnet()
	if c.st.phase == draining { // its input is no longer read (closeWhenWritten)
		_, _ = c.gc.Discard(c.gc.InboundBuffered())
		c.stopReading()
		return false
	}
	if c.st.waitsOnStore() {
		// Input waits in the input buffer until the run is back, or the
		// loop has room for it: up to pauseAt, where flow stops reading
		// it. Where it cannot, the inbound limit bounds it.
		if c.gc.InboundBuffered() > max(minInboundLimit, 2*c.srv.cfg.MaxBulk) {
			c.srv.flood.Log(floodlog.InputFlood, slog.LevelWarn, "closing a client that floods while its commands wait on the store", "id", c.id)
			return true
		}
		if c.account() {
			return true
		}
		c.flow()
		return false
	}
	if c.serveAt(c.active) {
		return true
	}
	c.flow()
	return false
}

// serve answers the commands in what the connection has received, in
// order, parsing them in place in gnet's buffer, until all are answered, a
// run waits on the store, or the connection has had its turn (maxServe).
// It writes the replies and reports whether the connection is to be
// closed.
//
// It reads the clock only when there is something to answer: a connection
// resumed after its run came back from the store (Redis) has, at pipeline
// 1, no input left, and the reading was one of a request's four calls to
// the host on WebAssembly (issue 34).
func (c *conn) serve() (closeIt bool) {
	began := c.began // unused: nothing is answered
	if c.gc.InboundBuffered() > 0 || c.asm.On() || c.big != nil {
		began = c.srv.now()
	}
	return c.serveAt(began)
}

// serveAt is serve of input that was there at began (traffic's reading of
// the clock serves for the latencies too). Each pass looks at a window of
// the input and answers what it holds, or takes in the large request being
// assembled; a pass ends the serve, or has the input looked at again.
func (c *conn) serveAt(began time.Time) (closeIt bool) {
	c.began, c.wrote, c.backlog = began, 0, false
	// What it answered is counted on every way out, a close included (a
	// way out that wrote the replies has counted them already).
	defer c.flushNotes()
	served := 0 // commands answered, against maxServe
	in := &c.win
	for {
		c.window(in)
		var next pass
		if c.asm.On() || c.big != nil {
			next = c.passLarge(in, &served)
		} else {
			next = c.passRequests(in, &served)
		}
		switch next {
		case passEnd:
			return c.endServe()
		case passLeave:
			return false
		case passClose:
			return true
		}
	}
}

// pass is how one pass of serveAt over the input ends.
type pass uint8

const (
	passAgain pass = iota // look at the input again: more is past the window, or the limits changed
	passEnd               // the serve ends: its replies are written (endServe)
	passLeave             // the serve ends as it is: a run went to the store (out is its), or it drains
	passClose             // the serve ends, and the connection is closed
)

// closeOr is the pass that ends a serve with closeIt (fail's answer).
func closeOr(closeIt bool) pass {
	if closeIt {
		return passClose
	}
	return passLeave
}

// input is the window of the connection's input that one pass looks at.
type input struct {
	buf       []byte
	truncated bool // the input goes on past buf
	off       int  // how much of buf is answered (or taken in): discarded after the pass
	more      bool // the pass ended at the window's end: the rest is to be looked at
}

// window is the input a pass looks at, scanned by the framing guard and
// cut at a refusal. It is a window of the input: gnet copies what it peeks
// when the input is split (its ring buffer wraps, or a read is appended),
// and a deep pipeline's megabytes were copied at every run.
//
// It fills *in (the connection's, reused) field by field: an input made
// and returned was zeroed twice and copied, about a dozen calls of
// memmove per turn on WebAssembly (commands' setOp says why).
func (c *conn) window(in *input) {
	total := c.gc.InboundBuffered()
	buf, _ := c.gc.Peek(min(total, max(peekWindow, c.wide)))
	in.buf, in.truncated, in.off, in.more = buf, len(buf) < total, 0, false
	if c.scanned > 0 || c.asm.On() || c.big != nil {
		// The guard is inside a request (one that was incomplete, or is
		// being assembled): it goes on over the bytes that arrived.
		// Otherwise it is at the request the parse is at, and the parse
		// checks the framing in its own pass (next).
		c.scan(buf)
	}
	if c.refused != "" && c.refusedAt <= len(buf) {
		// (a refusal found in a wider window is further on)
		in.buf, in.truncated = buf[:c.refusedAt], false
	}
}

// scan has the guard check the framing of the bytes of buf it has not
// seen. Framing limits are checked on bytes as they arrive, before the
// request they are in is parsed. The complete requests before a refusal
// are answered first, as Redis does; nothing after it is read.
func (c *conn) scan(buf []byte) {
	if c.refused != "" || c.scanned >= len(buf) {
		return
	}
	if msg, at := c.guard.Scan(buf[c.scanned:]); msg != "" {
		c.refused, c.refusedAt = msg, c.scanned+at
	}
	c.scanned = len(buf)
}

// next parses the request at off in the window. Where the guard has not
// seen it, a complete request of the plain form is checked and parsed in
// one pass (FramingGuard.Parse); any other has the guard scan the rest of
// the window first, which cuts it at a refusal, then is parsed by
// ReadCommand, as before. A request is parsed only once the guard has
// passed it, so every limit holds before its bytes are read as arguments.
func (c *conn) next(in *input, off int) (complete bool, args [][]byte, end int, err error) {
	if off == c.scanned && c.refused == "" {
		if args, n, ok := c.guard.Parse(in.buf[off:], c.argsBuf); ok {
			c.scanned = off + n
			return true, args, off + n, nil
		}
		c.scan(in.buf)
		if c.refused != "" && c.refusedAt <= len(in.buf) {
			in.buf, in.truncated = in.buf[:c.refusedAt], false
		}
	}
	complete, args, rest, err := resp.ReadCommand(in.buf[off:], c.argsBuf)
	return complete, args, len(in.buf) - len(rest), err
}

// passLarge goes on with the large request being taken in (serveBig).
func (c *conn) passLarge(in *input, served *int) pass {
	step, closeIt := c.serveBig(in.buf)
	switch step {
	case bigStopped:
		return closeOr(closeIt)
	case bigMore:
		if in.truncated {
			return passAgain // the rest of the window's input is its too
		}
		return passEnd
	case bigParked:
		return passEnd
	}
	*served++
	switch {
	case c.st.atStore():
		return passLeave
	case c.st.answering():
		return passAgain // what came after it
	}
	return passEnd
}

// passRequests answers the requests in the window, then discards them from
// gnet's buffer.
func (c *conn) passRequests(in *input, served *int) pass {
	if next, stopped := c.answerRequests(in, served); stopped {
		return next // the input is left as it is: the connection closes, or drains
	}
	c.discard(in.off)
	switch {
	case c.st.atStore():
		return passLeave // flushed when it went to the store; out is not the loop's now
	case !c.st.answering(): // parked, or it quits
		return passEnd
	case in.more:
		return passAgain
	case c.refused != "":
		return c.passRefused()
	}
	return passEnd
}

// passRefused ends the serve at the guard's refusal, once every request
// before the refused framing is answered.
func (c *conn) passRefused() pass {
	if c.guard.PreAuth && c.authed {
		// An AUTH among them lifted the limits that refused it: the rest
		// is scanned again, from the request it begins with.
		c.guard = resp.NewFramingGuard(c.limits)
		c.refused, c.scanned = "", 0
		return passAgain
	}
	return closeOr(c.fail(c.refused))
}

// discard drops n bytes of answered input from gnet's buffer.
func (c *conn) discard(n int) {
	if n == 0 {
		return // Discard(0) would drop it all
	}
	_, _ = c.gc.Discard(n)
	c.scanned -= n
	c.refusedAt -= n
}

// answerRequests answers the complete requests in the window, in order,
// while the connection is served: until the window's end, a run goes to
// the store, the connection parks, quits or has had its turn (maxServe),
// or a request is incomplete. stopped is set when the serve ends at once
// (next): a protocol error, or a close.
func (c *conn) answerRequests(in *input, served *int) (next pass, stopped bool) {
	for c.st.answering() {
		if in.off == len(in.buf) {
			in.more = in.truncated // the rest is past the window
			return
		}
		if (*served >= maxServe || c.backlog) && c.authed {
			// Others' turn: the rest is served once the loop has gone
			// round the connections that are ready.
			c.yield(c.backlog)
			c.backlog = false
			return
		}
		complete, args, end, err := c.next(in, in.off)
		if err != nil {
			return closeOr(c.fail(strings.TrimPrefix(err.Error(), "Protocol error: "))), true
		}
		if !complete {
			return c.incomplete(in)
		}
		start := in.off
		in.off = end
		c.argsBuf = args[:0]
		c.wide = 0 // the large request at the front, if any, is read
		if len(args) > 0 && crossProtocol(args[0]) {
			c.refuseCrossProtocol()
			return passClose, true
		}
		*served++
		switch {
		case len(args) == 0: // an empty line or *0: nothing to answer
		case c.tx.on:
			at, errs := len(c.out.B), c.out.Errs
			c.queue(args)
			c.noteQueued(args[0], at, errs)
		case c.batched(args[0]):
			if !c.sch.Admit(c) {
				// The loop has enough at the store: this connection
				// waits, parked, its input unread, until some is
				// answered.
				in.off = start
				return
			}
			c.runRaw, c.runFlat, c.runArgs = c.runRaw[:0], c.runFlat[:0], c.runArgs[:0]
			c.keep(args)
			in.off = c.extendRun(in, in.off)
			c.toStore()
		default:
			c.dispatch(args)
		}
		if c.flushFull() {
			return passClose, true
		}
	}
	return
}

// incomplete is answerRequests at a request that the window does not hold
// whole: a large multibulk one is taken in by the assembler as it arrives
// (serveBig); one past the window widens it.
func (c *conn) incomplete(in *input) (next pass, stopped bool) {
	rest := in.buf[in.off:]
	if len(rest) >= assembleAt && rest[0] == '*' && c.refused == "" {
		c.asm.Start()
		if _, _, msg := c.asm.Feed(rest); msg != "" {
			c.asm.Reset()
			return closeOr(c.fail(msg)), true
		}
		c.wide, in.off, in.more = 0, len(in.buf), in.truncated
		return
	}
	if in.truncated {
		// A request larger than what is left of the window: the window
		// takes it in until it is served.
		c.wide, in.more = 2*len(rest)+peekWindow, true
	}
	return
}

// flushFull writes the replies once they are flushAt long, and reports
// whether the connection is then to be closed for leaving them unread. A
// connection at the store is left alone: its out is the store work's.
//
// A connection that has written backlogAt of replies in this serve, or
// whose replies gnet still holds past it, then has had its turn (backlog):
// a client that does not read cannot have the loop build megabytes of its
// replies while others wait (issue 30: 50 such clients pipelining PK.GET
// of 64 KiB held PING for seconds).
func (c *conn) flushFull() (closeIt bool) {
	if c.st.atStore() || len(c.out.B) < flushAt {
		return false
	}
	c.wrote += len(c.out.B)
	closeIt = c.flushUnread()
	c.backlog = c.wrote >= backlogAt || c.gc.OutboundBuffered() >= backlogAt
	return closeIt
}

// backlogAt is how many bytes of replies one serve may write, and gnet
// hold unsent (the client's socket full), before the connection yields its
// turn after each flushAt of replies. The first bound keeps the loop's
// rounds short while the kernel's socket buffers (megabytes on loopback)
// take a client's replies; the second, once they are full.
const backlogAt = 1 << 20

// flushUnread writes the replies and reports whether the connection is to
// be closed for leaving them unread.
func (c *conn) flushUnread() bool {
	c.flush()
	return c.unread()
}

// endServe ends a serve that left nothing at the store: it writes the replies and
// reports whether the connection is to be closed.
func (c *conn) endServe() (closeIt bool) {
	c.flush()
	c.flushNotes()
	if c.unread() {
		return true
	}
	return c.st.quit || c.srv.closing.Load()
}

// bigStep is where serveBig leaves a large request.
type bigStep uint8

const (
	bigRan     bigStep = iota // it was answered, queued or sent to the store
	bigMore                   // all the input was taken in; the rest is to come
	bigParked                 // it waits for its loop's room
	bigStopped                // the connection is to be closed, or closes (closeIt)
)

// serveBig goes on with a large request (assembleAt): it takes in what buf
// holds of it and, once it is complete, runs it.
func (c *conn) serveBig(buf []byte) (step bigStep, closeIt bool) {
	if c.big == nil {
		n, done, msg := c.asm.Feed(buf)
		c.discard(n)
		if msg != "" {
			c.asm.Reset()
			return bigStopped, c.fail(msg)
		}
		if !done {
			if c.refused != "" && c.refusedAt <= 0 {
				// The guard refused its framing: it is answered so.
				c.asm.Reset()
				return bigStopped, c.fail(c.refused)
			}
			return bigMore, false
		}
		c.big = c.asm.Take()
	}
	args := c.big
	c.big = nil
	switch {
	case len(args) == 0: // *0: nothing to answer
	case crossProtocol(args[0]):
		c.refuseCrossProtocol()
		return bigStopped, true
	case c.tx.on:
		at, errs := len(c.out.B), c.out.Errs
		c.queue(args)
		c.noteQueued(args[0], at, errs)
	case c.authed && c.srv.handler.IsPK(args[0]):
		// A run even where PK commands are answered on the loop (a
		// store that finishes at once): the store takes a submission
		// of megabytes elsewhere (memory:), so that other clients do
		// not wait on it. The connection is at the store meanwhile, so
		// its replies keep their order.
		if !c.sch.Admit(c) {
			c.big = args
			return bigParked, false
		}
		// The arguments are the assembler's copy, the request's only
		// one: the run is that command alone, and keeps no copy.
		c.runRaw, c.runFlat, c.runArgs, c.bigRun = nil, nil, [][][]byte{args}, true
		c.toStore()
	default:
		c.dispatch(args)
	}
	if c.flushFull() {
		return bigStopped, true
	}
	return bigRan, false
}

// flushAt is how many bytes of replies serve builds before it writes them:
// so a long pipeline's replies never wait in out, only in gnet's buffer,
// which unread bounds.
const flushAt = 64 << 10

// unread reports whether the connection leaves more replies unread than it
// may (resp.PreAuthMaxOutput before AUTH, maxOutbound after), and logs why it
// is closed; or whether it is closed for the bound on what all connections
// hold (account).
func (c *conn) unread() bool {
	limit, why := maxOutbound, "closing a client that does not read its replies"
	if !c.authed {
		limit, why = resp.PreAuthMaxOutput, "closing a client that does not read its replies before AUTH"
	}
	if n := c.gc.OutboundBuffered(); n > limit {
		c.srv.flood.Log(floodlog.Unread, slog.LevelWarn, why, "id", c.id, "buffered", n, "limit", limit)
		return true
	}
	return c.account()
}

// crossProtocol reports whether name is the first word of an HTTP request
// line or header that a browser sends (POST, Host:). A web page can make a
// browser send to the sidecar's port; Redis closes such connections at once
// (securityWarningCommand), as the sidecar does, rather than run the RESP
// commands that an HTTP body may carry.
//
// The lengths are looked at first: the two EqualFolds on every command were
// 95 of a PK.PREPARE's 9,300 instructions on memory: at pipeline 1.
func crossProtocol(name []byte) bool {
	return len(name) == 4 && bytes.EqualFold(name, []byte("post")) ||
		len(name) >= 5 && name[4] == ':' && bytes.EqualFold(name[:5], []byte("host:"))
}

// refuseCrossProtocol drops the replies not yet written, so that nothing
// more reaches a browser, and logs why the connection is closed, through
// the flood log: a web page can have browsers send it at will.
func (c *conn) refuseCrossProtocol() {
	c.srv.flood.Log(floodlog.CrossProtocol, slog.LevelWarn, "possible cross-protocol attack: a client sent "+
		"an HTTP request (POST or Host:); connection closed, nothing it sent is run",
		"id", c.id, "addr", c.gc.RemoteAddr().String())
	c.out.B = c.out.B[:0]
}

// fail answers a protocol error and has the connection closed, as Redis
// does.
func (c *conn) fail(msg string) bool {
	c.srv.flood.Log(floodlog.ProtocolError, slog.LevelInfo, "closing a client after a protocol error", "id", c.id, "err", msg)
	c.out.Failf(commands.ErrProtocol, msg)
	c.flush()
	if c.gc.OutboundBuffered() == 0 {
		return true
	}
	// At a close the replies pending are written only as far as the
	// socket takes them then: those before the error would lose their
	// end. Redis writes them all, then closes (CLIENT_CLOSE_AFTER_REPLY).
	c.closeWhenWritten()
	return false
}

// closeWhenWritten reads nothing more from the connection and closes it
// once its pending replies are written, or after drainFor.
func (c *conn) closeWhenWritten() {
	c.st.drain()
	c.stopReading()
	deadline := time.Now().Add(drainFor)
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		done := make(chan bool, 1)
		for range t.C {
			err := c.loop.Later(func() {
				switch {
				case c.st.phase == closed:
					done <- true
				case c.gc.OutboundBuffered() == 0 || time.Now().After(deadline):
					c.loop.CloseConn(c.gc)
					done <- true
				default:
					done <- false
				}
			})
			if err != nil || <-done {
				return // closed, or the loops are stopping
			}
		}
	}()
}

// drainFor bounds how long a connection closed after a protocol error may
// take to read the replies before it.
const drainFor = 10 * time.Second

// flush writes the replies built so far. gnet copies what the socket does
// not take and sends it when the socket is writable.
func (c *conn) flush() {
	if len(c.out.B) == 0 {
		return
	}
	_, _ = c.gc.Write(c.out.B)
	if cap(c.out.B) > 1<<20 {
		c.out.B = nil // do not pin a burst's buffer for the connection's life
	}
	c.out.B = c.out.B[:0]
}

// batched reports whether the command named name goes to the store in a
// run: a PK command after AUTH (before it, dispatch refuses it), unless
// the store finishes at once (inline): then dispatch submits it itself
// calls directly.
func (c *conn) batched(name []byte) bool {
	return c.authed && !c.inline && c.srv.handler.IsPK(name)
}

// extendRun adds to the run the complete PK commands that follow it in the
// window from off; it returns where the run ends.
func (c *conn) extendRun(in *input, off int) int {
	for off < len(in.buf) && len(c.runArgs) < maxRunCmds && len(c.runRaw) < maxRunBytes {
		complete, args, end, err := c.next(in, off)
		if err != nil || !complete || len(args) == 0 || !c.srv.handler.IsPK(args[0]) {
			break
		}
		c.argsBuf = args[:0]
		c.keep(args)
		off = end
	}
	return off
}

// keep adds a command to the run, copying its arguments out of gnet's
// buffer, which the loop reuses once it reads again. An argument's slice
// stays valid when a later append moves runRaw or runFlat.
func (c *conn) keep(args [][]byte) {
	from := len(c.runFlat)
	for _, a := range args {
		at := len(c.runRaw)
		c.runRaw = append(c.runRaw, a...)
		c.runFlat = append(c.runFlat, c.runRaw[at:len(c.runRaw):len(c.runRaw)])
	}
	n := len(c.runFlat)
	c.runArgs = append(c.runArgs, c.runFlat[from:n:n])
}

// toStore sends the run (runArgs) to the store, through the connection's
// loop's scheduling: with other connections' runs, or on its own.
func (c *conn) toStore() {
	c.srv.processed.Add(int64(len(c.runArgs)))
	c.goBusy(len(c.runArgs))
	c.sch.Submit(c)
}

// useScheduler sets how the connection's runs reach the store (OnOpen,
// Open), and readies its submission of one command (answerPK).
func (c *conn) useScheduler(l *scheduler.Loop) {
	c.sch, c.inline = l, c.srv.sched.AtOnce()
	c.one = newOneSub(c.srv.deadline, c.loop)
}

// offload runs work that may wait on the backend on a goroutine, so that
// the loop goes on serving other connections, then resumes the connection
// on its loop. work may write replies to out: the loop leaves a connection
// at the store alone.
func (c *conn) offload(work func()) {
	c.goBusy(0)
	go func() {
		work()
		c.resumeLater()
	}()
}

// goBusy hands the connection to store work, inRun commands of its run
// (its loop counts them, Landed): the replies so far are written first,
// since out then belongs to that work until resume.
func (c *conn) goBusy(inRun int) {
	c.flush()
	c.account() // closed through its handle if it is the one to evict
	c.flushNotes()
	c.st.toStore(inRun)
}

// resumeLater asks the connection's loop to resume it; called off the loop
// when its work is done.
func (c *conn) resumeLater() {
	_ = c.loop.Later(c.resume)
	// An error means the loops are stopping; they close the connection.
}

// resume goes on serving the connection once its store work is done.
func (c *conn) resume() {
	if n := c.st.back(); n > 0 {
		c.sch.Landed(n) // may serve parked connections first
	}
	if cap(c.runRaw) > 1<<20 || c.bigRun {
		// do not pin a burst's copy for the connection's life
		c.runRaw, c.runFlat, c.runArgs, c.bigRun = nil, nil, nil, false
	}
	c.serveAgain()
}

// yield has the loop serve the connection again after the others that are
// ready: gnet runs tasks after each round of I/O events. A connection that
// leaves its replies unread (backlog) waits in its loop's backlog
// (backlog.go), served in turn by one task at a time backlogWait apart: a
// task queued by a task runs in the same pass, before the loop reads its
// sockets again, so slow readers queuing themselves kept the loop from
// every other client.
func (c *conn) yield(backlog bool) {
	if !c.st.yield() {
		return
	}
	if backlog {
		c.backlogged()
		return
	}
	_ = c.loop.Later(func() {
		c.st.yieldDone()
		c.serveAgain()
	})
	// An error means the loops are stopping; they close the connection.
}

// backlogWait is how long after a pass over a loop's backlog the next one
// comes: the loop answers the others meanwhile.
const backlogWait = time.Millisecond

// serveAgain serves input already received (after a yield, once the
// loop has room, or once its run is back), unless the connection is not
// to be served: closed, draining, or waiting on the store.
func (c *conn) serveAgain() {
	if !c.st.idle() {
		return
	}
	if c.serve() {
		c.loop.CloseConn(c.gc)
		return
	}
	c.flow()
}

// dispatch answers one command on the loop.
func (c *conn) dispatch(args [][]byte) {
	c.answered++ // counted with the notes (INFO, off the loop, flushes them first: goBusy)
	at, errs := len(c.out.B), c.out.Errs
	c.answer(args)
	c.note(args[0], at, errs)
}

func (c *conn) answer(args [][]byte) {
	if !c.authed && !conncmd.AllowedBeforeAuth(args[0]) {
		c.out.Fail(commands.ErrNoAuth)
		return
	}
	if c.inline && c.answerPK(args) {
		return
	}
	if c.connCommand(args) {
		return
	}
	r := commands.UnknownCommand(args)
	c.out.Reply(&r)
}

// oneSub is a connection's submission of one PK command, answered on the
// loop as it is read (a store that finishes at once: Scheduler.AtOnce),
// made once and reused, so that a command costs no allocation.
type oneSub struct {
	s     backend.Submission
	ops   [1]backend.Op
	res   [1]backend.Result
	reply commands.Reply // the last command's, reused (commands' setOp says why)
	// atOnce is set by done inside Submit (AtOnce); otherwise done sets
	// how, from wherever the store finished, and wakes the loop.
	atOnce bool
	how    backend.Completion
	wake   chan struct{}
}

func newOneSub(deadline time.Duration, loop transport.Loop) *oneSub {
	o := &oneSub{wake: make(chan struct{}, 1)}
	o.s = backend.Submission{Ops: o.ops[:], Res: o.res[:], Timeout: deadline, Done: o.done}
	if loop != nil {
		o.s.Loop = loop
	}
	return o
}

func (o *oneSub) done(_ *backend.Submission, how backend.Completion) {
	if how == backend.Dropped {
		return // after Late: the connection has a new one
	}
	if how == backend.AtOnce {
		o.atOnce = true
		return
	}
	o.how = how
	o.wake <- struct{}{}
}

// answerPK answers a PK command on the loop, as one submission of one op
// that the store finishes inside Submit; it reports false when args names
// no PK command. The op aliases gnet's input buffer, so the loop does not
// go on while the store holds it: a store that declares it finishes at
// once (backend.Info.Completes AtOnce) and takes a submission elsewhere
// after all (memory: one of a megabyte of arguments, under the deadline
// it arms itself) has the loop wait for it. Requests of megabytes that
// arrive in parts are runs instead (serveBig), which do not.
func (c *conn) answerPK(args [][]byte) bool {
	h := c.srv.handler
	o := c.one
	spec, refused, ok := h.ParseOne(args, &o.ops[0])
	if !ok {
		return false
	}
	if refused != nil {
		c.out.Reply(refused)
		return true
	}
	o.atOnce = false
	h.Submit(&o.s)
	if !o.atOnce {
		<-o.wake
	}
	if !o.atOnce && o.how == backend.Late {
		// The store may still hold it: the connection makes a new one.
		r := commands.Unavailable(o.s.LateErr)
		c.out.Reply(&r)
		c.one = newOneSub(c.srv.deadline, c.loop)
		return true
	}
	// The op and result stay until the next command: clearing them cost
	// more than what they pin (the last one's arguments, in gnet's buffer,
	// and a record's value).
	h.AnswerOne(spec, &o.ops[0], &o.res[0], &o.reply)
	c.out.Reply(&o.reply)
	return true
}
