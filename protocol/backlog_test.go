package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/protocol/transport"
)

// taskLoop is a loop whose tasks the test runs, one at a time.
type taskLoop struct{ tasks chan func() }

func (l taskLoop) Later(f func()) error   { l.tasks <- f; return nil }
func (l taskLoop) CloseConn(transport.IO) {}

// TestBacklogPassesTakeTurns: the connections that yielded with replies
// left unread are served by one pass at a time on their loop, each pass
// serving them in order until backlogBudget, the next one queued only once
// it ends; one that yields again waits behind those not yet served, and
// the loop's backlog is forgotten once empty. One task per connection, as
// before, had gnet run their serves back to back without reading any
// socket (issue 30: PING waited up to 1.2 s).
func TestBacklogPassesTakeTurns(t *testing.T) {
	srv := &Server{}
	loop := taskLoop{tasks: make(chan func(), 64)}
	backlogged := func(c *conn) {
		require.True(t, c.st.yield())
		c.backlogged()
	}
	conns := make([]*conn, 40)
	for i := range conns {
		conns[i] = &conn{srv: srv, loop: loop}
		conns[i].st.close() // served as nothing: the test looks at the turns alone
		backlogged(conns[i])
	}
	waiting := func() (yielded []int) {
		for i, c := range conns {
			if c.st.yielded {
				yielded = append(yielded, i)
			}
		}
		return yielded
	}
	perPass := backlogBudget / flushAt // a serve that writes less counts flushAt

	(<-loop.tasks)()
	require.Empty(t, loop.tasks, "one pass queued for 40 connections")
	require.Len(t, waiting(), len(conns)-perPass)
	require.Equal(t, 16, perPass)
	backlogged(conns[0]) // yields again: after the 24 others

	(<-loop.tasks)()
	require.Empty(t, loop.tasks)
	require.Equal(t, []int{0, 32, 33, 34, 35, 36, 37, 38, 39}, waiting())

	(<-loop.tasks)()
	require.Empty(t, waiting())
	srv.mem.slowMu.Lock()
	defer srv.mem.slowMu.Unlock()
	require.Empty(t, srv.mem.slow, "an empty backlog is forgotten")
}
