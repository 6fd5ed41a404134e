package protocol

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// serveOnLoop starts a server on the memory store declared as a standalone
// Redis is (schedtest.OnLoop: runs joined, finished on the loop), with
// timeout as the store's deadline.
func serveOnLoop(t *testing.T, cfg Config, timeout time.Duration) (string, *Server) {
	cfg.BackendTimeout = timeout
	st := schedtest.Declare(memory.New(backend.Options{}), schedtest.OnLoop)
	return serveServer(t, cfg, commands.New(st, commands.DefaultLimits, nil))
}

// lineReader reads one reply line at a time, within a deadline.
type lineReader struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func dialLines(t *testing.T, addr string) *lineReader {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &lineReader{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (l *lineReader) send(s string) {
	_, err := io.WriteString(l.nc, s)
	require.NoError(l.t, err)
}

func (l *lineReader) expect(want string) {
	l.t.Helper()
	_ = l.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := l.rd.ReadString('\n')
	require.NoError(l.t, err)
	require.Equal(l.t, want, line)
}
