//go:build !wasip1

package transport

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// events is the transport's side of gnet's event loops. Each callback
// runs on the loop of its connection and hands the event to the
// connection itself, which gnet keeps as the connection's context.
type events struct{}

var _ gnet.EventHandler = events{}

// LoopConn is a connection served on a loop: a client's (package
// protocol's conn), or the loop's own connection to the store
// (*loopconn.Conn). Its methods are gnet's callbacks for it.
type LoopConn interface {
	OnOpen(gc gnet.Conn) gnet.Action
	OnTraffic(gc gnet.Conn) gnet.Action
	// OnClose is the connection's last callback; err is why it closed
	// (nil when the loop closed it).
	OnClose(gc gnet.Conn, err error)
}

func (events) OnBoot(gnet.Engine) gnet.Action       { return gnet.None }
func (events) OnShutdown(gnet.Engine)               {}
func (events) OnTick() (time.Duration, gnet.Action) { return 0, gnet.None }

func (events) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	return nil, gc.Context().(LoopConn).OnOpen(gc)
}

func (events) OnTraffic(gc gnet.Conn) gnet.Action {
	return gc.Context().(LoopConn).OnTraffic(gc)
}

func (events) OnClose(gc gnet.Conn, err error) gnet.Action {
	gc.Context().(LoopConn).OnClose(gc, err)
	return gnet.None
}

// gnetLogger sends gnet's own log lines to the sidecar's logger; its
// start-up chatter is debug.
type gnetLogger struct{ log *slog.Logger }

func (g gnetLogger) Debugf(format string, args ...any) { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Infof(format string, args ...any)  { g.log.Debug(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.log.Warn(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Errorf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.log.Error(fmt.Sprintf(format, args...)) }

// gnetLoops are gnet's event loops as the server drives them.
type gnetLoops struct {
	*gnet.Client
	pollers *Pollers // their epoll descriptors, to stop reading (PollerFD)
}

// StartGnet starts n of gnet's event loops (at least one).
func StartGnet(n int, logger *slog.Logger) (Loops, error) {
	cl, err := gnet.NewClient(events{},
		gnet.WithNumEventLoop(max(1, n)),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{logger}))
	if err == nil {
		err = cl.Start()
	}
	if err != nil {
		return nil, err
	}
	return gnetLoops{cl, new(Pollers)}, nil
}

// Enroll has a loop serve nc; c must be a LoopConn, whose OnOpen runs on
// the loop before it is read.
func (g gnetLoops) Enroll(nc net.Conn, c Served) (Handle, error) {
	// gnet takes over a duplicate of the socket and closes nc.
	gc, err := g.EnrollContext(nc, c.(LoopConn))
	if err != nil {
		return nil, err
	}
	return GnetHandle{gc}, nil
}

func (g gnetLoops) Stop() error { return g.Client.Stop() }

// GnetHandle is a connection on gnet's loops, for other goroutines.
type GnetHandle struct{ gc gnet.Conn }

// NewGnetHandle is gc's handle.
func NewGnetHandle(gc gnet.Conn) GnetHandle { return GnetHandle{gc} }

func (h GnetHandle) Wake()                { _ = h.gc.Wake(nil) }
func (h GnetHandle) Close()               { _ = h.gc.Close() }
func (h GnetHandle) Later(f func()) error { return GnetLoop{h.gc.EventLoop()}.Later(f) }

// GnetLoop is one gnet event loop as a connection (and its loop's
// scheduling, and a store's submission: backend.Loop) use it.
type GnetLoop struct{ gnet.EventLoop }

// Later queues f on the loop: gnet runs it after the round's I/O
// callbacks, in the order queued (TestLoopRunsTasksAfterIO).
func (l GnetLoop) Later(f func()) error {
	return l.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		f()
		return nil
	}))
}

// Gnet is the gnet event loop itself: what a store with a connection of
// its own per loop keys it by (loopconn.GnetLoop: the standalone Redis
// store writes a submission whose Loop is this on that loop's connection).
func (l GnetLoop) Gnet() gnet.EventLoop { return l.EventLoop }

// CloseConn closes the gnet connection io.
func (l GnetLoop) CloseConn(io IO) { _ = l.Close(io.(gnet.Conn)) }
