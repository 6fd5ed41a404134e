//go:build linux

package protocol

import (
	"bufio"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/prepkey/prepkey/protocol/transport"
)

// TestBackPressure: a client pipelines 40 MB of commands, far past pauseAt
// and the kernel's socket buffers, while its first run is held at the
// store and it reads no reply. The sidecar stops reading it: what it holds
// of the client's input stays under pauseAt and a few reads of gnet's, the
// rest waits in the kernel's receive queue of the socket (not drained
// over 20 polls) and in the client, whose write does not end. Once the store answers, the sidecar
// reads again and every reply comes, in order.
//
// Without the read pause (SetReading doing nothing, or PollerFD finding no
// epoll descriptor) the sidecar takes in all 40 MB and the test fails at
// once, on the input it holds or on the client's write ending.
func TestBackPressure(t *testing.T) {
	if !transport.PausesReading && !testPortable {
		t.Skip("this build does not stop reading connections (gnet's poll_opt)")
	}
	h := &echoHandler{batches: true}
	hold := make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	h.hold, h.entered = hold, make(chan struct{}, 1)
	addr, srv := serveServer(t, Config{BackendTimeout: time.Minute}, h)
	t.Cleanup(release) // runs first: a failed test must not leave the store held
	c := dialLines(t, addr)

	const n = 1_300_000 // about 40 MB: below the inbound limit (64 MiB) that closes a flood
	var stream strings.Builder
	for i := range n {
		stream.WriteString(echoReq(i))
	}
	require.Less(t, stream.Len(), minInboundLimit)
	wrote := make(chan error, 1)
	go func() {
		_, err := c.nc.Write([]byte(stream.String()))
		wrote <- err
	}()
	<-h.entered
	h.mu.Lock()
	h.hold = nil // only the first run is held
	h.mu.Unlock()

	srv.mu.Lock()
	var conn *conn
	for conn = range srv.conns {
	}
	srv.mu.Unlock()
	require.GreaterOrEqual(t, conn.fd, 0)
	// What the sidecar holds of the input, read on the connection's loop.
	held := func() int {
		in := make(chan int, 1)
		require.NoError(t, conn.handle.Later(func() { in <- conn.gc.InboundBuffered() }))
		return <-in
	}
	const bound = pauseAt + 256<<10 // pauseAt, and the read that crossed it
	deadline := time.Now().Add(30 * time.Second)
	last, lastIn, steady := -1, -1, 0
	for {
		select {
		case err := <-wrote:
			t.Fatalf("the client wrote all %d bytes while its first run was held (err %v): the sidecar did not stop reading", stream.Len(), err)
		default:
		}
		inbound := held()
		require.LessOrEqual(t, inbound, bound, "the sidecar holds %d bytes of a client's input while its first run is held", inbound)
		queued, err := unix.IoctlGetInt(conn.fd, unix.SIOCINQ)
		require.NoError(t, err)
		// The kernel keeps what the sidecar does not read: the socket's
		// receive queue has bytes, and neither it nor what the sidecar
		// holds (pauseAt or more) changes over 20 polls. A loop that read
		// the socket would take them (and go past bound). How much the
		// queue holds is the kernel's to say: 37 KB to 2 MB was seen, less
		// under memory pressure.
		if queued > 0 && queued == last && inbound == lastIn && inbound >= pauseAt {
			steady++
		} else {
			steady = 0
		}
		if steady == 20 {
			t.Logf("held: %d bytes in the sidecar, %d in the socket's receive queue", inbound, queued)
			break
		}
		last, lastIn = queued, inbound
		require.True(t, time.Now().Before(deadline), "the socket's receive queue never filled (%d bytes; %d held)", queued, inbound)
		time.Sleep(time.Millisecond) // polls the kernel's queue, which has no event to wait on
	}

	release()
	rd := bufio.NewReaderSize(c.nc, 1<<20)
	_ = c.nc.SetReadDeadline(time.Now().Add(2 * time.Minute))
	for i := range n {
		line, err := rd.ReadString('\n')
		require.NoError(t, err, "reply %d", i)
		if want := fmt.Sprintf(":%d\r\n", i); line != want {
			require.Equal(t, want, line, "reply %d", i)
		}
	}
	require.NoError(t, <-wrote)
}

// TestPortableBackPressure: the same on the portable transport, which
// stops reading a connection itself (Served.Holding).
func TestPortableBackPressure(t *testing.T) {
	if testing.Short() {
		t.Skip("TestBackPressure again on the portable transport")
	}
	testPortable = true
	defer func() { testPortable = false }()
	TestBackPressure(t)
}
