// Command wasmhost runs prepkey's WebAssembly build (prepkey.wasm, `make
// wasm`) in-process with wazero: no cgo, no container, no other service. It
// is also the example of embedding prepkey as a plugin in a Go program: run
// is all it takes (docs/wasm.md).
//
//	wasmhost [-wasm prepkey.wasm] [-listen 127.0.0.1:6380] [-dir DIR] [-cache DIR] [-max-memory MiB] [--] [prepkey flags...]
//
// The host opens the listening socket and serves it, and the connections
// it accepts, from its own socket table (sock.go), passing the module
// --listen fd:N; the flags
// after the host's own are prepkey's (e.g. --backend memory: --requirepass
// pw), and PK_* variables of the host's environment are passed on. It exits
// with the module's exit code.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"
)

// options are what the host is told; args are prepkey's own flags.
type options struct {
	wasm   string
	listen string
	dir    string // preopened as /data when set
	cache  string // wazero's compilation cache; "" for none
	// maxMemory bounds the module's memory, in MiB (0: wasm32's 4 GiB).
	maxMemory uint64
	// compileOnly compiles the module into the cache and exits: a host
	// image or a test warms the cache once.
	compileOnly bool
	args        []string
}

func main() {
	var o options
	fs := flag.NewFlagSet("wasmhost", flag.ExitOnError)
	fs.StringVar(&o.wasm, "wasm", "prepkey.wasm", "the module to run")
	fs.StringVar(&o.listen, "listen", "127.0.0.1:6380", "host:port the host listens on and preopens for the module")
	fs.StringVar(&o.dir, "dir", "", "a host directory to preopen for the module as /data")
	fs.StringVar(&o.cache, "cache", defaultCache(), "directory of wazero's compilation cache (\"\": compile at every start)")
	fs.Uint64Var(&o.maxMemory, "max-memory", 0, "the most memory the module may grow to, in MiB (0: 4096, all a wasm32 module can address)")
	fs.BoolVar(&o.compileOnly, "compile", false, "compile the module into the cache and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: wasmhost [flags] [--] [prepkey flags...]\n\nRuns prepkey.wasm under wazero.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	_ = fs.Parse(os.Args[1:])
	o.args = fs.Args()

	// WASI has no signals: the module is closed when one arrives.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// WASMHOST_CPUPROFILE=FILE profiles the host, the module's machine
	// code with it, until it exits (go tool pprof).
	if path := os.Getenv("WASMHOST_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "wasmhost: WASMHOST_CPUPROFILE: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	code, err := run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "wasmhost: %v\n", err)
	}
	if code != 0 {
		os.Exit(code)
	}
}

// run instantiates the module with its socket, directory and arguments and
// returns its exit code once it exits or ctx ends (then 0).
func run(ctx context.Context, o options) (int, error) {
	bin, err := os.ReadFile(o.wasm)
	if err != nil {
		return 2, err
	}
	rc := wazero.NewRuntimeConfig()
	if o.cache != "" {
		// Compiling the module to machine code takes seconds; the cache
		// makes later starts take milliseconds.
		cache, err := wazero.NewCompilationCacheWithDir(o.cache)
		if err != nil {
			return 2, err
		}
		defer cache.Close(ctx)
		rc = rc.WithCompilationCache(cache)
	}
	// The module is stopped from its poll_oneoff (sock.go), so it runs
	// without WithCloseOnContextDone, whose exit checks in every loop and
	// call were about a third of the module's time (issue 34).
	r := wazero.NewRuntimeWithConfig(ctx, rc)
	defer r.Close(context.Background())
	compiled, err := r.CompileModule(ctx, bin)
	if err != nil || o.compileOnly {
		return 2 * btoi(err != nil), err
	}
	// The module's memory is reserved once and never copied (memory.go).
	mem, err := reserveMemory(o.maxMemory << 20)
	if err != nil {
		return 1, err
	}
	defer mem.Free()
	if err := mem.check(compiled); err != nil {
		return 2, fmt.Errorf("%s: %w", o.wasm, err)
	}
	ctx = experimental.WithMemoryAllocator(ctx, mem)
	// The host serves the listener and the client sockets from its own
	// socket table (sock.go), for both modules: the plain one (make wasm)
	// uses its fd_read, fd_write, sock_accept, poll_oneoff; the socket
	// module (make wasm-sock) the WasmEdge socket ABI too. Under wazero's
	// own WASI and listener (wazero's poll_oneoff reports a socket ready
	// at once, and the exit checks its stop needs) the plain module took
	// 81 µs of CPU per request, here 37 (issue 34).
	var c calls
	if os.Getenv("WASMHOST_COUNT") != "" {
		c = calls{}
		defer c.report(os.Stderr)
	}
	socks, err := newSockets(ctx, r, c)
	if err != nil {
		return 1, err
	}
	defer socks.close()
	if err := socks.instantiate(ctx, r); err != nil {
		return 1, err
	}
	fd, err := socks.listen(o.listen)
	if err != nil {
		return 2, fmt.Errorf("-listen %q: %w", o.listen, err)
	}
	// A --listen of the caller's own, later, wins (flag parsing).
	args := append([]string{"--listen", "fd:" + strconv.Itoa(int(fd))}, o.args...)

	mc := wazero.NewModuleConfig().
		WithArgs(append([]string{"prepkey"}, args...)...).
		WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader)
	for _, kv := range os.Environ() {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PK_") {
			mc = mc.WithEnv(k, v)
		}
	}
	if o.dir != "" {
		mc = mc.WithFSConfig(wazero.NewFSConfig().WithDirMount(o.dir, "/data"))
	}

	_, err = r.InstantiateModule(ctx, compiled, mc)
	var exit *sys.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && ctx.Err() != nil:
		return 0, nil // closed on a signal
	case errors.As(err, &exit):
		return int(exit.ExitCode()), nil
	default:
		return 1, err
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func defaultCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "prepkey-wasmhost")
}
