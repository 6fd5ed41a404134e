package transport

import (
	"net"
	"sync"
	"syscall"
	"time"
)

// portableLoops serves each connection on a goroutine of its own that
// reads and, under the connection's lock (its "loop"), runs conn's code,
// and one that writes its replies, so that, as on gnet, conn's writes never
// wait on the client and what it has not read is counted (OutboundBuffered)
// and bounded by conn's limits.
// No loop waits on a submission here: a store that joins runs gets the
// runs of all the connections joined, one submission at a time (package
// scheduler's Loop for no event loop).
type portableLoops struct {
	closing func() bool // the server is shutting down: close at once

	mu    sync.Mutex
	conns map[*portableConn]struct{} // open, for Stop

	// The functions handed to Later, in order, run by one goroutine
	// (runLater) while there are any: see Later.
	lmu     sync.Mutex
	later   []laterCall
	spare   []laterCall // later's previous array, reused
	running bool
}

type laterCall struct {
	p *portableConn
	f func()
}

// StartPortable starts the portable transport; closing reports whether the
// server is shutting down (a connection enrolled then is closed at once).
func StartPortable(closing func() bool) Loops {
	return &portableLoops{closing: closing, conns: make(map[*portableConn]struct{})}
}

// portableRead is the size of one read. Bytes are copied into the
// connection's input from it; a request larger than one read collects there.
const portableRead = 16 << 10

// portableKeep bounds the input buffer a connection keeps between requests.
const portableKeep = 64 << 10

func (l *portableLoops) Enroll(nc net.Conn, c Served) (Handle, error) {
	p := &portableConn{nc: nc, c: c, loops: l}
	p.wcond.L, p.rcond.L = &p.wmu, &p.mu
	fd := -1
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(f uintptr) { fd = int(f) })
			p.raw = rc
			p.writeOut = p.writeRaw
		}
	}
	// The connection is set up before it is served, as gnet's OnOpen does.
	c.Open(p, p, p, fd)
	l.mu.Lock()
	l.conns[p] = struct{}{}
	l.mu.Unlock()
	go p.write()
	go p.read(l.closing())
	return p, nil
}

// Stop closes the connections; their readers then stop.
func (l *portableLoops) Stop() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range l.conns {
		_ = p.nc.Close()
	}
	return nil
}

// portableConn is one connection of the portable transport: IO, Loop and
// Handle for its connection.
type portableConn struct {
	nc    net.Conn
	c     Served
	loops *portableLoops

	mu     sync.Mutex // held while conn's code runs: the connection's loop
	rcond  sync.Cond  // on mu: conn's code ran, the reader may go on
	in     []byte     // received, not yet discarded
	keep   []byte     // the start of in's buffer while it is small, reused
	closed bool

	wmu     sync.Mutex
	wcond   sync.Cond // on wmu: out has bytes, or closing
	out     []byte    // replies not yet handed to the socket
	writing int       // bytes handed to the socket, not yet taken
	closing bool      // no more replies: write out, then close
	// turn is set while a goroutine runs conn's code under mu and will
	// write out its replies itself when done (unlock), so Write need not
	// wake the writer.
	turn bool
	// raw writes to the socket without waiting (unlock); nil when the
	// connection has no descriptor: the writer writes everything.
	raw syscall.RawConn
	// writeOut is p.writeRaw, bound once: a function made in each unlock
	// (and the count it wrote) were two allocations per request.
	writeOut func(fd uintptr) bool
	wrote    int // what writeRaw wrote, under wmu
}

// closeWait bounds how long the replies written before a close (a protocol
// error's, those of a shutdown) may wait for the client to take them.
const closeWait = time.Second

