// Package transport moves a connection's bytes and decides where the
// connection's code runs: on gnet's event loops (gnet.go), or, where gnet
// does not build (GOOS=wasip1: no epoll) or when asked, on the portable
// transport (portable.go), a goroutine per connection over any
// net.Listener. Both serve the same connection code (package protocol's
// conn): the same framing guard, parsing, commands and replies.
//
// It owns the event loops, the sockets, the read pause (pause_linux.go) and
// the order in which a loop runs I/O and queued tasks. It may not parse
// requests, answer commands, count, or reach the store: it hands input to
// the connection (LoopConn's or Served's callbacks) and runs what the
// connection queues (Loop.Later).
package transport

import "net"

// IO is what a connection needs of its socket: an input buffer it parses
// in place, and writes.
type IO interface {
	// Peek(-1) is all the input received and not discarded.
	Peek(n int) ([]byte, error)
	Discard(n int) (int, error)
	Write(b []byte) (int, error)
	InboundBuffered() int
	OutboundBuffered() int
	RemoteAddr() net.Addr
	LocalAddr() net.Addr
}

// Loop is where a connection's code runs, one thing at a time.
type Loop interface {
	// Later runs f on the loop, after what runs there now. An error means
	// the loops are stopping; they close the connections.
	Later(f func()) error
	// CloseConn closes the connection whose socket is io; called on the
	// loop.
	CloseConn(io IO)
}

// Handle is a connection as other goroutines reach it.
type Handle interface {
	// Wake has the loop look at the connection again, as if input had
	// arrived (Shutdown).
	Wake()
	// Close closes the connection (CLIENT KILL).
	Close()
	// Later runs f on the connection's loop.
	Later(f func()) error
}

// Loops is a transport as the server drives it.
type Loops interface {
	// Enroll has the transport serve nc as c: on gnet's loops c must be a
	// LoopConn too.
	Enroll(nc net.Conn, c Served) (Handle, error)
	// Stop closes every connection still open.
	Stop() error
}

// Served is a connection as the portable transport serves it; gnet's
// loops call LoopConn's callbacks instead.
type Served interface {
	// Open is the connection's first event, before it is read: io and
	// loop are its own (the portable transport runs one connection per
	// "loop"), handle reaches it from other goroutines, fd is its
	// socket's (-1 when unknown).
	Open(io IO, loop Loop, handle Handle, fd int)
	// Traffic is the loop's turn on the connection: input has arrived,
	// or it was woken. It reports whether to close it.
	Traffic() (closeIt bool)
	// Closed is the connection's last event: it is closed.
	Closed()
	// Holding reports whether the connection is not to be read now, with
	// inbound bytes of input waiting.
	Holding(inbound int) bool
}

// AddrString is a's address, or "" for none.
func AddrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
