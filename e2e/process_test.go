package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestKill9 acknowledges 2,000 reservations from 16 clients on file:, kills
// the sidecar with SIGKILL, restarts it on the same directory and finds
// every one with its value and ttlAt.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills sidecars under load, round after round")
	}
	dir := t.TempDir()
	s := start(t, "--backend", "file:"+dir)
	const clients, each = 16, 125
	type acked struct {
		key, value string
		ttl        bool
	}
	var mu sync.Mutex
	var all []acked
	var wg sync.WaitGroup
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: s.addr, PoolSize: 1})
			defer c.Close()
			for i := range each {
				a := acked{key: fmt.Sprintf("user-%d-%d", w, i), value: fmt.Sprintf(`{"w":%d,"i":%d}`, w, i), ttl: i%2 == 0}
				args := []any{"PK.PREPARE", "kill9", a.key, a.value}
				if a.ttl {
					args = append(args, "PXAT", "4102444800000") // 2100-01-01
				}
				n, err := c.Do(ctx(), args...).Int64()
				if err != nil || n != 1 {
					t.Errorf("%s: %d %v", a.key, n, err)
					return
				}
				mu.Lock()
				all = append(all, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, all, clients*each)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.done

	again := start(t, "--backend", "file:"+dir)
	c := again.client(t, 2)
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(all))
	for i, a := range all {
		cmds[i] = pipe.Do(ctx(), "PK.GETVALUE", "kill9", a.key)
	}
	_, err := pipe.Exec(ctx())
	require.NoError(t, err)
	for i, a := range all {
		want := []any{a.value, int64(-1)}
		if a.ttl {
			want[1] = int64(4102444800000)
		}
		require.Equal(t, want, cmds[i].Val(), a.key)
	}
}

// TestSIGTERM: the sidecar answers what it has read, closes the store and
// exits 0 within 10 s, with clients still connected.
func TestSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := start(t, "--backend", "file:"+dir)
			idle := s.raw(t)
			idle.do("+PONG\r\n", "PING")
			busy := s.raw(t)
			busy.send(strings.Repeat(resp("PK.PREPARE", "ns", "k", "v"), 100))
			busy.expect(":1\r\n" + strings.Repeat(":0\r\n", 99))
			began := time.Now()
			require.NoError(t, s.cmd.Process.Signal(sig))
			select {
			case <-s.done:
			case <-time.After(10 * time.Second):
				t.Fatal("sidecar still running 10s after the signal")
			}
			require.Less(t, time.Since(began), 10*time.Second)
			require.Equal(t, 0, s.cmd.ProcessState.ExitCode(), s.logs())
			idle.closed()
			// the store was closed cleanly: it opens again at once
			again := start(t, "--backend", "file:"+dir)
			check(t, again.client(t, 2), "v", "PK.GET", "ns", "k")
		})
	}
}

// TestRedisCLI drives the sidecar with redis-cli, as a user would. Off a
// terminal, redis-cli prints an error reply followed by an empty line.
func TestRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-cli is not installed (apt-get install redis-tools)")
		}
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	s := start(t, "--backend", "memory:", "--requirepass", "pw")
	host, port, _ := strings.Cut(s.addr, ":")
	run := func(args ...string) string {
		t.Helper()
		full := append([]string{"-h", host, "-p", port, "--no-auth-warning", "-a", "pw"}, args...)
		out, err := exec.Command(cli, full...).CombinedOutput()
		require.NoError(t, err, string(out))
		return string(out)
	}
	require.Equal(t, "1\n", run("PK.PREPARE", "username", "alice", `{"userId":"42"}`, "EX", "3600"))
	require.Equal(t, "0\n", run("PK.PREPARE", "username", "alice", `{"userId":"7"}`))
	require.Equal(t, `{"userId":"42"}`+"\n", run("PK.GET", "username", "alice"))
	require.Equal(t, "1\n", run("PK.REPREPARE", "username", "alice2", `{"userId":"42"}`, "FROM", "alice", "IFEQ", `{"userId":"42"}`))
	require.Equal(t, "\n", run("PK.GET", "username", "alice"))
	require.Equal(t, "MISMATCH old key has no record with that value\n\n", run("PK.REPREPARE", "username", "x", "v", "FROM", "alice", "IFEQ", "v"))
	require.Equal(t, "ERR syntax error\n\n", run("PK.PREPARE", "username", "bob", "v", "EX"))
	require.Equal(t, "1\n", run("PK.ROLLBACK", "username", "alice2", "IFEQ", `{"userId":"42"}`))
	// -3: redis-cli opens with HELLO 3; off a terminal nil prints as ""
	require.Equal(t, "\n", run("-3", "PK.GETVALUE", "username", "alice2"))
	require.Contains(t, run("-3", "CLIENT", "INFO"), " resp=3 ")
	require.Contains(t, run("CLIENT", "INFO"), " resp=2 ")
	require.Contains(t, run("INFO", "server"), "redis_version:7.2.0")

	// interactive session on stdin, one command a line
	cmd := exec.Command(cli, "-h", host, "-p", port, "--no-auth-warning", "-a", "pw")
	cmd.Stdin = strings.NewReader("PK.PREPARE sku ABC-1 order-9\nPK.GET sku ABC-1\nPK.ROLLBACK sku ABC-1\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, "1\norder-9\n1\n", string(out))

	// without the password
	out, _ = exec.Command(cli, "-h", host, "-p", port, "PK.GET", "sku", "x").CombinedOutput()
	require.Equal(t, "NOAUTH Authentication required.\n\n", string(out))
}

