package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAdminProbeNotLockedOut: idle kept-alive connections and connections
// that send nothing, as many as the admin port has places (64) or
// thousands, do not keep a fresh /healthz waiting (issue 30: it waited
// 60.0 s, the idle timeout, behind 64 idle kept-alive connections, and
// timed out behind 6000 raw ones). Each probe is given 3 s, three times a
// kubelet's default timeout; the times are logged.
func TestAdminProbeNotLockedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("opens thousands of connections")
	}
	s := start(t, "--backend", "memory:", "--admin-listen", "127.0.0.1:0")
	url := s.adminURL(t)
	addr := strings.TrimPrefix(url, "http://")
	probe := func(what string) {
		t.Helper()
		cl := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		began := time.Now()
		resp, err := cl.Get(url + "/healthz")
		require.NoError(t, err, "a fresh /healthz %s", what)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
		require.Equal(t, "ok\n", string(body))
		t.Logf("a fresh /healthz %s: %v", what, time.Since(began))
	}
	probe("alone")

	// 64 kept-alive connections, each answered once and left idle.
	for i := range 64 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_, err = nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: sidecar\r\n\r\n"))
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		require.NoError(t, err, "kept-alive connection %d", i)
		resp.Body.Close()
	}
	probe("behind 64 idle kept-alive connections")

	// Thousands of connections that send nothing, as many as the test's
	// descriptors allow (the sidecar holds at most 64 of them).
	raw := 6000
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && int(lim.Cur) < raw+200 {
		raw = int(lim.Cur) - 200
		t.Logf("RLIMIT_NOFILE %d: %d raw connections", lim.Cur, raw)
	}
	for i := range raw {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err, "raw connection %d", i)
		defer nc.Close()
	}
	probe("behind raw connections that send nothing")
}
