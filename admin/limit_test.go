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

// TestMaxConnsShutdown: with its one place taken by an idle kept-alive
// connection, a second connection waits unanswered; closing the first
// lets it in; Shutdown ends Serve while a third waits for a place.
func TestMaxConnsShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := New(Config{Health: NewHealth(&switchPinger{state: "up"}, time.Second, nil), MaxConns: 1})
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
	second, rd2 := dial()
	require.Contains(t, status(second, rd2, 300*time.Millisecond), "i/o timeout", "the second waits for the place")
	first.Close()
	require.Equal(t, "200 OK", status(second, rd2, 5*time.Second))
	dial() // waits for the place the second holds
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))
	require.NoError(t, <-done)
}
