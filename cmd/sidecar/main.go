// Command sidecar serves prepkey's PK.* reservation commands over the Redis
// protocol, on an embedded durable store, Redis or MongoDB.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prepkey/prepkey/admin"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/internal/version"
	"github.com/prepkey/prepkey/protocol"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// tuneGC sets GOGC for the store kind unless the environment sets it.
// Every request allocates a little (redcon's parsed command) while the live
// heap stays small for stores whose records are elsewhere (pebble, Redis,
// MongoDB), so the default GOGC=100 spends CPU on collections that free
// almost nothing: 400 measured about 20% more requests/s at pipeline 1.
// memory: keeps its records on the Go heap, where 400 lets the heap grow to
// five times them: one write of a million PK.PREPAREs peaked at 173–178 MiB
// in 1 run of 12 (73 MiB in the others) with 400, and at 71–74 MiB in 16 of
// 16 with 100 (scripts/boundsload deep), so it keeps Go's default.
func tuneGC(kind string, getenv func(string) string) {
	if getenv("GOGC") == "" && kind != "memory" {
		debug.SetGCPercent(400)
	}
}

// run is main without the process: it returns the exit code. Bad flags and
// unusable backends exit 2 with one line on stderr; a signal exits 0 after
// the server has answered what it had read and the store is closed.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "sidecar: %v\n", err)
		return 2
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, version.Get())
		return 0
	}
	if cfg.checkOnly {
		return runCheck(cfg, stderr)
	}
	if err := cfg.checkProtectedListen(); err != nil {
		fmt.Fprintf(stderr, "sidecar: %v\n", err)
		return 2
	}
	if cfg.pidFile != "" {
		removePid, err := writePidFile(cfg.pidFile)
		if err != nil {
			fmt.Fprintf(stderr, "sidecar: %v\n", err)
			return 2
		}
		defer removePid()
	}
	build := version.Get()
	log := newLogger(cfg, stderr)
	// Backends that log through the default logger (pebble's events in the
	// embedded store) then follow --log-format and --log-level.
	slog.SetDefault(log)

	ctx, stop := signalContext()
	defer stop()

	o, err := openInterruptible(ctx, cfg, log)
	if errors.Is(err, errInterrupted) {
		fmt.Fprintf(stderr, "sidecar: %v\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "sidecar: %v\n", err)
		return 2
	}
	st, kind := o.store, o.kind
	tuneGC(kind, getenv)
	ln, err := listen(cfg.listen)
	if err != nil {
		st.Close()
		fmt.Fprintf(stderr, "sidecar: --listen %s: %v\n", cfg.listen, err)
		return 2
	}
	if err := cfg.checkProtectedAddr(ln.Addr()); err != nil {
		ln.Close()
		st.Close()
		fmt.Fprintf(stderr, "sidecar: %v\n", err)
		return 2
	}
	var adminLn net.Listener
	if cfg.adminListen != "" {
		if adminLn, err = netListen("tcp", cfg.adminListen); err != nil {
			ln.Close()
			st.Close()
			fmt.Fprintf(stderr, "sidecar: --admin-listen %s: %v\n", cfg.adminListen, err)
			return 2
		}
	}
	// Once nothing can refuse the start any more, so that a refused start
	// stays one line.
	for _, w := range unknownEnv(os.Environ(), cfg.flagNames) {
		log.Warn(w)
	}
	adminConns := 0
	if adminLn != nil {
		adminConns = cfg.adminMaxConns
	}
	maxClients := fitClients(cfg.maxClients, adminConns, log)
	if !cfg.clientsMemoryGiven {
		cfg.maxClientsMemory = byteSize(defaultClientsMemory())
	}
	limits := commands.Limits{MaxKeyBytes: cfg.maxKeyBytes, MaxValueBytes: cfg.maxValueBytes}
	srv := protocol.New(protocol.Config{
		Password:   cfg.requirePass,
		MaxClients: maxClients,
		EventLoops: cfg.eventLoops,
		// Redis's timeout: seconds a client may stay idle (0: forever).
		IdleTimeout: cfg.idleTimeout,
		// A bulk this far past the limits is a framing-level refusal (as
		// Redis's proto-max-bulk-len); smaller ones get the limit's error.
		MaxBulk:          max(cfg.maxKeyBytes, cfg.maxValueBytes) + 1<<20,
		Version:          build.Version,
		Backend:          kind,
		BackendTimeout:   cfg.backendTimeout,
		MaxTxMemory:      int64(cfg.maxTxMemory),
		Logger:           log,
		MaxClientsMemory: int64(cfg.maxClientsMemory),
	}, commands.New(st, limits, storeClock()), st)
	if o.serveLoops != nil {
		// A standalone Redis's loop connections count into INFO and stop
		// dialling at shutdown.
		o.serveLoops(srv.LoopBackendConns(), srv.Closing)
	}

	// The backend's health is watched whether or not /readyz is served: its
	// transitions are logged (lost, regained).
	health := admin.NewHealth(st, cfg.backendTimeout, log)
	health.Start()

	served := make(chan error, 2)
	go func() { served <- srv.Serve(ln) }()
	var adm *admin.Server
	if adminLn != nil {
		adm = admin.New(admin.Config{Stats: srv, Health: health, StoreMetrics: st.Info().Metrics, MaxConns: cfg.adminMaxConns, Live: srv.Alive, Logger: log})
		go func() {
			if err := adm.Serve(adminLn); err != nil {
				served <- fmt.Errorf("admin: %w", err)
			}
		}()
		log.Info("serving operators", "admin_listen", adminLn.Addr().String())
	}
	log.Info("serving", "listen", ln.Addr().String(), "backend", kind, "auth", cfg.requirePass != "",
		"pid", os.Getpid(), "version", build.Version, "commit", build.Commit)

	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-served:
		log.Error("serve", "err", err)
		code = 1
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if adm != nil {
		_ = adm.Shutdown(shutdownCtx)
	}
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("shutdown: connections still open", "err", err)
	}
	health.Stop() // before the store closes: a ping of a closed store is no news
	if err := closeWithin(st, storeCloseTimeout); err != nil {
		log.Error("closing the store", "err", err)
		code = 1
	}
	return code
}

