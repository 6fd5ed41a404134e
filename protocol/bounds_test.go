package protocol

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prepkey/prepkey/protocol/scheduler"
	"github.com/prepkey/prepkey/protocol/transport"
	"github.com/stretchr/testify/require"
)

// TestLoopBound: more deep pipelines on one loop than MaxLoopCmds lets
// under way at once. The connections past it are parked and served in turn:
// each gets every reply in order, and afterwards the loop's count of
// commands under way is back to zero with no connection left parked.
func TestLoopBound(t *testing.T) {
	addr, srv := serveOnLoop(t, Config{}, 5*time.Second)
	const clients, each = 6, 5000 // 6 runs of maxRunCmds > MaxLoopCmds
	require.Greater(t, clients*maxRunCmds, scheduler.MaxLoopCmds)
	conns := make([]*lineReader, clients)
	for i := range conns {
		conns[i] = dialLines(t, addr)
	}
	var wg sync.WaitGroup
	for cl, c := range conns {
		wg.Go(func() {
			var stream strings.Builder
			for i := range each {
				stream.WriteString(req("PK.PREPARE", "ns", fmt.Sprintf("c%d-%d", cl, i), "v"))
				if i%1000 == 999 {
					stream.WriteString(req("PING"))
				}
			}
			go func() { _, _ = io.WriteString(c.nc, stream.String()) }()
			_ = c.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
			for i := range each {
				line, err := c.rd.ReadString('\n')
				if !assertNoError(t, err) {
					return
				}
				if line != ":1\r\n" {
					t.Errorf("client %d, request %d: %q", cl, i, line)
					return
				}
				if i%1000 == 999 {
					if line, err := c.rd.ReadString('\n'); !assertNoError(t, err) || line != "+PONG\r\n" {
						t.Errorf("client %d, PING after %d: %q", cl, i, line)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	gs := batchGauges(srv)
	require.Len(t, gs, 1)
	require.Equal(t, [2]int{0, 0}, [2]int{gs[0].UnderWay, gs[0].Parked}, "commands under way, connections parked")
}

// TestReadPause: the loop can stop reading a connection (transport/pause_linux.go
// finds gnet's epoll descriptor in /proc/self/fdinfo; built on Linux
// without gnet's poll_opt tag): a gnet upgrade that registered sockets
// otherwise would leave deep pipelines bounded only by closing, and fails
// here (TestBackPressure shows the pause at work).
func TestReadPause(t *testing.T) {
	if !transport.PausesReading {
		t.Skip("this build does not stop reading connections (not Linux, or gnet's poll_opt)")
	}
	addr, srv := serveServer(t, Config{}, &echoHandler{})
	c := dialLines(t, addr)
	c.send(req("PING"))
	c.expect("+PONG\r\n")
	srv.mu.Lock()
	var conn *conn
	for conn = range srv.conns {
	}
	srv.mu.Unlock()
	can := make(chan bool, 1)
	_ = conn.handle.Later(func() {
		ok := conn.st.reading != readAlways && transport.SetReading(conn.epfd, conn.gc, false) == nil && transport.SetReading(conn.epfd, conn.gc, true) == nil
		can <- ok
	})
	require.True(t, <-can, "the loop cannot stop reading a connection")
	c.send(req("PING"))
	c.expect("+PONG\r\n") // reading again
}

// TestLargeRequestsAndRefusal: requests larger than serve's window are read
// whole, in order, and a framing error found after them, in a window
// widened for them, is answered after them. (Their replies are small: gnet
// writes what is pending at a close only as far as the socket takes it.)
func TestLargeRequestsAndRefusal(t *testing.T) {
	addr := serve(t, Config{MaxBulk: 8 << 20}, &echoHandler{inline: true})
	c := dialLines(t, addr)
	big := strings.Repeat("x", 5<<20) // past peekWindow
	notInt := "-ERR value is not an integer or out of range\r\n"
	c.send(req("SELECT", big) + req("PING") + req("SELECT", big) + "*1\r\n$-5\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for _, want := range []string{notInt, "+PONG\r\n", notInt, "-ERR Protocol error: invalid bulk length\r\n"} {
		line, err := c.rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	_, err := c.rd.ReadByte()
	require.ErrorIs(t, err, io.EOF)
}

// TestRepliesBeforeRefusalWritten: megabytes of replies before a protocol
// error, which the client has not read when the error is found, all reach
// it before the close, as Redis writes them (the close used to write them
// only as far as the socket took them).
func TestRepliesBeforeRefusalWritten(t *testing.T) {
	addr := serve(t, Config{MaxBulk: 8 << 20}, &echoHandler{inline: true})
	c := dialLines(t, addr)
	big := strings.Repeat("x", 5<<20)
	c.send(req("ECHO", big) + req("PING") + req("ECHO", big) + "*1\r\n$-5\r\n")
	_ = c.nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for _, want := range []string{"$" + fmt.Sprint(len(big)) + "\r\n", big + "\r\n", "+PONG\r\n",
		"$" + fmt.Sprint(len(big)) + "\r\n", big + "\r\n", "-ERR Protocol error: invalid bulk length\r\n"} {
		line, err := c.rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	_, err := c.rd.ReadByte()
	require.ErrorIs(t, err, io.EOF)
}
