package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/stretchr/testify/require"
)

// sidecarBin is the binary under test, built once by TestMain.
var sidecarBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "prepkey-e2e")
	if err != nil {
		panic(err)
	}
	sidecarBin = filepath.Join(dir, "sidecar")
	build := exec.Command("go", "build", "-o", sidecarBin, "../cmd/sidecar")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the sidecar:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sidecar is one running sidecar process.
type sidecar struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}

	mu  sync.Mutex
	log strings.Builder
}

var servingRE = regexp.MustCompile(`msg=serving listen=(\S+)`)

// start runs the sidecar with args (plus --listen 127.0.0.1:0 unless args
// set --listen) and waits until it serves. It is killed at cleanup.
func start(t testing.TB, args ...string) *sidecar {
	t.Helper()
	if wasm != nil {
		return wasm.start(t, args) // TestWasm: the module under the wazero host
	}
	if !strings.Contains(strings.Join(args, " "), "--listen") {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	return launch(t, exec.Command(sidecarBin, args...), "")
}

// harnessFreeEnv is the test's environment less the test harness's own
// PK_TEST_* variables (scripts/test.sh exports the test servers' addresses):
// a sidecar reads none of them, and it warns at start about every PK_*
// variable that names no flag, as it should for a user's typo.
func harnessFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PK_TEST_") {
			env = append(env, kv)
		}
	}
	return env
}

// launch starts cmd, a sidecar, and waits until it serves; its address is
// addr, or else the one it logs.
func launch(t testing.TB, cmd *exec.Cmd, addr string) *sidecar {
	t.Helper()
	s := &sidecar{cmd: cmd, done: make(chan struct{})}
	s.cmd.Env = append(append(harnessFreeEnv(), "PK_LOG_FORMAT=text"), cmd.Env...)
	stderr, err := s.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, s.cmd.Start())
	served := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				served <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.kill() })
	select {
	case s.addr = <-served:
		if addr != "" {
			s.addr = addr
		}
	case <-s.done:
		t.Fatalf("sidecar exited before serving: %s", s.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("sidecar did not serve within 30s: %s", s.logs())
	}
	return s
}

func (s *sidecar) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *sidecar) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// client returns a go-redis client speaking RESP proto (2 or 3).
func (s *sidecar) client(t testing.TB, proto int, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: s.addr, Protocol: proto, DisableIdentity: false, MaxRetries: -1}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// raw is a plain TCP connection for byte-exact checks.
type raw struct {
	t  testing.TB
	nc net.Conn
	rd *bufio.Reader
	// wait bounds each expect; slow backends (FerretDB) need more.
	wait time.Duration
}

func (s *sidecar) raw(t testing.TB) *raw {
	t.Helper()
	nc, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, rd: bufio.NewReader(nc), wait: 5 * time.Second}
}

// resp encodes args as one RESP request.
func resp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (r *raw) send(s string) {
	r.t.Helper()
	_, err := r.nc.Write([]byte(s))
	require.NoError(r.t, err)
}

// expect reads exactly len(want) bytes and compares them.
func (r *raw) expect(want string) {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(r.wait))
	got := make([]byte, len(want))
	_, err := io.ReadFull(r.rd, got)
	require.NoError(r.t, err, "reading %q", want)
	require.Equal(r.t, want, string(got))
}

// do sends one command and compares the exact reply bytes.
func (r *raw) do(want string, args ...string) {
	r.t.Helper()
	r.send(resp(args...))
	r.expect(want)
}

// closed asserts the server closed the connection.
func (r *raw) closed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.rd.ReadByte()
	require.ErrorIs(r.t, err, io.EOF)
}

// backendCase is one backend the end-to-end tests run on.
type backendCase struct {
	name string
	args func(t testing.TB) []string
}

// backends are the backends to test: memory and file always (memory only
// with -short); Redis and MongoDB when the scripts that start them set
// their variables (CI always does; see scripts/test.sh).
func backends(t testing.TB) []backendCase {
	list := []backendCase{
		{"memory", func(testing.TB) []string { return []string{"--backend", "memory:"} }},
	}
	if wasm != nil {
		// memory: is the plain module's only backend; the socket module
		// reaches a Redis too (TestWasmSock).
		if u := wasm.redisURL; u != "" {
			list = append(list, backendCase{"redis", func(testing.TB) []string {
				return []string{"--backend", u, "--redis-key-prefix", fmt.Sprintf("pk-e2e-%d:", time.Now().UnixNano())}
			}})
		}
		return list
	}
	if testing.Short() {
		// The fast tier runs the binary's cases on memory: only; the
		// backends have their own packages' tests, and make test runs
		// these on every one.
		return list
	}
	list = append(list, backendCase{"file", func(t testing.TB) []string { return []string{"--backend", "file:" + t.TempDir()} }})
	for _, v := range []struct{ name, env, flag string }{
		{"redis", "PREPKEY_REDIS_URL", "--redis-key-prefix"},
		{"redis-cluster", "PREPKEY_REDIS_CLUSTER_URL", "--redis-key-prefix"},
		{"mongo", "PK_TEST_MONGO_URI", ""},
	} {
		url := os.Getenv(v.env)
		if v.name == "mongo" && os.Getenv("MONGO_URI") != "" {
			url = os.Getenv("MONGO_URI")
		}
		if url == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is unset: scripts/test.sh starts that server", v.env)
			}
			continue
		}
		list = append(list, backendCase{v.name, func(t testing.TB) []string {
			args := []string{"--backend", url}
			if v.name == "mongo" {
				// a database of its own, so runs never share records
				db, err := mongo.WithDatabase(url, fmt.Sprintf("e2e_%d", time.Now().UnixNano()))
				require.NoError(t, err)
				args[1] = db
			}
			if v.flag != "" {
				args = append(args, v.flag, fmt.Sprintf("pk-e2e-%d:", time.Now().UnixNano()))
			}
			return args
		}})
	}
	return list
}

// eachBackend runs f on a fresh sidecar per backend.
func eachBackend(t *testing.T, f func(t *testing.T, s *sidecar)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, start(t, b.args(t)...))
		})
	}
}

// uniqueNS returns a namespace no other test uses, so tests can share a
// backend server.
func uniqueNS(t testing.TB) string {
	return fmt.Sprintf("t%d", time.Now().UnixNano())
}

func ctx() context.Context { return context.Background() }