// read reads until the connection closes, handing each read to conn as
// gnet's OnTraffic does.
func (p *portableConn) read(closing bool) {
	if closing {
		p.mu.Lock()
		p.closeLocked()
		p.mu.Unlock()
		return
	}
	buf := make([]byte, portableRead)
	for {
		p.mu.Lock()
		for !p.closed && p.holding() {
			p.rcond.Wait()
		}
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		n, err := p.nc.Read(buf)
		p.lock()
		if n > 0 && !p.closed {
			p.in = append(p.in, buf[:n]...)
			if len(p.in) == n && cap(p.in) <= portableKeep {
				p.keep = p.in[:0]
			}
			if p.c.Traffic() {
				p.closeLocked()
			}
		}
		if err != nil {
			p.closeLocked()
		}
		p.unlock()
	}
}

// lock takes the connection's loop (mu) for a turn of conn's code, whose
// replies unlock writes out.
func (p *portableConn) lock() {
	p.mu.Lock()
	p.turnLocked()
}

// turnLocked marks mu's holder as in a turn.
func (p *portableConn) turnLocked() {
	p.wmu.Lock()
	p.turn = true
	p.wmu.Unlock()
}

// unlock ends a turn: the replies it wrote go to the socket now, from this
// goroutine, as far as the socket takes them without waiting; the writer
// is woken only for the rest (a client slow to read, a close). So a
// request costs no switch to the writer goroutine and back: on wasip1,
// where every goroutine runs on one thread, that switch was a large part
// of a request's time (issue 34).
func (p *portableConn) unlock() {
	p.wmu.Lock()
	p.turn = false
	if p.writing == 0 && !p.closing && len(p.out) > 0 && p.raw != nil {
		// The writer is idle and cannot start while wmu is held: the
		// socket is this goroutine's for one write that does not wait.
		p.wrote = 0
		_ = p.raw.Write(p.writeOut)
		switch n := p.wrote; {
		case n <= 0:
		case n == len(p.out):
			p.out = p.out[:0]
			if cap(p.out) > 1<<20 {
				p.out = nil // do not pin a burst's buffer
			}
		default:
			p.out = append(p.out[:0], p.out[n:]...)
		}
	}
	wake := len(p.out) > 0 || p.closing
	p.wmu.Unlock()
	if wake {
		p.wcond.Signal()
	}
	p.mu.Unlock()
}

// writeRaw writes out once, under wmu (unlock); it never waits: the rest
// is the writer's.
func (p *portableConn) writeRaw(fd uintptr) bool {
	p.wrote, _ = syscall.Write(int(fd), p.out)
	return true
}

// holding reports whether the connection is not to be read now: it has
// too much input waiting behind commands being answered (Served.Holding;
// on gnet's loops the connection stops epoll from reading it). So a deep
// pipeline waits in the client's socket, not in the sidecar.
func (p *portableConn) holding() bool { return p.c.Holding(len(p.in)) }

// closeLocked closes the connection once, and forgets it, as gnet's
// OnClose does.
func (p *portableConn) closeLocked() {
	if p.closed {
		return
	}
	p.closed = true
	p.rcond.Broadcast()
	p.c.Closed()
	p.loops.mu.Lock()
	delete(p.loops.conns, p)
	p.loops.mu.Unlock()
	// The writer writes out what is left, then closes the socket, which
	// stops the reader.
	_ = p.nc.SetWriteDeadline(time.Now().Add(closeWait))
	p.wmu.Lock()
	p.closing = true
	p.wmu.Unlock()
	p.wcond.Signal()
}

// write writes the replies as conn hands them over, until the connection
// closes, then closes the socket.
func (p *portableConn) write() {
	var buf []byte
	for {
		p.wmu.Lock()
		for len(p.out) == 0 && !p.closing {
			p.wcond.Wait()
		}
		// (A turn's own write in unlock is done: it holds wmu throughout.)
		if len(p.out) == 0 {
			p.wmu.Unlock()
			break
		}
		buf, p.out = p.out, buf[:0]
		p.writing = len(buf)
		p.wmu.Unlock()
		_, err := p.nc.Write(buf)
		p.wmu.Lock()
		p.writing = 0
		p.wmu.Unlock()
		if err != nil {
			break
		}
		if cap(buf) > 1<<20 {
			buf = nil // do not pin a burst's buffer
		}
	}
	// The FIN goes out first: wazero (1.12) does not close a socket when
	// the module closes it, but leaves it to the host's garbage collector,
	// seconds later; a client waiting for the close would wait as long.
	if cw, ok := p.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = p.nc.Close()
}

