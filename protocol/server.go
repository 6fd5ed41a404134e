// Package protocol serves the Redis protocol (RESP2, and RESP3 after
// HELLO 3) on redcon's reader: it owns connections and their state (conn.go),
// how they run AUTH and the other connection commands a Redis client
// expects, which package conncmd answers, and what those see of them
// (conncmd_env.go), MULTI/EXEC (transaction.go),
// limits and pipelining, and a connection's run of PK commands as its
// loop's scheduling sees it (run.go; package scheduler takes runs to the
// store as submissions). It hands PK commands to package
// commands and counts into package stats (counting.go).
//
// It may not move bytes on sockets or run event loops (package transport),
// frame or write RESP by hand (package resp), spell an error reply (the
// catalogue, commands.ErrCode), or reach a store but through Handler.
//
// Connections are served on gnet's event loops, as Redis serves them on
// its own: a loop reads every connection that has input, answers, and
// writes, with no goroutine per connection. A request costs a read and a
// write, where a goroutine per connection also paid a read that finds the
// socket empty, a park and a wake-up; at pipeline 1 that was half the CPU.
// Commands that wait on a backend go to it in submissions, the runs of a
// loop's connections joined (package scheduler).
package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/conncmd"
	"github.com/prepkey/prepkey/protocol/floodlog"
	"github.com/prepkey/prepkey/protocol/scheduler"
	"github.com/prepkey/prepkey/protocol/stats"
	"github.com/prepkey/prepkey/protocol/transport"
)

// Handler parses PK commands into ops and answers them from the store's
// results (package commands' Handler), and hands their submissions to the
// store.
type Handler interface {
	// IsPK reports whether name is a PK command.
	IsPK(name []byte) bool
	// ParseOne parses one command into *op for a submission of one op,
	// answered on the loop (a store that finishes at once); ok is false
	// for a name it does not know; spec is nil when it refused the
	// command, with refused its reply.
	ParseOne(args [][]byte, op *backend.Op) (spec *commands.Spec, refused *commands.Reply, ok bool)
	// AnswerOne writes into *r the reply of such an op from its result.
	AnswerOne(spec *commands.Spec, op *backend.Op, res *backend.Result, r *commands.Reply)
	// ParseBatch parses and validates PK commands into ops, answering the
	// refused ones.
	ParseBatch(cmds [][][]byte, replies []commands.Reply) commands.Parsed
	// LoadSecret loads the store's secret for the scan cursors (I/O).
	LoadSecret(ctx context.Context) error
	// Submit hands a submission to the store (backend.Store.Submit).
	Submit(s *backend.Submission)
	// Check checks a PK command queued in a transaction without running
	// it; ok is false with its error reply when it is refused.
	Check(args [][]byte) (r commands.Reply, ok bool)
	// Info is what the store declares of itself (backend.Store.Info):
	// the server bounds every submission by its Deadline, and schedules
	// by its Completes and Joins.
	Info() backend.Info
}

// Pinger reports whether the backend can serve now (INFO's backend_ready).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config is the server's settings.
type Config struct {
	// Password, when set, is required by AUTH (user "default") before any
	// other command.
	Password   string
	MaxClients int
	// EventLoops is how many event loops serve connections (default 1).
	// One loop on one thread costs the least CPU per request, as in Redis;
	// more spread the connections' I/O over cores when one is not enough.
	EventLoops int
	// MaxBulk bounds one argument of an authenticated request; a bigger one
	// is a protocol error that closes the connection. It must exceed the
	// key and value limits, so that those get their own clear errors.
	MaxBulk int
	// MaxArgs bounds the arguments of an authenticated request.
	MaxArgs int
	// Version is prepkey's version, for INFO.
	Version string
	// Backend names the backend kind for INFO (memory, file, redis, mongodb).
	Backend string
	// IdleTimeout, when positive, closes a client connection that has sent
	// nothing for that long and waits on no store work (Redis's timeout).
	IdleTimeout time.Duration
	// BackendTimeout bounds every store call (--backend-timeout): past it
	// the commands get -UNAVAILABLE, whatever the store does (default 2s).
	// A store that declares a longer one (backend.Info.Timeout: Redis with
	// ?wait=N) gets that instead, on every path (Server.deadline).
	BackendTimeout time.Duration
	// MaxTxMemory bounds what the transactions open on all connections
	// together hold queued (queuedSize: arguments and their headers), as
	// Redis's maxmemory-clients bounds its clients together; a command
	// queued past it is refused with -OOM and its transaction discarded.
	// 0: no bound but each connection's own.
	MaxTxMemory int64
	// MaxClientsMemory bounds what all client connections hold together in
	// buffers: unread replies, input not yet served, a large request being
	// assembled (clientmem.go). Past it the connection that holds the most
	// is closed, as Redis's maxmemory-clients evicts the biggest client.
	// 0: no bound but each connection's own.
	MaxClientsMemory int64
	Logger           *slog.Logger
	// Portable serves each connection on a goroutine of its own instead
	// of gnet's event loops (transport/portable.go); it is the only transport on
	// wasip1, where gnet does not build.
	Portable bool
}

