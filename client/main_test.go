package client_test

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
	"github.com/stretchr/testify/require"
)

// The tests run the package against the real sidecar: TestMain builds
// ./cmd/sidecar once, each test starts the sidecars it needs (the pattern of
// e2e/helpers_test.go, not imported across packages).

// sidecarBin is the binary under test, built once by TestMain.
var sidecarBin string

// password is every test sidecar's --requirepass, as clients/run.sh runs
// them: go-redis sends it with its HELLO (RESP3) or AUTH (RESP2).
const password = "pw"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "prepkey-client")
	if err != nil {
		panic(err)
	}
	sidecarBin = filepath.Join(dir, "sidecar")
	// The sidecar is the parent module's (github.com/prepkey/prepkey), built
	// from its directory: this module does not require it, so that a program
	// using the client pulls go-redis only.
	build := exec.Command("go", "build", "-C", "..", "-o", sidecarBin, "./cmd/sidecar")
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

// start runs the sidecar with args on 127.0.0.1:0 with the test password and
// waits until it serves. It is killed at cleanup.
func start(t testing.TB, args ...string) *sidecar {
	t.Helper()
	args = append(args, "--listen", "127.0.0.1:0", "--requirepass", password)
	s := &sidecar{cmd: exec.Command(sidecarBin, args...), done: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), "PK_LOG_FORMAT=text")
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
	t.Cleanup(s.kill)
	select {
	case s.addr = <-served:
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

// client returns a go-redis client on s speaking RESP proto (2 or 3), with
// rec as its hook. MaxRetries -1: a test sees each command once.
func (s *sidecar) client(t testing.TB, proto int, rec *recorder) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.addr, Password: password, Protocol: proto, MaxRetries: -1})
	c.AddHook(rec)
	t.Cleanup(func() { c.Close() })
	return c
}

// backend is a backend the sidecar runs on in the tests.
type backend struct {
	name string
	args func(t testing.TB) []string
}

// backends are memory: and, when PREPKEY_REDIS_URL is set (scripts/test.sh
// and make test set it), a real Redis with a key prefix of its own.
func backends(t *testing.T) []backend {
	list := []backend{{"memory", func(testing.TB) []string { return []string{"--backend", "memory:"} }}}
	url := os.Getenv("PREPKEY_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PREPKEY_REDIS_URL is unset: scripts/test.sh starts that server")
		}
		t.Log("PREPKEY_REDIS_URL is unset: the redis:// backend is skipped (scripts/test.sh starts a Redis and sets it)")
		return list
	}
	return append(list, backend{"redis", func(testing.TB) []string {
		return []string{"--backend", url, "--redis-key-prefix", fmt.Sprintf("pk-client-%d:", time.Now().UnixNano())}
	}})
}

// target is one sidecar reached through one go-redis client.
type target struct {
	s   *sidecar
	rdb *redis.Client
	rec *recorder
}

// eachTarget runs f on a fresh sidecar per backend, reached in RESP2 and in
// RESP3.
func eachTarget(t *testing.T, f func(t *testing.T, tg target)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b.args(t)...)
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
					rec := &recorder{}
					f(t, target{s: s, rdb: s.client(t, proto, rec), rec: rec})
				})
			}
		})
	}
}

// uniqueNS returns a namespace no other test uses.
func uniqueNS(t testing.TB) string {
	return fmt.Sprintf("t%d", time.Now().UnixNano())
}

// closedPort returns an address on which nothing listens.
func closedPort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// recorder is a go-redis hook that records the PK commands sent and lets a
// test wrap their processing (around), to inject a failure or a
// cancellation where a real sidecar cannot be made to give one on demand.
type recorder struct {
	mu     sync.Mutex
	sent   [][]any
	around func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			r.note(c)
		}
		return next(ctx, cmds)
	}
}

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		around := r.around
		r.mu.Unlock()
		if around != nil && strings.HasPrefix(cmd.Name(), "pk.") {
			return around(ctx, cmd, func(ctx context.Context, cmd redis.Cmder) error {
				r.note(cmd)
				return next(ctx, cmd)
			})
		}
		r.note(cmd)
		return next(ctx, cmd)
	}
}

func (r *recorder) note(cmd redis.Cmder) {
	if !strings.HasPrefix(cmd.Name(), "pk.") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, cmd.Args())
}

// setAround sets the wrapper of the PK commands' processing (nil: none).
func (r *recorder) setAround(f func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.around = f
}

// take returns the commands sent since the last take, each as its words
// ([]byte values as strings), and forgets them.
func (r *recorder) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, 0, len(r.sent))
	for _, args := range r.sent {
		words := make([]string, len(args))
		for i, a := range args {
			switch v := a.(type) {
			case []byte:
				words[i] = string(v)
			default:
				words[i] = fmt.Sprint(v)
			}
		}
		out = append(out, words)
	}
	r.sent = nil
	return out
}

// names returns the names of the commands sent since the last take.
func (r *recorder) names() []string {
	var out []string
	for _, words := range r.take() {
		out = append(out, words[0])
	}
	return out
}

// testContext is t.Context (Go 1.24) for this module's go 1.23 line: a
// context cancelled when the test ends.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}
