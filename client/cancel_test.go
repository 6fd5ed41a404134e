//go:build linux

// The test stops the sidecar with SIGSTOP and reads /proc.

package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// TestCancelOnTheWay: ctx done while a command is at the sidecar. The
// sidecar is stopped (SIGSTOP) before the command is written, so it cannot
// answer until the test resumes it (SIGCONT): what the client does then does
// not depend on timing.
func TestCancelOnTheWay(t *testing.T) {
	s := start(t, "--backend", "memory:")
	pause := func() {
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGSTOP))
		waitStopped(t, s.cmd.Process.Pid)
	}
	resume := func() { require.NoError(t, s.cmd.Process.Signal(syscall.SIGCONT)) }
	t.Cleanup(func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) })
	direct := client.New(s.client(t, 3, &recorder{}))

	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ns := uniqueNS(t)
			// onPrepareWritten runs once a PK.PREPARE is written to the
			// sidecar: go-redis sends nothing under a context already done.
			var mu sync.Mutex
			var onPrepareWritten func()
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				return writeWatch{Conn: c, written: func(b []byte) {
					mu.Lock()
					f := onPrepareWritten
					mu.Unlock()
					if f != nil && bytes.Contains(b, []byte("PK.PREPARE")) {
						f()
					}
				}}, err
			}
			// One connection: the next command shows that the abandoned
			// one's reply was read and the connection handed back in order.
			rec := &recorder{}
			rdb := redis.NewClient(&redis.Options{Addr: s.addr, Password: password, Protocol: proto, MaxRetries: -1, PoolSize: 1, Dialer: dial})
			rdb.AddHook(rec)
			t.Cleanup(func() { rdb.Close() })
			require.NoError(t, rdb.Ping(testContext(t)).Err()) // connected before the pause
			pk := client.New(rdb)
			// late hands over each PK command's own outcome when go-redis has it.
			late := make(chan error, 4)
			rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				err := next(ctx, cmd)
				late <- err
				return err
			})

			// A method returns ctx's error at once; the command goes on.
			ctx, cancel := context.WithCancel(testContext(t))
			mu.Lock()
			onPrepareWritten = cancel
			mu.Unlock()
			pause()
			ok, err := pk.Prepare(ctx, ns, "abandoned", []byte("v"))
			require.False(t, ok)
			require.ErrorIs(t, err, context.Canceled)
			require.EqualError(t, err, "prepkey: PK.PREPARE: context canceled")
			resume()
			require.NoError(t, <-late, "the reply, read in the background")
			require.Equal(t, "PONG", rdb.Ping(testContext(t)).Val(), "the connection is back in order")
			// The outcome the caller could not know: reserved.
			requireRecord(t, direct, ns, "abandoned", "v", time.Time{})

			// UsingPrepare waits for its prepare's reply: :1, then ctx is
			// done, so the body is not run and the reservation rolled back.
			ctx, cancel = context.WithCancel(testContext(t))
			mu.Lock()
			onPrepareWritten = func() { cancel(); resume() }
			mu.Unlock()
			pause()
			err = pk.UsingPrepare(ctx, ns, "waited", []byte("v"), func(context.Context, bool) error { panic("the body ran") })
			require.ErrorIs(t, err, context.Canceled)
			require.False(t, client.OutcomeUnknown(err), "resolved: rolled back")
			require.NoError(t, <-late) // the prepare's :1
			require.NoError(t, <-late) // the rollback's
			requireNoRecord(t, direct, ns, "waited")

			// go-redis itself loses the reply to ctx's deadline when
			// ContextTimeoutEnabled, and the sidecar is stalled: the read
			// UsingPrepare sends to resolve it times out too (go-redis's
			// ReadTimeout, 3 s), so the outcome stays unknown (here:
			// reserved, once the sidecar resumes); the body not run,
			// nothing rolled back. The limit UsingPrepare's doc names: a
			// TTL is the backstop.
			timed := redis.NewClient(&redis.Options{Addr: s.addr, Password: password, Protocol: proto, MaxRetries: -1, ContextTimeoutEnabled: true})
			t.Cleanup(func() { timed.Close() })
			require.NoError(t, timed.Ping(testContext(t)).Err())
			ctx, cancel = context.WithTimeout(testContext(t), 100*time.Millisecond)
			defer cancel()
			pause()
			err = client.New(timed).UsingPrepare(ctx, ns, "lost", []byte("v"), func(context.Context, bool) error { panic("the body ran") })
			resume()
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.NotErrorIs(t, err, client.ErrUnavailable)
			require.True(t, client.OutcomeUnknown(err))
			requireRecord(t, direct, ns, "lost", "v", time.Time{})
		})
	}
}

// writeWatch is a connection that shows each write to written once it is
// done.
type writeWatch struct {
	net.Conn
	written func([]byte)
}

func (w writeWatch) Write(b []byte) (int, error) {
	n, err := w.Conn.Write(b)
	w.written(b[:n])
	return n, err
}

// waitStopped waits until every thread of process pid is stopped: a signal
// is delivered after kill returns.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		require.NoError(t, err)
		require.NotEmpty(t, stats)
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				return false
			}
			// pid (comm) state ...: the state follows the last ')'.
			fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			if len(fields) == 0 || fields[0] != "T" {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond)
}