// Server accepts connections and serves them until Shutdown.
type Server struct {
	cfg     Config
	handler Handler
	// deadline bounds every submission to the store, on every path (a
	// batch, EXEC, the loop's own connection to Redis): the store's own
	// (backend.Info.Timeout), else --backend-timeout. One value, decided
	// once, so that no path answers -UNAVAILABLE while another still waits.
	deadline time.Duration
	// info is what the store declares of itself (Handler.Info), read once.
	info backend.Info
	// sched takes the runs of PK commands to the store (package
	// scheduler: it decides their path from what the store declares).
	sched   *scheduler.Scheduler
	backend Pinger
	started time.Time // with a monotonic reading: now
	// connCmds is the table of connection commands (conncmd_env.go).
	connCmds *conncmd.Table
	stats    *stats.Counters
	// flood logs the lines a client can cause at will, bounded per kind
	// (package floodlog).
	flood *floodlog.Logger

	nextID    atomic.Int64
	processed atomic.Int64
	clients   atomic.Int64
	closing   atomic.Bool
	txBytes   atomic.Int64 // held by open transactions' queues (MaxTxMemory)
	mem       clientMem    // held by connections' buffers (MaxClientsMemory)

	mu    sync.Mutex
	ln    net.Listener
	loops transport.Loops // the event loops; gnet's client mode serves accepted conns
	conns map[*conn]struct{}
	// loopSet numbers the event loops that have served a client (Alive).
	loopSet map[transport.Loop]int
	open    sync.WaitGroup // one per connection until its loop closes it
}

// New returns a Server that runs PK commands with handler and reports the
// readiness of backend.
func New(cfg Config, handler Handler, pinger Pinger) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxArgs == 0 {
		cfg.MaxArgs = 1024
	}
	if cfg.MaxBulk == 0 {
		cfg.MaxBulk = 1 << 20
	}
	if cfg.BackendTimeout <= 0 {
		cfg.BackendTimeout = 2 * time.Second
	}
	s := &Server{cfg: cfg, handler: handler, backend: pinger, started: time.Now(),
		conns: make(map[*conn]struct{}), loopSet: make(map[transport.Loop]int), flood: floodlog.New(cfg.Logger, floodlog.Every, floodlog.Burst)}
	s.mem.limit = max(cfg.MaxClientsMemory, 0)
	s.deadline = cfg.BackendTimeout
	var info backend.Info
	if handler != nil { // nil: a server that only counts (benchmarks)
		info = handler.Info()
		s.info = info
		s.deadline = info.Deadline(cfg.BackendTimeout)
	}
	s.connCmds = newConnCmds(s)
	s.stats = stats.New(s.connCmds.Names())
	sc := scheduler.Config{Info: info, Deadline: s.deadline, Stats: s.stats}
	if handler != nil {
		sc.Store = handler
	}
	s.sched = scheduler.New(sc)
	return s
}

// LoopBackendConns is the count of the event loops' own connections to
// the store that are up (INFO's loop_backend_conns): a store that keeps
// connections of its own per loop (a standalone Redis) counts into it.
func (s *Server) LoopBackendConns() *atomic.Int64 { return &s.stats.UpstreamsUp }

// Closing reports whether the server is shutting down: a store's loop
// connection lost then is not dialled again.
func (s *Server) Closing() bool { return s.closing.Load() }

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("protocol: server closed")

