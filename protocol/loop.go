package protocol

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// loopEvents is the server's side of gnet's event loops; each method runs
// on the loop of its connection: a client's (*conn) or the loop's own
// connection to the backend (*upstream).
type loopEvents struct {
	s *Server
}

var _ gnet.EventHandler = loopEvents{}

func (loopEvents) OnBoot(gnet.Engine) gnet.Action { return gnet.None }
func (loopEvents) OnShutdown(gnet.Engine)         {}

func (e loopEvents) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	if u, ok := gc.Context().(*upstream); ok {
		u.gc = gc
		return nil, gnet.None
	}
	c := gc.Context().(*conn)
	c.gc, c.loop, c.active = gc, gc.EventLoop(), time.Now()
	// What CLIENT LIST shows of the socket is read here, on the loop: gnet
	// clears it at close. The handle is set here too, before the
	// connection is served (Serve sets it once enrolling returns), for
	// CLIENT LIST and KILL; both are published under the lock.
	c.addr, c.laddr, c.fd = addrString(gc.RemoteAddr()), addrString(gc.LocalAddr()), gc.Fd()
	c.unix = gc.LocalAddr() != nil && gc.LocalAddr().Network() == "unix"
	e.s.mu.Lock()
	c.handle = gc
	e.s.mu.Unlock()
	c.epfd, c.canPause = pollerFD(gc)
	c.batcher = e.s.batcherFor(c.loop)
	c.stats = e.s.stats.forLoop(c.loop)
	if e.s.closing.Load() {
		return nil, gnet.Close
	}
	return nil, gnet.None
}

func (e loopEvents) OnClose(gc gnet.Conn, err error) gnet.Action {
	if u, ok := gc.Context().(*upstream); ok {
		u.onClose(err)
		return gnet.None
	}
	c := gc.Context().(*conn)
	c.closed = true
	e.s.forget(c)
	return gnet.None
}

func (e loopEvents) OnTraffic(gc gnet.Conn) gnet.Action {
	if u, ok := gc.Context().(*upstream); ok {
		if u.onTraffic(gc) {
			return gnet.Close
		}
		return gnet.None
	}
	c := gc.Context().(*conn)
	c.active = time.Now()
	c.lastInput.Store(c.active.Unix())
	c.paused = false // it is read: gnet turns reading on when it drains output
	if c.busy || c.parked {
		// Input waits in gnet's buffer until the run is back, or the loop
		// has room for it: up to pauseAt, where flow stops reading it.
		// Where it cannot, the inbound limit bounds it.
		if gc.InboundBuffered() > max(minInboundLimit, 2*e.s.cfg.MaxBulk) {
			e.s.cfg.Logger.Warn("closing a client that floods while its commands wait on the store", "id", c.id)
			return gnet.Close
		}
		c.flow()
		return gnet.None
	}
	if c.serve() {
		return gnet.Close
	}
	c.flow()
	return gnet.None
}

func (loopEvents) OnTick() (time.Duration, gnet.Action) { return 0, gnet.None }

// gnetLogger sends gnet's own log lines to the sidecar's logger; its
// start-up chatter is debug.
type gnetLogger struct{ log *slog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Infof(format string, args ...any)  { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.log.Warn(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
