package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var adminRE = regexp.MustCompile(`msg="serving operators" admin_listen=(\S+)`)

// adminURL is the base URL of the sidecar's --admin-listen port.
func (s *sidecar) adminURL(t *testing.T) string {
	t.Helper()
	m := adminRE.FindStringSubmatch(s.logs())
	require.NotNil(t, m, "no admin port in the log: %s", s.logs())
	return "http://" + m[1]
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestReadyzFollowsRedis: with --admin-listen, /readyz turns 503 within
// --backend-timeout plus one second of Redis hanging (SIGSTOP) or stopping,
// and 200 once it is back; /healthz stays 200; the log has one line when
// the backend is lost and one when it is regained.
func TestReadyzFollowsRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("stops and starts a Redis of its own")
	}
	port := freePort(t)
	srv := redisServer(t, "--port", fmt.Sprint(port))
	const timeout = 500 * time.Millisecond
	s := start(t, "--backend", fmt.Sprintf("redis://127.0.0.1:%d", port), "--backend-timeout", timeout.String(),
		"--admin-listen", "127.0.0.1:0")
	base := s.adminURL(t)
	// The contract's bound, plus slack for a loaded machine; each wait
	// ends as soon as the change shows.
	within := timeout + time.Second + time.Second
	status := func(want int, what string) {
		t.Helper()
		var code int
		var body string
		require.Eventually(t, func() bool {
			code, body = httpGet(t, base+"/readyz")
			return code == want
		}, within, 20*time.Millisecond, "%s: last %d %q", what, code, body)
		code, _ = httpGet(t, base+"/healthz")
		require.Equal(t, http.StatusOK, code)
	}
	require.Eventually(t, func() bool { code, _ := httpGet(t, base+"/readyz"); return code == http.StatusOK },
		10*time.Second, 20*time.Millisecond)
	before := len(s.logs())

	require.NoError(t, srv.Process.Signal(syscall.SIGSTOP))
	status(http.StatusServiceUnavailable, "hung Redis")
	require.NoError(t, srv.Process.Signal(syscall.SIGCONT))
	status(http.StatusOK, "resumed Redis")

	require.NoError(t, srv.Process.Kill())
	_ = srv.Wait()
	status(http.StatusServiceUnavailable, "stopped Redis")
	_, body := httpGet(t, base+"/readyz")
	require.Contains(t, body, "backend: ")
	redisServer(t, "--port", fmt.Sprint(port))
	status(http.StatusOK, "restarted Redis")

	logs := s.logs()[before:]
	require.Equal(t, 2, strings.Count(logs, `msg="backend connection lost"`), logs)
	require.Equal(t, 2, strings.Count(logs, `msg="backend connection regained"`), logs)
}

// TestAdminOff: without --admin-listen the sidecar opens one port only.
func TestAdminOff(t *testing.T) {
	s := start(t, "--backend", "memory:")
	require.NotContains(t, s.logs(), "serving operators")
	pid := s.cmd.Process.Pid
	// every listening TCP socket of the process, from /proc
	inodes := socketInodes(t, pid)
	listening := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) > 9 && fields[3] == "0A" && inodes[fields[9]] {
				listening++
			}
		}
	}
	require.Equal(t, 1, listening)
}

func socketInodes(t *testing.T, pid int) map[string]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	inodes := map[string]bool{}
	for _, e := range entries {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return inodes
}