// Serve accepts connections on ln until Shutdown; it then returns
// ErrServerClosed. It accepts on its own goroutine rather than in gnet so
// that any listener works (TCP or a unix socket, opened by the caller) and
// so that max-clients and out-of-descriptors are handled here.
func (s *Server) Serve(ln net.Listener) error {
	loops, err := s.startLoops()
	if err != nil {
		return fmt.Errorf("protocol: starting event loops: %w", err)
	}
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		_ = loops.Stop()
		return ErrServerClosed
	}
	s.ln, s.loops = ln, loops
	s.mu.Unlock()
	if s.cfg.IdleTimeout > 0 {
		go s.closeIdle()
	}
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			// Out of file descriptors passes as connections close; wait
			// instead of dying, as net/http does.
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.flood.Log(floodlog.Accept, slog.LevelWarn, "accept", "err", err, "retry_in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc, loops)
	}
}

func (s *Server) accept(nc net.Conn, loops transport.Loops) {
	s.stats.Received.Add(1)
	if n := s.clients.Add(1); s.cfg.MaxClients > 0 && n > int64(s.cfg.MaxClients) {
		s.clients.Add(-1)
		s.stats.Rejected.Add(1)
		s.flood.Log(floodlog.MaxClients, slog.LevelWarn, "connection refused: max number of clients reached", "id", s.nextID.Add(1),
			"remote", nc.RemoteAddr().String(), "maxclients", s.cfg.MaxClients)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(redcon.AppendError(nil, commands.ErrMaxClients.Line()))
		_ = nc.Close()
		return
	}
	c := newConn(s)
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		s.clients.Add(-1)
		_ = nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.open.Add(1)
	s.mu.Unlock()
	h, err := loops.Enroll(nc, c)
	if err != nil {
		s.cfg.Logger.Warn("accept: handing the connection to an event loop", "err", err)
		s.forget(c)
		return
	}
	s.mu.Lock()
	c.handle = h
	closing := s.closing.Load()
	s.mu.Unlock()
	if closing {
		h.Wake() // Shutdown may have passed it by
	}
}

// forget drops a connection the loops no longer serve.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.clients.Add(-1)
	s.open.Done()
}

// Shutdown stops accepting, lets every connection answer the commands it has
// already read, then closes them. It returns when all are closed or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for c := range s.conns {
		if c.handle != nil {
			c.handle.Wake() // closes it when it waits on no run
		}
	}
	loops := s.loops
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.open.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if loops != nil {
		_ = loops.Stop() // closes what is still open
	}
	s.sched.Close()
	s.flood.Flush() // the lines suppressed in the last window are told
	return err
}

// closeIdle closes, about every second, the client connections idle for
// longer than IdleTimeout, as Redis's clientsCron does with timeout. A
// connection whose commands are at the store is not idle.
func (s *Server) closeIdle() {
	t := time.NewTicker(min(s.cfg.IdleTimeout/2, time.Second))
	defer t.Stop()
	type idle struct {
		c *conn
		h transport.Handle
	}
	var list []idle
	for range t.C {
		if s.closing.Load() {
			return
		}
		list = list[:0]
		s.mu.Lock()
		for c := range s.conns {
			if c.handle != nil {
				list = append(list, idle{c, c.handle})
			}
		}
		s.mu.Unlock()
		for _, i := range list {
			c := i.c
			_ = i.h.Later(func() {
				if c.st.idleCloseable() && time.Since(c.active) > s.cfg.IdleTimeout {
					s.cfg.Logger.Debug("closing an idle client", "id", c.id, "timeout", s.cfg.IdleTimeout)
					c.loop.CloseConn(c.gc)
				}
			})
		}
	}
}

// now is the time, read from the monotonic clock alone: started plus the
// time since. A turn of a connection reads the time when its input
// arrives (its latency, its idle time); time.Now reads the wall clock and
// the monotonic one, and on WebAssembly each reading is a call out to the
// host (clock_time_get), one of a request's six at pipeline 1 (issue 34).
// The wall clock it gives follows the monotonic one from the start: a
// step of the system's clock does not move it, which is what an idle
// timeout and a latency want.
func (s *Server) now() time.Time { return s.started.Add(time.Since(s.started)) }