// storeCloseTimeout bounds closing the store at shutdown. A store waits for
// its writes in flight, and a write held by a hung fsync or a full disk
// does not return: the sidecar exits all the same, as it must on SIGTERM.
// Nothing acknowledged is lost; what was not acknowledged may or may not
// have taken effect, as after a kill -9.
const storeCloseTimeout = 5 * time.Second

var errInterrupted = errors.New("interrupted by a signal while opening the backend")

// openInterruptible opens the backend, unless a signal comes first: a store
// that cannot open (a hung disk) must not make the sidecar deaf to SIGTERM.
func openInterruptible(ctx context.Context, cfg config, log *slog.Logger) (opened, error) {
	type result struct {
		o   opened
		err error
	}
	ch := make(chan result, 1)
	go func() {
		o, err := openBackend(ctx, cfg, log)
		ch <- result{o, err}
	}()
	select {
	case r := <-ch:
		return r.o, r.err
	case <-ctx.Done():
		return opened{}, errInterrupted
	}
}

// closeWithin closes st, or gives up after d.
func closeWithin(st io.Closer, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- st.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("the store did not close within %s (a hung or full disk?); exiting: commands not yet answered may or may not have taken effect", d)
	}
}

// listen opens host:port or unix:/path, or takes over an inherited socket
// that already listens (fd:N, fd:auto). A stale socket file left by a
// crashed sidecar is removed first; a live one makes listen fail.
func listen(addr string) (net.Listener, error) {
	if fd, ok := strings.CutPrefix(addr, "fd:"); ok {
		return listenFD(fd)
	}
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return netListen("tcp", addr)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use", path)
		}
		_ = os.Remove(path)
	}
	return netListen("unix", path)
}

// listenFD serves on an inherited socket: fd:N names its descriptor;
// fd:auto is the one a service manager passed (systemd's LISTEN_FDS, fd 3),
// or on wasip1 the first socket the host preopened (inheritedSocket).
func listenFD(which string) (net.Listener, error) {
	fd, err := inheritedSocket()
	if which != "auto" {
		fd, err = strconv.Atoi(which)
		if err != nil || fd < 0 {
			return nil, fmt.Errorf("want fd:N with N a descriptor number, or fd:auto")
		}
	}
	if err != nil {
		return nil, err
	}
	// Non-blocking, so that Accept waits in Go's poller: on wasip1 a
	// blocking accept would stop the whole module (one thread) and every
	// connection with it. On Linux, FileListener sets it anyway.
	if err := syscall.SetNonblock(fd, true); err != nil {
		return nil, fmt.Errorf("descriptor %d: %w", fd, err)
	}
	f := os.NewFile(uintptr(fd), "fd:"+strconv.Itoa(fd))
	if f == nil {
		return nil, fmt.Errorf("descriptor %d is not open", fd)
	}
	// FileListener serves a duplicate; the inherited descriptor is closed.
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			err = errno // the reason, without Go's wrapping of the call
		}
		return nil, fmt.Errorf("descriptor %d is not a listening socket: %w", fd, err)
	}
	if err := checkListening(ln); err != nil {
		ln.Close()
		return nil, fmt.Errorf("descriptor %d is not a listening socket: %w", fd, err)
	}
	return fdListener{ln, fdAddr(f.Name())}, nil
}

// fdListener is an inherited listener. Its address is the socket's own where
// the platform tells it, else the fd:N it was given (wasip1 tells none).
type fdListener struct {
	net.Listener
	name fdAddr
}

func (l fdListener) Addr() net.Addr {
	a := l.Listener.Addr()
	if ta, ok := a.(*net.TCPAddr); a == nil || ok && ta.Port == 0 {
		return l.name
	}
	return a
}

type fdAddr string

func (fdAddr) Network() string  { return "fd" }
func (a fdAddr) String() string { return string(a) }

func newLogger(cfg config, w io.Writer) *slog.Logger {
	lvl, _ := cfg.level()
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