func (p *portableConn) Wake() {
	go func() {
		p.lock()
		defer p.unlock()
		if !p.closed && p.c.Traffic() {
			p.closeLocked()
		}
		p.rcond.Broadcast()
	}()
}

func (p *portableConn) Close() {
	_ = p.Later(p.closeLocked)
}

// Later runs f under the connection's lock, after the current turn. The
// calls of all the connections queue together, in order, and one goroutine
// runs them while there are any: a batch of Redis replies resumes its 50
// connections from one goroutine, where a goroutine started for each call
// (created, scheduled, ended: each a trip through Go's scheduler and its
// clock, on wasip1's one thread) cost more than the call (issue 34). That
// goroutine does not wait for a connection in a turn (TryLock): such a
// call gets a goroutine of its own, as every call did before, so a caller
// that waits for f never waits behind another connection's turn.
func (p *portableConn) Later(f func()) error {
	l := p.loops
	l.lmu.Lock()
	l.later = append(l.later, laterCall{p, f})
	start := !l.running
	l.running = true
	l.lmu.Unlock()
	if start {
		go l.runLater()
	}
	return nil
}

// runLater runs the calls queued by Later until there are none.
func (l *portableLoops) runLater() {
	for {
		l.lmu.Lock()
		calls := l.later
		if len(calls) == 0 {
			l.running = false
			l.lmu.Unlock()
			return
		}
		l.later, l.spare = l.spare[:0], nil
		l.lmu.Unlock()
		for i, c := range calls {
			if c.p.mu.TryLock() {
				c.p.turnLocked()
				c.p.run(c.f)
			} else {
				go func() {
					c.p.lock()
					c.p.run(c.f)
				}()
			}
			calls[i] = laterCall{} // do not pin a closed connection
		}
		l.lmu.Lock()
		if l.spare == nil && cap(calls) <= 1024 {
			l.spare = calls[:0]
		}
		l.lmu.Unlock()
	}
}

// run runs f in a turn taken with lock, and ends the turn.
func (p *portableConn) run(f func()) {
	defer p.unlock()
	f()
	p.rcond.Broadcast()
}

// Close closes the connection, as its loop (it is its own).
func (p *portableConn) CloseConn(IO) { p.closeLocked() }

func (p *portableConn) Peek(n int) ([]byte, error) {
	if n < 0 || n > len(p.in) {
		return p.in, nil
	}
	return p.in[:n], nil
}

func (p *portableConn) Discard(n int) (int, error) {
	n = min(n, len(p.in))
	p.in = p.in[n:]
	if len(p.in) == 0 {
		// conn keeps no slice of what it discarded: the buffer is reused,
		// unless it grew for a large request.
		p.in = p.keep
	}
	return n, nil
}

// Write hands b to the writer. A failed write closes the socket; the reader
// then closes the connection.
func (p *portableConn) Write(b []byte) (int, error) {
	p.wmu.Lock()
	p.out = append(p.out, b...)
	wake := !p.turn // else the turn's unlock writes it
	p.wmu.Unlock()
	if wake {
		p.wcond.Signal()
	}
	return len(b), nil
}

func (p *portableConn) InboundBuffered() int { return len(p.in) }

func (p *portableConn) OutboundBuffered() int {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return len(p.out) + p.writing
}

func (p *portableConn) RemoteAddr() net.Addr {
	if a := p.nc.RemoteAddr(); a != nil {
		return a
	}
	return unknownAddr{} // a socket inherited on wasip1 has no address
}

func (p *portableConn) LocalAddr() net.Addr { return p.nc.LocalAddr() }

// unknownAddr stands for an address the platform does not tell.
type unknownAddr struct{}

func (unknownAddr) Network() string { return "unknown" }
func (unknownAddr) String() string  { return "?" }