// TestUnixSocket serves on a Unix socket and replaces a stale one.
func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "pk.sock")
	s := start(t, "--backend", "memory:", "--listen", "unix:"+sock)
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	defer c.Close()
	check(t, c, int64(1), "PK.PREPARE", "ns", "k", "v")
	s.kill() // leaves the socket file behind
	s2 := start(t, "--backend", "memory:", "--listen", "unix:"+sock)
	c2 := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	defer c2.Close()
	check(t, c2, "PONG", "PING")
	_ = s2
}

// TestBadStart: a bad flag, environment value or unusable backend is one
// line on stderr and exit 2.
//
// Every case listens on a port of its own (127.0.0.1:0 unless it names
// one), never on the default 127.0.0.1:6380, which the README's
// `go run ./cmd/sidecar` holds while a newcomer runs `make test`: a case
// that reached the listen there failed with "address already in use"
// instead of its own line. The test holds the default port itself while
// it runs (when it is free), so a case that reaches it fails here too.
// defaultListen is the sidecar's native --listen default
// (cmd/sidecar/backends_native.go).
const defaultListen = "127.0.0.1:6380"

func TestBadStart(t *testing.T) {
	if l, err := net.Listen("tcp", defaultListen); err == nil {
		defer l.Close()
	}
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, []byte("x"), 0o600))
	tests := []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--max-key-bytes", "x"}, "", `sidecar: invalid value "x" for flag -max-key-bytes: want bytes, e.g. 64MiB, got "x"`},
		{[]string{"--max-key-bytes", "0"}, "", "sidecar: --max-key-bytes must be at least 1, got 0"},
		{[]string{"--expired-retention", "soon"}, "", `sidecar: invalid value "soon" for flag -expired-retention: want a duration such as 500ms, 2s, 5m or 24h, got "soon"`},
		{[]string{"--log-format", "xml"}, "", `sidecar: --log-format must be text or json, got "xml"`},
		{[]string{"--log-level", "loud"}, "", `sidecar: --log-level must be debug, info, warn or error, got "loud"`},
		{[]string{"--event-loops", "0"}, "", "sidecar: --event-loops must be between 1 and 256, got 0"},
		{[]string{"--file-cache-mb", "0"}, "", "sidecar: --file-cache-mb must be at least 1, got 0"},
		{[]string{"--listen", "127.0.0.1:7000", "--admin-listen", "127.0.0.1:7000"}, "", "sidecar: --admin-listen must differ from --listen: the RESP port never serves HTTP"},
		{[]string{"--backend", "memory:", "--admin-listen", "nohost"}, "", "sidecar: --admin-listen nohost: listen tcp: address nohost: missing port in address"},
		{nil, "PK_MAX_CLIENTS=many", `sidecar: invalid value "many" for PK_MAX_CLIENTS: parse error`},
		{[]string{"--backend", "nowhere"}, "", `sidecar: --backend "nowhere" has no scheme (want memory:, file:DIR, redis://…, mongodb://…)`},
		{[]string{"--backend", "ftp://x"}, "", `sidecar: --backend "ftp://x": unknown scheme "ftp" (want memory, file, redis, rediss, redis+sentinel, redis+cluster, mongodb, mongodb+srv)`},
		{[]string{"--backend", "file:"}, "", "sidecar: --backend file: needs a directory, e.g. file:./prepkey-data"},
		{[]string{"--backend", "memory:", "--listen", "256.0.0.1:1"}, "", "sidecar: --listen 256.0.0.1:1: "},
		{[]string{"--backend", "file:" + notDir + "/sub"}, "", "sidecar: --backend file:" + notDir + "/sub: "},
		{[]string{"extra"}, "", `sidecar: unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, "", "sidecar: flag provided but not defined: -no-such-flag"},
		{[]string{"--max-clients"}, "", "sidecar: flag needs an argument: -max-clients"},
		{[]string{"--min-free-disk", "5 parsecs"}, "", `sidecar: invalid value "5 parsecs" for flag -min-free-disk: unknown unit "parsecs"`},
		{nil, "PK_MIN_FREE_DISK=-1MiB", `sidecar: invalid value "-1MiB" for PK_MIN_FREE_DISK: want bytes, e.g. 64MiB`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " ")+tt.env, func(t *testing.T) {
			// A later --listen wins over this one.
			cmd := exec.Command(sidecarBin, append([]string{"--listen", "127.0.0.1:0"}, tt.args...)...)
			cmd.Env = os.Environ()
			if tt.env != "" {
				cmd.Env = append(cmd.Env, tt.env)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 2, exit.ExitCode())
			require.True(t, strings.HasPrefix(stderr.String(), tt.want), stderr.String())
			require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
			require.Empty(t, stdout.String(), "a bad start prints its one line on stderr only")
		})
	}
}

// TestHelp: --help prints the usage once, on stdout, and exits 0.
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		cmd := exec.Command(sidecarBin, arg)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run())
		require.Equal(t, 1, strings.Count(stdout.String(), "Usage: sidecar [flags]"), stdout.String())
		require.Equal(t, 1, strings.Count(stdout.String(), "  -listen address"), stdout.String())
		require.Empty(t, stderr.String())
	}
}

// TestEnvironment: PK_* variables configure the sidecar; a flag wins.
func TestEnvironment(t *testing.T) {
	t.Setenv("PK_MAX_VALUE_BYTES", "3")
	t.Setenv("PK_BACKEND", "memory:")
	s := start(t)
	c := s.client(t, 2)
	check(t, c, errReply("ERR value is larger than max-value-bytes (3)"), "PK.PREPARE", "ns", "k", "four")
	s2 := start(t, "--max-value-bytes", "4")
	check(t, s2.client(t, 2), int64(1), "PK.PREPARE", "ns", "k", "four")
}
