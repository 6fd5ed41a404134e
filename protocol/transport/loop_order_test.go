//go:build linux

package transport

import (
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/stretchr/testify/require"
)

// orderEvents records, on the loop, the I/O callbacks of the connections
// it serves and the tasks they queue (TestLoopRunsTasksAfterIO).
type orderEvents struct {
	gnet.BuiltinEventEngine
	opened sync.WaitGroup
	mu     sync.Mutex
	log    []string
	queued int           // tasks queued so far
	done   chan struct{} // closed when the last task has run
}

func (e *orderEvents) OnOpen(gnet.Conn) ([]byte, gnet.Action) {
	e.opened.Done()
	return nil, gnet.None
}

func (e *orderEvents) add(s string) {
	e.mu.Lock()
	e.log = append(e.log, s)
	e.mu.Unlock()
}

// OnTraffic reads the byte that arrived and, on the first two connections
// served, queues a task as the batch driver does (GnetLoop.Later).
func (e *orderEvents) OnTraffic(gc gnet.Conn) gnet.Action {
	_, _ = gc.Discard(-1)
	name := gc.Context().(string)
	e.add("io " + name)
	if e.queued < 2 {
		e.queued++
		task := "task after io " + name
		last := e.queued == 2
		_ = GnetLoop{gc.EventLoop()}.Later(func() {
			e.add(task)
			if last {
				close(e.done)
			}
		})
	}
	return gnet.None
}

// TestLoopRunsTasksAfterIO pins the gnet behaviour the batch drivers rely on
// (docs/serving.md, "The event loop"): a task queued on a loop from an I/O
// callback (GnetLoop.Later, gnet's EventLoop.Execute) runs only after every
// I/O callback of that poll round, so a batch started that way collects
// the runs of every connection whose input was ready in the round; and
// tasks run in the order they were queued. Eight connections are made
// readable at once, from a task on the loop itself, so that the loop's next
// epoll_wait returns all of them; if a gnet upgrade ran queued tasks
// between I/O callbacks, a task would come before the last "io".
func TestLoopRunsTasksAfterIO(t *testing.T) {
	const n = 8
	e := &orderEvents{done: make(chan struct{})}
	cl, err := gnet.NewClient(e, gnet.WithNumEventLoop(1), gnet.WithLogger(gnetLogger{slog.New(slog.DiscardHandler)}))
	require.NoError(t, err)
	require.NoError(t, cl.Start())
	t.Cleanup(func() { _ = cl.Stop() })

	// Unix socket pairs: a write lands in the peer's receive queue before
	// it returns, so all eight are readable before the loop polls again.
	peers := make([]*os.File, n)
	var loop gnet.EventLoop
	e.opened.Add(n)
	for i := range n {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		require.NoError(t, err)
		ours := os.NewFile(uintptr(fds[0]), "ours")
		peers[i] = os.NewFile(uintptr(fds[1]), "peer")
		t.Cleanup(func() { _ = peers[i].Close() })
		nc, err := net.FileConn(ours) // a duplicate; gnet takes over another
		_ = ours.Close()
		require.NoError(t, err)
		gc, err := cl.EnrollContext(nc, string(rune('a'+i)))
		require.NoError(t, err)
		loop = gc.EventLoop()
	}
	e.opened.Wait()

	// On the loop, between two polls: every connection gets a byte.
	wrote := make(chan error, 1)
	require.NoError(t, GnetLoop{loop}.Later(func() {
		for _, p := range peers {
			if _, err := p.Write([]byte{'x'}); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}))
	require.NoError(t, <-wrote)
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the tasks queued from OnTraffic did not run")
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	require.Len(t, e.log, n+2, "%q", e.log)
	for i, s := range e.log[:n] {
		require.Regexp(t, "^io ", s, "an I/O callback of the round came after a task (entry %d): %q", i, e.log)
	}
	first, second := e.log[0][len("io "):], e.log[1][len("io "):]
	require.Equal(t, []string{"task after io " + first, "task after io " + second}, e.log[n:], "tasks in the order queued")
}
