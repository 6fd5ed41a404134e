package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wasm, when set, has start run the WebAssembly build under the wazero host
// (tools/wasmhost) instead of the native binary; set only by TestWasm,
// while the tests it runs run.
var wasm *wasmRun

type wasmRun struct {
	host, module, cache string
	// redisURL, when set, adds a Redis backend to the tests' backends
	// (TestWasmSock: the socket module reaches it through the host).
	redisURL string
}

// start runs the module with args under the host, which listens on a free
// port and preopens it; the module serves on it (fd:auto).
func (w *wasmRun) start(t testing.TB, args []string) *sidecar {
	t.Helper()
	for _, a := range args {
		require.False(t, strings.HasPrefix(a, "--listen"), "the host opens the module's socket")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	hostArgs := append([]string{"-wasm", w.module, "-cache", w.cache, "-listen", addr, "--"}, args...)
	return launch(t, exec.Command(w.host, hostArgs...), addr)
}

// TestWasm builds prepkey.wasm (GOOS=wasip1) and the wazero host, and runs
// the end-to-end tests that apply to it through the host's socket: every PK
// command in RESP2 and RESP3 (go-redis), TTLs, binary safety, limits, exact
// wire bytes, INFO, AUTH, hostile input (the framing guard), pipelines of
// 1,000 commands, a race of 64 connections, redis-cli, transactions, the
// input bounds and the idle timeout. Not run here: TestConnectionCommands
// (WASI preview 1 tells no socket addresses: CLIENT LIST shows addr=:0) and
// TestPreAuthMemory (it reads the process's RSS: the host's, with wazero's
// compiler and the module's memory, which never shrinks).
func TestWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WebAssembly module and its host")
	}
	dir := t.TempDir()
	// wazero's compilation cache is kept where the host keeps it, next to
	// Go's build cache: it is keyed by the module's hash and wazero's
	// version, and saves the compile (17-57 s here) on later runs.
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	w := &wasmRun{host: filepath.Join(dir, "wasmhost"), module: filepath.Join(dir, "prepkey.wasm"), cache: filepath.Join(cache, "prepkey-wasmhost")}
	build := exec.Command("go", "build", "-o", w.module, "../cmd/sidecar")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make wasm: %s", out)
	// The host is a module of its own, so that wazero is no dependency of
	// the sidecar's.
	out, err = exec.Command("go", "build", "-C", "../tools/wasmhost", "-o", w.host, ".").CombinedOutput()
	require.NoError(t, err, "building tools/wasmhost: %s", out)

	// Compiling the module to machine code takes seconds (more on a busy
	// machine); once in the cache, each start takes milliseconds.
	out, err = exec.Command(w.host, "-wasm", w.module, "-cache", w.cache, "-compile").CombinedOutput()
	require.NoError(t, err, "compiling the module: %s", out)

	wasm = w
	defer func() { wasm = nil }()
	for _, tc := range wasmSuite() {
		t.Run(tc.name, tc.test)
	}
	t.Run("Refused", func(t *testing.T) {
		// What the module cannot do is refused at start-up with one line
		// and exit code 2; a socket it would open, too (Go's net.Listen
		// on wasip1 gives an in-process fake that no client reaches).
		const noSockets = "the WebAssembly build cannot open sockets: the host preopens one, and the module serves on it with --listen fd:N or fd:auto (docs/wasm.md)\n"
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--backend", "file:/data"}, "sidecar: --backend file:/data: the file: backend is not in the WebAssembly build: its store (pebble) does not build for wasip1; use memory: (docs/wasm.md)\n"},
			{[]string{"--backend", "redis://127.0.0.1:6379"}, "sidecar: --backend: the redis backend is not in this WebAssembly build: WASI preview 1 cannot open connections; build the socket-capable module (make wasm-sock, -tags wasmsock) and run it under a host with the WasmEdge socket ABI (tools/wasmhost, WasmEdge), or use memory: (docs/wasm.md)\n"},
			{[]string{"--backend", "mongodb://127.0.0.1"}, "sidecar: --backend: the mongodb backend is not in the WebAssembly build: WASI preview 1 cannot open connections; use memory: (docs/wasm.md)\n"},
			{[]string{"--backend", "memory:", "--listen", "127.0.0.1:6380"}, "sidecar: --listen 127.0.0.1:6380: " + noSockets},
			{[]string{"--backend", "memory:", "--admin-listen", "127.0.0.1:9090"}, "sidecar: --admin-listen 127.0.0.1:9090: " + noSockets},
		} {
			cmd := exec.Command(w.host, append([]string{"-wasm", w.module, "-cache", w.cache, "-listen", "127.0.0.1:0", "--"}, c.args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "%s", out)
			require.Equal(t, 2, exit.ExitCode(), "%s", out)
			require.Equal(t, c.want, string(out))
		}
	})
}

