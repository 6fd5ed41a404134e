package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// ownRedis is a redis-server of a test's own (appendfsync always), so
// that the test may kill it and start it again on the same port and data.
type ownRedis struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func startRedisServer(t *testing.T, dir string, port int) *ownRedis {
	t.Helper()
	r := &ownRedis{dir: dir, port: port, done: make(chan struct{})}
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always")
	out, err := r.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				close(ready)
			}
		}
	}()
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(r.kill)
	select {
	case <-ready:
	case <-r.done:
		t.Fatal("redis-server exited at start")
	case <-time.After(30 * time.Second):
		t.Fatal("redis-server not ready within 30s")
	}
	return r
}

func (r *ownRedis) kill() {
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	<-r.done
}

// buildWasmSock builds the socket-capable module (-tags wasmsock) and the
// host, and compiles the module into the host's cache.
func buildWasmSock(t *testing.T) *wasmRun {
	t.Helper()
	dir := t.TempDir()
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	w := &wasmRun{host: filepath.Join(dir, "wasmhost"), module: filepath.Join(dir, "prepkey-sock.wasm"), cache: filepath.Join(cache, "prepkey-wasmhost")}
	build := exec.Command("go", "build", "-tags", "wasmsock", "-o", w.module, "../cmd/sidecar")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "make wasm-sock: %s", out)
	out, err = exec.Command("go", "build", "-C", "../tools/wasmhost", "-o", w.host, ".").CombinedOutput()
	require.NoError(t, err, "building tools/wasmhost: %s", out)
	out, err = exec.Command(w.host, "-wasm", w.module, "-cache", w.cache, "-compile").CombinedOutput()
	require.NoError(t, err, "compiling the module: %s", out)
	return w
}

// TestWasmRedis runs the socket-capable module (make wasm-sock) under the
// host on a real redis-server, reached by name (localhost: the host's
// resolver through sock_getaddrinfo): the PK commands' exact replies, the
// records in Redis itself, and a Redis killed (SIGKILL) and started again
// under load: the module reconnects by itself, answers -UNAVAILABLE
// meanwhile (never :0), and every acknowledged reservation is still there.
func TestWasmRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WebAssembly module and its host")
	}
	requireRedisServer(t)
	w := buildWasmSock(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	rs := startRedisServer(t, t.TempDir(), port)
	direct := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	t.Cleanup(func() { direct.Close() })

	s := w.start(t, []string{"--backend", fmt.Sprintf("redis://localhost:%d", port), "--backend-timeout", "500ms"})
	c := s.client(t, 2)
	ns := uniqueNS(t)
	check(t, c, int64(1), "PK.PREPARE", ns, "alice", `{"userId":"42"}`)
	check(t, c, `{"userId":"42"}`, "PK.GET", ns, "alice")
	check(t, c, int64(0), "PK.PREPARE", ns, "alice", "other")
	// The record is in Redis, not in the module's memory.
	n, err := direct.Exists(ctx(), "pk:{"+ns+":alice}").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	check(t, c, int64(0), "PK.ROLLBACK", ns, "alice", "IFEQ", "other")
	check(t, c, int64(1), "PK.ROLLBACK", ns, "alice")
	check(t, c, nilReply, "PK.GET", ns, "alice")
	check(t, c, int64(0), "PK.ROLLBACK", ns, "alice")

	t.Run("RedisRestarted", func(t *testing.T) {
		// One client prepares unique keys without pause; Redis is killed
		// after 50 acknowledgements and started again; the load stops
		// after 50 more, which the module can give only by reconnecting.
		var (
			mu      sync.Mutex
			acked   []string
			bad     error
			target  = 50 // acknowledgements to signal on phase
			phase   = make(chan struct{}, 2)
			stop    = make(chan struct{})
			stopped = make(chan struct{})
		)
		go func() {
			defer close(stopped)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("k%d", i)
				got, err := c.Do(ctx(), "PK.PREPARE", ns, key, "v"+key).Result()
				mu.Lock()
				switch {
				case err == nil && got == int64(1):
					acked = append(acked, key)
					if len(acked) == target {
						phase <- struct{}{}
					}
				case err != nil && strings.HasPrefix(err.Error(), "UNAVAILABLE"):
					// Redis is down: not acknowledged.
				default:
					bad = fmt.Errorf("PK.PREPARE %s: %v %v", key, got, err)
				}
				mu.Unlock()
			}
		}()
		<-phase
		rs.kill()
		// Until Redis is back, the module answers -UNAVAILABLE.
		_, err := c.Do(ctx(), "PK.GET", ns, "k0").Result()
		require.ErrorContains(t, err, "UNAVAILABLE ")
		require.True(t, strings.HasPrefix(err.Error(), "UNAVAILABLE "), "%v", err)
		mu.Lock()
		before := len(acked)
		target = before + 50
		mu.Unlock()
		rs = startRedisServer(t, rs.dir, rs.port)
		select {
		case <-phase:
		case <-time.After(60 * time.Second):
			t.Fatal("no acknowledgement after Redis was started again: the module did not reconnect")
		}
		close(stop)
		<-stopped
		require.NoError(t, bad)
		require.Greater(t, len(acked), before)
		for _, key := range acked {
			check(t, c, "v"+key, "PK.GET", ns, key)
		}
		n, err = direct.Exists(ctx(), "pk:{"+ns+":"+acked[len(acked)-1]+"}").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	})
}

// TestWasmSock runs TestWasm's end-to-end tests on the socket module
// (make wasm-sock) under the host, whose own fd_read, fd_write, fd_close,
// sock_accept, sock_shutdown and poll_oneoff then serve every client
// socket: on memory:, and on the shared Redis (PREPKEY_REDIS_URL, which
// scripts/test.sh sets) where a test runs on every backend.
func TestWasmSock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WebAssembly module and its host")
	}
	w := buildWasmSock(t)
	w.redisURL = os.Getenv("PREPKEY_REDIS_URL")
	if w.redisURL == "" && os.Getenv("CI") == "true" {
		t.Fatal("CI=true but PREPKEY_REDIS_URL is unset: scripts/test.sh starts that server")
	}
	wasm = w
	defer func() { wasm = nil }()
	for _, tc := range wasmSuite() {
		t.Run(tc.name, tc.test)
	}
}

// TestWasmSockLinearizable runs the linearizability check on a Redis of
// its own, with its faults (SCRIPT FLUSH, CLIENT KILL, SIGSTOP past the
// backend timeout, kill -9 and restart), against the socket module.
func TestWasmSockLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the WebAssembly module and its host")
	}
	requireRedisServer(t)
	w := buildWasmSock(t)
	wasm = w
	defer func() { wasm = nil }()
	// The group returns once its parallel test is done: wasm is still set.
	t.Run("group", func(t *testing.T) {
		t.Run("Redis", TestLinearizableRedis)
	})
}
