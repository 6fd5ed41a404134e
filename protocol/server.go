// Package protocol serves the Redis protocol (RESP2, and RESP3 after
// HELLO 3) on redcon's reader: it owns connections, AUTH, the connection
// commands a Redis client expects, limits and pipelining, and hands PK
// commands to package commands.
package protocol

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// Handler runs PK commands.
type Handler interface {
	// Do runs one command; ok is false for a name it does not know.
	Do(ctx context.Context, args [][]byte) (r commands.Reply, ok bool)
	// IsPK reports whether name is a command Do knows.
	IsPK(name []byte) bool
	// Batch runs several PK commands read together, in order, so a store
	// can serve them in one round trip or one fsync.
	Batch(ctx context.Context, cmds [][][]byte, replies []commands.Reply)
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
	Logger  *slog.Logger
}

// Server accepts connections and serves them until Shutdown.
type Server struct {
	cfg     Config
	handler Handler
	backend Pinger
	started time.Time
	// connCmds is the table of connection commands.
	connCmds map[string]connCmd

	nextID    atomic.Int64
	processed atomic.Int64
	clients   atomic.Int64

	mu       sync.Mutex
	ln       net.Listener
	conns    map[*conn]struct{}
	closing  bool
	inflight sync.WaitGroup
}

// New returns a Server that runs PK commands with handler and reports the
// readiness of backend.
func New(cfg Config, handler Handler, backend Pinger) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxArgs == 0 {
		cfg.MaxArgs = 1024
	}
	if cfg.MaxBulk == 0 {
		cfg.MaxBulk = 1 << 20
	}
	return &Server{cfg: cfg, handler: handler, backend: backend, started: time.Now(), conns: make(map[*conn]struct{}), connCmds: connCommandTable()}
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("protocol: server closed")

// Serve accepts connections on ln until Shutdown; it then returns
// ErrServerClosed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.ln = ln
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			// Out of file descriptors passes as connections close; wait
			// instead of dying, as net/http does.
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.cfg.Logger.Warn("accept", "err", err, "retry_in", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	if n := s.clients.Add(1); s.cfg.MaxClients > 0 && n > int64(s.cfg.MaxClients) {
		s.clients.Add(-1)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
		_ = nc.Close()
		return
	}
	c := newConn(s, nc)
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		s.clients.Add(-1)
		_ = nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.inflight.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.inflight.Done()
		defer s.clients.Add(-1)
		defer s.forget(c)
		c.serve()
	}()
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// Shutdown stops accepting, lets every connection answer the commands it has
// already read, then closes them. It returns when all are closed or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	if s.ln != nil {
		_ = s.ln.Close()
	}
	for c := range s.conns {
		c.interrupt()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			_ = c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}
