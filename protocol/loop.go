//go:build !wasip1

package protocol

import (
	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/backend/redis/loopconn"
	"github.com/prepkey/prepkey/protocol/transport"
)

// A client's connection and the loop's own connection to the store are
// both served on gnet's loops (package transport): these are the client's
// callbacks.

var (
	_ transport.LoopConn = (*conn)(nil)
	_ transport.LoopConn = (*loopconn.Conn)(nil)
)

// startLoops starts the transport: gnet's event loops, or with
// Config.Portable the portable one.
func (s *Server) startLoops() (transport.Loops, error) {
	if s.cfg.Portable {
		return transport.StartPortable(s.closing.Load), nil
	}
	return transport.StartGnet(s.cfg.EventLoops, s.cfg.Logger)
}

// OnOpen starts serving a client's connection on its loop.
func (c *conn) OnOpen(gc gnet.Conn) gnet.Action {
	c.open(gc, transport.GnetLoop{EventLoop: gc.EventLoop()}, transport.NewGnetHandle(gc), gc.Fd())
	epfd, can := transport.PollerFD(c.srv.loops, gc)
	c.epfd = epfd
	c.st.pausable(can)
	c.useScheduler(c.srv.sched.For(c.loop))
	c.stats = c.srv.stats.ForLoop(c.loop)
	c.srv.sawLoop(c.loop)
	if c.srv.closing.Load() {
		return gnet.Close
	}
	return gnet.None
}

// OnTraffic serves what the client sent (traffic).
func (c *conn) OnTraffic(gnet.Conn) gnet.Action {
	if c.traffic() {
		return gnet.Close
	}
	return gnet.None
}

// OnClose: late results for the connection are dropped; the server
// forgets it.
func (c *conn) OnClose(gnet.Conn, error) { c.Closed() }