// TestListenFD serves on a listening socket passed to the process, as a
// service manager passes it: fd:3, and fd:auto with systemd's LISTEN_FDS
// and LISTEN_PID; a descriptor that does not listen is refused.
func TestListenFD(t *testing.T) {
	inherit := func(t *testing.T) (*os.File, string) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		f, err := ln.(*net.TCPListener).File()
		require.NoError(t, err)
		ln.Close() // the child holds the socket now
		t.Cleanup(func() { f.Close() })
		return f, ln.Addr().String()
	}
	t.Run("fd:3", func(t *testing.T) {
		f, addr := inherit(t)
		cmd := exec.Command(sidecarBin, "--backend", "memory:", "--listen", "fd:3")
		cmd.ExtraFiles = []*os.File{f}
		s := launch(t, cmd, "")
		require.Equal(t, addr, s.addr) // the logged address is the socket's
		check(t, s.client(t, 3), int64(1), "PK.PREPARE", "ns", "k", "v")
		check(t, s.client(t, 2), "v", "PK.GET", "ns", "k")
	})
	t.Run("fd:auto", func(t *testing.T) {
		f, addr := inherit(t)
		// LISTEN_PID is the sidecar's own: the shell's, which execs it.
		cmd := exec.Command("sh", "-c", `LISTEN_PID=$$ exec "$0" --backend memory: --listen fd:auto`, sidecarBin)
		cmd.Env = []string{"LISTEN_FDS=1"}
		cmd.ExtraFiles = []*os.File{f}
		s := launch(t, cmd, "")
		require.Equal(t, addr, s.addr)
		check(t, s.client(t, 2), "PONG", "PING")
	})
	refused := func(t *testing.T, want string, env []string, files []*os.File, listen string) {
		t.Helper()
		cmd := exec.Command(sidecarBin, "--backend", "memory:", "--listen", listen)
		cmd.Env, cmd.ExtraFiles = append(os.Environ(), env...), files
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 2, exit.ExitCode())
		require.Equal(t, "sidecar: --listen "+listen+": "+want+"\n", string(out))
	}
	t.Run("refused", func(t *testing.T) {
		// a socket that is connected, not listening
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		cf, err := nc.(*net.TCPConn).File()
		require.NoError(t, err)
		defer cf.Close()
		refused(t, "descriptor 3 is not a listening socket: it does not listen", nil, []*os.File{cf}, "fd:3")
		// a file
		ff, err := os.Open(sidecarBin)
		require.NoError(t, err)
		defer ff.Close()
		refused(t, "descriptor 3 is not a listening socket: socket operation on non-socket", nil, []*os.File{ff}, "fd:3")
		refused(t, "fd:auto: no socket was passed (LISTEN_FDS and LISTEN_PID unset or for another process)", []string{"LISTEN_FDS=1", "LISTEN_PID=1"}, nil, "fd:auto")
		refused(t, "want fd:N with N a descriptor number, or fd:auto", nil, nil, "fd:x")
	})
}

// wasmSuite is the end-to-end tests that apply to the WebAssembly build
// (TestWasm says which do not, and why).
func wasmSuite() []struct {
	name string
	test func(*testing.T)
} {
	return []struct {
		name string
		test func(*testing.T)
	}{
		{"Commands", TestCommands},
		{"TTL", TestTTL},
		{"BinarySafe", TestBinarySafe},
		{"Limits", TestLimits},
		{"WireBytes", TestWireBytes},
		{"Info", TestInfo},
		{"Auth", TestAuth},
		{"HostileInput", TestHostileInput},
		{"Pipeline", TestPipeline},
		{"Race", TestRace},
		{"RedisCLI", TestRedisCLI},
		{"Transactions", TestTransactions},
		{"TransactionsRaw", TestTransactionsRaw},
		{"TransactionsIsolated", TestTransactionsIsolated},
		{"IntegerArguments", TestIntegerArguments},
		{"CrossProtocol", TestCrossProtocol},
		{"CommandsBeforeFramingError", TestCommandsBeforeFramingError},
		{"AuthLiftsFramingLimits", TestAuthLiftsFramingLimits},
		{"IdleTimeout", TestIdleTimeout},
	}
}
