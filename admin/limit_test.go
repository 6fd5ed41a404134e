package admin

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMaxConnsShutdown: a second connection takes the place of an idle
// kept-alive one at once; while the one place serves a request (a /healthz
// held in Live), a third waits unanswered; once it is answered the third
// takes its place; Shutdown ends Serve while a fourth waits for a place.
func TestMaxConnsShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hold := make(chan chan struct{}, 1)
	live := func(ctx context.Context) error {
		select {
		case release := <-hold:
			<-release
		default:
		}
		return nil
	}
	a := New(Config{Health: NewHealth(&switchPinger{state: "up"}, time.Second, nil), MaxConns: 1, Live: live})
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	dial := func() (net.Conn, *bufio.Reader) {
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		_, err = nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"))
		require.NoError(t, err)
		return nc, bufio.NewReader(nc)
	}
	status := func(nc net.Conn, rd *bufio.Reader, d time.Duration) string {
		_ = nc.SetReadDeadline(time.Now().Add(d))
		resp, err := http.ReadResponse(rd, nil)
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		return resp.Status
	}
	first, rd1 := dial()
	require.Equal(t, "200 OK", status(first, rd1, 5*time.Second))
	release := make(chan struct{})
	hold <- release
	second, rd2 := dial()
	require.Eventually(t, func() bool { return len(hold) == 0 }, 5*time.Second, time.Millisecond,
		"the second took the idle first's place and its /healthz is held")
	third, rd3 := dial()
	require.Contains(t, status(third, rd3, 300*time.Millisecond), "i/o timeout", "the third waits while the place serves a request")
	close(release)
	require.Equal(t, "200 OK", status(second, rd2, 5*time.Second))
	require.Equal(t, "200 OK", status(third, rd3, 5*time.Second))
	dial() // waits for the place the third holds, idle: it takes it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))
	require.NoError(t, <-done)
}
