package protocol

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/protocol/transport"
)

// TestAliveFailsOnStuckLoop: Alive answers through the event loops, so a
// loop that runs no task (held here by a task that waits) fails it, and
// passes again once the loop runs.
func TestAliveFailsOnStuckLoop(t *testing.T) {
	if testPortable {
		t.Skip("the portable transport has no shared loop to hold")
	}
	addr, srv := serveServer(t, Config{EventLoops: 2}, &echoHandler{})
	ctx := context.Background()
	require.NoError(t, srv.Alive(ctx), "no client yet: no loop to ask")

	var conns []net.Conn
	for range 4 { // gnet spreads them over both loops
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		_, err = nc.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		line, err := bufio.NewReader(nc).ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "+PONG\r\n", line)
		conns = append(conns, nc)
	}
	srv.mu.Lock()
	var loop transport.Loop
	for l := range srv.loopSet {
		loop = l
	}
	loops := len(srv.loopSet)
	srv.mu.Unlock()
	require.Equal(t, 2, loops)
	require.NoError(t, srv.Alive(ctx))

	held, release := make(chan struct{}), make(chan struct{})
	require.NoError(t, loop.Later(func() { close(held); <-release }))
	<-held
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := srv.Alive(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "did not run a task")
	close(release)
	require.NoError(t, srv.Alive(ctx), "the loop runs again")
}
