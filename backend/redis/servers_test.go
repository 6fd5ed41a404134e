package redis

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Variables printed by scripts/redis-servers.sh up.
const (
	envStandalone = "PREPKEY_REDIS_URL"
	envCluster    = "PREPKEY_REDIS_CLUSTER_URL"
	envSentinel   = "PREPKEY_REDIS_SENTINEL_URL"
)

// serverURL returns the URL of a real server from the environment. Without
// it the test is skipped, except under CI=true (see lookupServer).
func serverURL(t testing.TB, name string) string {
	t.Helper()
	url, ok := lookupServer(t, name)
	if !ok {
		t.Skipf(`%s is not set: run eval "$(scripts/redis-servers.sh up DIR)" first`, name)
	}
	return url
}

// lookupServer returns the URL of a real server from the environment and
// whether it is set. Under CI=true a missing server fails the test, so
// that CI never skips silently.
func lookupServer(t testing.TB, name string) (string, bool) {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v, true
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf(`%s is not set under CI=true: run eval "$(scripts/redis-servers.sh up DIR)" first`, name)
	}
	return "", false
}

// needBinary skips (or under CI fails) a test that starts its own servers
// when redis-server is not installed.
func needBinary(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("redis-server is not on PATH")
	}
	t.Skip("redis-server is not on PATH (apt-get install redis-server)")
}

// proc is a redis-server (or sentinel) started by a test.
type proc struct {
	port int
	dir  string
	args []string
	cmd  *exec.Cmd
}

// startRedis starts a redis-server on a free port in a temporary directory;
// cleanup kills it. extra is appended to the command line.
func startRedis(t *testing.T, extra ...string) *proc {
	t.Helper()
	needBinary(t)
	p := &proc{port: freePort(t), dir: t.TempDir()}
	p.args = append([]string{"--port", fmt.Sprint(p.port), "--bind", "127.0.0.1",
		"--dir", p.dir, "--save", "", "--appendonly", "no"}, extra...)
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

// startSentinel starts a sentinel watching the master "mymaster" on
// masterPort, with short timeouts so a failover takes about two seconds.
func startSentinel(t *testing.T, masterPort int) *proc {
	t.Helper()
	needBinary(t)
	p := &proc{port: freePort(t), dir: t.TempDir()}
	conf := filepath.Join(p.dir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil,
		"port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor mymaster 127.0.0.1 %d 1\n"+
			"sentinel down-after-milliseconds mymaster 500\n"+
			"sentinel failover-timeout mymaster 3000\n", p.port, p.dir, masterPort), 0o600))
	p.args = []string{conf, "--sentinel"}
	p.start(t)
	t.Cleanup(p.kill)
	return p
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command("redis-server", p.args...)
	p.cmd.Stdout, p.cmd.Stderr = nil, nil
	require.NoError(t, p.cmd.Start())
	require.Eventually(t, func() bool { return p.ping() == nil }, 10*time.Second, 20*time.Millisecond,
		"redis-server %v did not answer", p.args)
}

// kill stops the server at once (SIGKILL), like a crash.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

func (p *proc) addr() string { return fmt.Sprintf("127.0.0.1:%d", p.port) }

// client returns a go-redis client on the server, for checks and admin.
func (p *proc) client(t testing.TB) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: p.addr(), DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, MaxRetries: -1, Protocol: 2})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (p *proc) ping() error {
	c := goredis.NewClient(&goredis.Options{Addr: p.addr(), DialTimeout: time.Second, MaxRetries: -1, Protocol: 2})
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

// freePort asks the kernel for a free port. Another process may take it
// before the server binds it; the server then fails to start and the test
// fails loudly rather than talking to a stranger.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// openStore opens a Store on url with a fresh key prefix, so tests sharing
// one server never see each other's keys.
func openStore(t testing.TB, url string, cfg Config) *Store {
	t.Helper()
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = fmt.Sprintf("pktest:%s:%d:", t.Name(), time.Now().UnixNano())
	}
	s, err := Open(context.Background(), url, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}