// TestCheck: `sidecar --check` (a container's healthcheck) exits 0 when
// the sidecar at --listen answers PING, with the password from
// PK_REQUIREPASS, and 1 with the reason otherwise.
func TestCheck(t *testing.T) {
	s := start(t, "--backend", "memory:", "--requirepass", "s3cret")
	runCheck := func(env ...string) (int, string) {
		cmd := exec.Command(sidecarBin, "--check")
		cmd.Env = append(os.Environ(), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stderr.String()
	}
	code, out := runCheck("PK_LISTEN="+s.addr, "PK_REQUIREPASS=s3cret")
	require.Equal(t, 0, code, out)
	code, out = runCheck("PK_LISTEN="+s.addr, "PK_REQUIREPASS=wrong")
	require.Equal(t, 1, code)
	require.Equal(t, fmt.Sprintf("sidecar: check %s: AUTH answered \"-WRONGPASS invalid username-password pair or user is disabled.\"\n", s.addr), out)
	code, out = runCheck("PK_LISTEN=" + s.addr)
	require.Equal(t, 1, code)
	require.Equal(t, fmt.Sprintf("sidecar: check %s: PING answered \"-NOAUTH Authentication required.\"\n", s.addr), out)
	port := freePort(t)
	code, out = runCheck(fmt.Sprintf("PK_LISTEN=0.0.0.0:%d", port))
	require.Equal(t, 1, code)
	require.Contains(t, out, fmt.Sprintf("dial tcp 127.0.0.1:%d", port))
}

// TestMetricsMove: under load on a Redis backend, a scrape of /metrics
// shows the command, latency, backend-call, batch and client metrics
// moving, the backend up, and Go's and the process's metrics; INFO's
// commandstats count the same commands.
func TestMetricsMove(t *testing.T) {
	url := os.Getenv("PREPKEY_REDIS_URL")
	if url == "" {
		t.Skip("PREPKEY_REDIS_URL is unset (scripts/test.sh sets it)")
	}
	s := start(t, "--backend", url, "--redis-key-prefix", fmt.Sprintf("pk-metrics-%d:", time.Now().UnixNano()),
		"--admin-listen", "127.0.0.1:0")
	base := s.adminURL(t)
	require.Eventually(t, func() bool { code, _ := httpGet(t, base+"/readyz"); return code == http.StatusOK },
		10*time.Second, 20*time.Millisecond)
	scrape := func() map[string]float64 {
		t.Helper()
		code, body := httpGet(t, base+"/metrics")
		require.Equal(t, http.StatusOK, code)
		m := map[string]float64{}
		for _, line := range strings.Split(body, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			var v float64
			_, err := fmt.Sscan(line[i+1:], &v)
			require.NoError(t, err, line)
			m[line[:i]] = v
		}
		return m
	}
	before := scrape()
	const clients, perClient = 8, 200
	ns := uniqueNS(t)
	done := make(chan error, clients)
	for i := range clients {
		c := s.client(t, 2)
		go func() {
			pipe := c.Pipeline()
			for j := range perClient {
				pipe.Do(ctx(), "PK.PREPARE", ns, fmt.Sprint(i, "-", j), "v")
			}
			_, err := pipe.Exec(ctx())
			done <- err
		}()
	}
	for range clients {
		require.NoError(t, <-done)
	}
	after := scrape()
	moved := func(series string, by float64) {
		t.Helper()
		require.Equal(t, by, after[series]-before[series], series)
	}
	moved(`prepkey_commands_total{command="pk.prepare",outcome="1"}`, clients*perClient)
	moved(`prepkey_command_duration_seconds_count{command="pk.prepare"}`, clients*perClient)
	moved(`prepkey_backend_batch_size_sum`, clients*perClient)
	require.Positive(t, after[`prepkey_backend_call_duration_seconds_count{op="prepare"}`]-before[`prepkey_backend_call_duration_seconds_count{op="prepare"}`])
	require.Positive(t, after[`prepkey_command_duration_seconds_sum{command="pk.prepare"}`])
	require.GreaterOrEqual(t, after[`prepkey_connections_received_total`]-before[`prepkey_connections_received_total`], float64(clients))
	require.Equal(t, 1.0, after["prepkey_backend_up"])
	require.Equal(t, 1.0, after["prepkey_backend_loop_connections"])
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "prepkey_redis_noscript_reloads_total", "prepkey_redis_nodes"} {
		require.Contains(t, after, name)
	}
	info, err := s.client(t, 2).Info(ctx(), "commandstats").Result()
	require.NoError(t, err)
	require.Contains(t, info, fmt.Sprintf("cmdstat_pk.prepare:calls=%d,", clients*perClient))
}
