package e2e

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end test of issue 23's N4: the admin port serves at most
// --admin-max-clients connections at once, and RESP clients keep their
// descriptors whatever the admin port is sent.

// adminConn is one connection to the admin port that sent GET /healthz
// and keeps the connection alive.
type adminConn struct {
	nc net.Conn
	rd *bufio.Reader
}

// answered reads the response to its GET within d: its status line, or
// "" when none came.
func (a *adminConn) answered(d time.Duration) string {
	_ = a.nc.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(a.rd, nil)
	if err != nil {
		return ""
	}
	resp.Body.Close()
	return resp.Status
}

// TestAdminConnsCapped runs the sidecar with 256 descriptors (ulimit -n)
// and PK_ADMIN_MAX_CLIENTS=16, and keeps 400 connections to the admin port
// open, each having sent GET /healthz with keep-alive, as a flood of idle
// probes would. At most 16 are open in the sidecar at once, the others
// wait to be accepted (taking no descriptor of the sidecar), each taking
// the place of an idle one once answered, and RESP clients are still
// accepted and answered; max-clients is reduced to what the descriptors
// hold (256 - 16 - 128 kept for the store and listeners), as Redis reduces
// maxclients for a low ulimit. Once an answered connection closes, a
// waiting one is answered.
func TestAdminConnsCapped(t *testing.T) {
	needTool(t, "bash")
	const (
		limit  = 256
		capped = 16
		flood  = 400
	)
	// ulimit -n sets the soft and the hard limit: the sidecar cannot raise
	// it. exec keeps the pid, which the test kills at cleanup.
	cmd := exec.Command("bash", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, limit), sidecarBin,
		"--backend", "memory:", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0")
	cmd.Env = []string{fmt.Sprintf("PK_ADMIN_MAX_CLIENTS=%d", capped)}
	s := launch(t, cmd, "")
	addr := strings.TrimPrefix(s.adminURL(t), "http://")

	conns := make([]*adminConn, flood)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err, "dialling admin connection %d", i)
		t.Cleanup(func() { nc.Close() })
		_, err = nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: sidecar\r\n\r\n"))
		require.NoError(t, err)
		conns[i] = &adminConn{nc: nc, rd: bufio.NewReader(nc)}
	}
	// Every connection is given 10 s to be answered: long enough, on a
	// loaded machine, for the capped port to answer its 16 and for an
	// uncapped one to take every descriptor it can.
	status := make([]string, flood)
	var wg sync.WaitGroup
	for i, a := range conns {
		wg.Go(func() { status[i] = a.answered(10 * time.Second) })
	}
	wg.Wait()
	var answered, waiting []int
	for i, st := range status {
		if st == "" {
			waiting = append(waiting, i)
			continue
		}
		require.Equal(t, "200 OK", st)
		answered = append(answered, i)
	}
	t.Logf("admin connections answered: %d of %d", len(answered), flood)

	// RESP clients are accepted and answered meanwhile.
	for i := range 50 {
		r := s.raw(t)
		r.do("+PONG\r\n", "PING")
		if i == 0 {
			r.send(resp("INFO", "clients"))
			require.Contains(t, r.line(), "$")
			require.Equal(t, "# Clients\r\n", r.line())
			require.Equal(t, "connected_clients:1\r\n", r.line())
			require.Equal(t, fmt.Sprintf("maxclients:%d\r\n", limit-capped-128), r.line())
		}
	}
	require.Contains(t, s.logs(), "maxclients has been reduced to compensate for low ulimit")

	// Each connection, answered and then idle, gives its place to the
	// next one (issue 30: idle kept-alive connections held every place
	// for their 60 s idle timeout, and a fresh probe waited that long):
	// all are answered in turn, never more than PK_ADMIN_MAX_CLIENTS at
	// once, since the RESP clients above kept their descriptors.
	// A connection that has sent nothing 10 ms after it was accepted may
	// lose its place to a new one (a probe sends its request as it
	// connects; this test's writes may lag on a loaded machine).
	require.Greater(t, len(answered), flood*9/10, "admin connections are answered in turn; waiting: %v", waiting)
}
