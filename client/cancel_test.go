package client_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// hangingServer returns the address of a TCP server that accepts
// connections and never answers: a backend that does not answer, so the
// sidecar holds each PK command for its --backend-timeout, then answers
// -UNAVAILABLE.
func hangingServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

// TestCancelOnTheWay: ctx cancelled while a command is at the sidecar,
// which holds it (its backend does not answer) and then answers
// -UNAVAILABLE.
func TestCancelOnTheWay(t *testing.T) {
	s := start(t, "--backend", "redis://"+hangingServer(t), "--backend-timeout", "1s")
	for _, proto := range []int{2, 3} {
		// cancelAfter cancels the context in it once a PK.PREPARE is
		// written to the sidecar: go-redis sends nothing under a context
		// already done.
		var mu sync.Mutex
		var cancelAfter context.CancelFunc
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			return writeWatch{Conn: c, written: func(b []byte) {
				if bytes.Contains(b, []byte("PK.PREPARE")) {
					mu.Lock()
					defer mu.Unlock()
					if cancelAfter != nil {
						cancelAfter()
					}
				}
			}}, err
		}
		rec := &recorder{}
		// One connection: the next command shows that the abandoned one's
		// reply was read and the connection handed back in order.
		rdb := redis.NewClient(&redis.Options{Addr: s.addr, Password: password, Protocol: proto, MaxRetries: -1, PoolSize: 1, Dialer: dial})
		rdb.AddHook(rec)
		t.Cleanup(func() { rdb.Close() })
		pk := client.New(rdb)

		// cancelWhenSent cancels ctx once a PK.PREPARE is written, and
		// hands over that command's own outcome when go-redis has it.
		cancelWhenSent := func(cancel context.CancelFunc) <-chan error {
			mu.Lock()
			cancelAfter = cancel
			mu.Unlock()
			late := make(chan error, 1)
			rec.setAround(func(ctx context.Context, cmd redis.Cmder, next redis.ProcessHook) error {
				err := next(ctx, cmd)
				late <- err // what go-redis makes the command's error
				return err
			})
			return late
		}

		// A method returns ctx's error at once; the command goes on.
		ctx, cancel := context.WithCancel(t.Context())
		late := cancelWhenSent(cancel)
		ok, err := pk.Prepare(ctx, "n", "k", nil)
		require.False(t, ok)
		require.ErrorIs(t, err, context.Canceled)
		require.EqualError(t, err, "prepkey: PK.PREPARE: context canceled")
		require.ErrorContains(t, <-late, "UNAVAILABLE", "the command reached the sidecar; its reply was read in the background")
		rec.setAround(nil)
		require.Equal(t, "PONG", rdb.Ping(t.Context()).Val(), "the connection is back in order")

		// UsingPrepare waits for its prepare's reply: the sidecar's
		// -UNAVAILABLE, not ctx's error; the body not run.
		ctx, cancel = context.WithCancel(t.Context())
		late = cancelWhenSent(cancel)
		err = pk.UsingPrepare(ctx, "n", "k", nil, func(context.Context, bool) error { panic("the body ran") })
		require.ErrorIs(t, err, client.ErrUnavailable)
		require.ErrorContains(t, <-late, "UNAVAILABLE")
		rec.setAround(nil)

		// go-redis itself loses the reply to ctx's deadline when
		// ContextTimeoutEnabled: the outcome is unknown (here, with the
		// backend silent: nothing reserved); the body not run.
		timed := redis.NewClient(&redis.Options{Addr: s.addr, Password: password, Protocol: proto, MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { timed.Close() })
		ctx, cancel = context.WithTimeout(t.Context(), 100e6)
		err = client.New(timed).UsingPrepare(ctx, "n", "k", nil, func(context.Context, bool) error { panic("the body ran") })
		cancel()
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NotErrorIs(t, err, client.ErrUnavailable)
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
