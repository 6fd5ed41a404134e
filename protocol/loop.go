//go:build !wasip1

package protocol

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/prepkey/prepkey/protocol/upstream"
)

// loopEvents is the server's side of gnet's event loops. Each callback
// runs on the loop of its connection and hands the event to the
// connection itself, which gnet keeps as the connection's context.
type loopEvents struct{}

var _ gnet.EventHandler = loopEvents{}

// loopConn is a connection served on a loop: a client's (*conn), or the
// loop's own connection to the store (*upstream.Conn). Its methods are
// gnet's callbacks for it.
type loopConn interface {
	OnOpen(gc gnet.Conn) gnet.Action
	OnTraffic(gc gnet.Conn) gnet.Action
	// OnClose is the connection's last callback; err is why it closed
	// (nil when the loop closed it).
	OnClose(gc gnet.Conn, err error)
}

var (
	_ loopConn = (*conn)(nil)
	_ loopConn = (*upstream.Conn)(nil)
)

func (loopEvents) OnBoot(gnet.Engine) gnet.Action       { return gnet.None }
func (loopEvents) OnShutdown(gnet.Engine)               {}
func (loopEvents) OnTick() (time.Duration, gnet.Action) { return 0, gnet.None }

func (loopEvents) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	return nil, gc.Context().(loopConn).OnOpen(gc)
}

func (loopEvents) OnTraffic(gc gnet.Conn) gnet.Action {
	return gc.Context().(loopConn).OnTraffic(gc)
}

func (loopEvents) OnClose(gc gnet.Conn, err error) gnet.Action {
	gc.Context().(loopConn).OnClose(gc, err)
	return gnet.None
}

// OnOpen starts serving a client's connection on its loop.
func (c *conn) OnOpen(gc gnet.Conn) gnet.Action {
	s := c.srv
	c.gc, c.loop, c.active = gc, gnetLoop{gc.EventLoop()}, time.Now()
	// What CLIENT LIST shows of the socket is read here, on the loop: gnet
	// clears it at close. The handle is set here too, before the
	// connection is served (Serve sets it once enrolling returns), for
	// CLIENT LIST and KILL; both are published under the lock.
	c.addr, c.laddr, c.fd = addrString(gc.RemoteAddr()), addrString(gc.LocalAddr()), gc.Fd()
	c.unix = gc.LocalAddr() != nil && gc.LocalAddr().Network() == "unix"
	s.mu.Lock()
	c.handle = gnetHandle{gc}
	s.mu.Unlock()
	c.epfd, c.canPause = pollerFD(gc)
	c.batcher = s.batcherFor(c.loop)
	c.stats = s.stats.ForLoop(c.loop)
	if s.closing.Load() {
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
func (c *conn) OnClose(gnet.Conn, error) {
	c.closed = true
	c.srv.forget(c)
}

// newLink makes loop's own connection to a store driven backend.DriveWire.
func newLink(s *Server, loop connLoop) link {
	return upstream.New(upstream.Config{
		Wire:    s.cfg.Wire,
		Handler: s.handler,
		Loop:    loop.(gnetLoop).EventLoop,
		Name:    fmt.Sprintf("loop-%d", s.stats.UpstreamSeq.Add(1)),
		Logger:  s.cfg.Logger,
		Up:      &s.stats.UpstreamsUp,
		Closing: s.closing.Load,
	})
}

// gnetLogger sends gnet's own log lines to the sidecar's logger; its
// start-up chatter is debug.
type gnetLogger struct{ log *slog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Infof(format string, args ...any)  { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.log.Warn(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }

// gnetLoops are gnet's event loops as the Server drives them.
type gnetLoops struct{ *gnet.Client }

// startLoops starts the transport: gnet's event loops, or with
// Config.Portable the portable one (portable.go).
func (s *Server) startLoops() (loops, error) {
	if s.cfg.Portable {
		return newPortableLoops(s), nil
	}
	cl, err := gnet.NewClient(loopEvents{},
		gnet.WithNumEventLoop(max(1, s.cfg.EventLoops)),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{s.cfg.Logger}))
	if err == nil {
		err = cl.Start()
	}
	if err != nil {
		return nil, err
	}
	return gnetLoops{cl}, nil
}

func (g gnetLoops) enroll(nc net.Conn, c *conn) (connHandle, error) {
	// gnet takes over a duplicate of the socket and closes nc.
	gc, err := g.EnrollContext(nc, c)
	if err != nil {
		return nil, err
	}
	return gnetHandle{gc}, nil
}

func (g gnetLoops) stop() error { return g.Stop() }

// gnetHandle is a connection on gnet's loops, for other goroutines.
type gnetHandle struct{ gc gnet.Conn }

func (h gnetHandle) wake()                { _ = h.gc.Wake(nil) }
func (h gnetHandle) close()               { _ = h.gc.Close() }
func (h gnetHandle) later(f func()) error { return gnetLoop{h.gc.EventLoop()}.later(f) }

// gnetLoop is one gnet event loop as a connection (and its batcher) use it.
type gnetLoop struct{ gnet.EventLoop }

func (l gnetLoop) later(f func()) error {
	return l.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		f()
		return nil
	}))
}

func (l gnetLoop) closeConn(c *conn) { _ = l.Close(c.gc.(gnet.Conn)) }

// cpuSeconds is the CPU time the process has used, user and system.
func cpuSeconds() (user, sys float64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds()
}
