package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// viaProxy returns a go-redis client that reaches s through a new proxy,
// with go-redis's defaults (MaxRetries 3) unless set changes them.
func viaProxy(t *testing.T, s *sidecar, proto int, set func(*redis.Options)) (*proxy, *redis.Client) {
	t.Helper()
	p := newProxy(t, s.addr)
	opt := &redis.Options{Addr: p.addr, Password: password, Protocol: proto}
	if set != nil {
		set(opt)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return p, rdb
}

// eachSidecar runs f on a fresh sidecar per backend, in RESP2 and RESP3,
// with a client reaching it directly (to look at records).
func eachSidecar(t *testing.T, f func(t *testing.T, s *sidecar, proto int, direct *client.Client)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b.args(t)...)
			direct := client.New(s.client(t, 3, &recorder{}))
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) { f(t, s, proto, direct) })
			}
		})
	}
}

// TestResendSafety: go-redis with its default settings resends a PK.PREPARE
// whose reply was lost (the proxy drops the connection after the sidecar
// reserved the key, before relaying the :1); the resend answers :0 for our
// own reservation. UsingPrepare reads the record, finds its own value, runs
// the body prepared, and releases the key when the body fails: nothing is
// stranded. Before the rule, the body ran with prepared false and the key
// stayed held (forever, without a TTL).
func TestResendSafety(t *testing.T) {
	eachSidecar(t, func(t *testing.T, s *sidecar, proto int, direct *client.Client) {
		p, rdb := viaProxy(t, s, proto, nil)
		pk, ns := client.New(rdb), uniqueNS(t)
		v := []byte(`{"commandId":"c-1"}`)
		errBody := errors.New("the body failed")

		for _, tc := range []struct {
			name    string
			bodyErr error
		}{{"the body fails: released", errBody}, {"the body succeeds: kept", nil}} {
			t.Run(tc.name, func(t *testing.T) {
				key := fmt.Sprint("k-", tc.bodyErr == nil)
				p.interceptNext(1)
				before := p.seen()
				var calls []bool
				result := make(chan error, 1)
				go func() {
					result <- pk.UsingPrepare(testContext(t), ns, key, v, func(_ context.Context, prepared bool) error {
						calls = append(calls, prepared)
						return tc.bodyErr
					})
				}()
				h := <-p.held
				require.Equal(t, ":1\r\n", string(h.Reply), "the first attempt reserved the key")
				h.Drop()
				err := <-result
				require.True(t, err == tc.bodyErr, "got %v", err)
				require.Equal(t, []bool{true}, calls, "the body ran once, prepared")
				require.Equal(t, 2, p.seen()-before, "go-redis sent the PK.PREPARE twice")
				if tc.bodyErr != nil {
					requireNoRecord(t, direct, ns, key)
				} else {
					requireRecord(t, direct, ns, key, string(v), time.Time{})
				}
			})
		}

		t.Run("a record of another value: prepared false, kept", func(t *testing.T) {
			ok, err := direct.Prepare(testContext(t), ns, "theirs", []byte("other"))
			require.NoError(t, err)
			require.True(t, ok)
			var calls []bool
			err = pk.UsingPrepare(testContext(t), ns, "theirs", v, func(_ context.Context, prepared bool) error {
				calls = append(calls, prepared)
				return errBody
			})
			require.True(t, err == errBody, "got %v", err)
			require.Equal(t, []bool{false}, calls)
			requireRecord(t, direct, ns, "theirs", "other", time.Time{})
		})
	})
}

// TestCancelAtEveryPoint: UsingPrepare's ctx cancelled at each point of its
// flow, the proxy holding the prepare's reply so that the cancellation comes
// exactly after the sidecar reserved the key. Whatever the point, the body
// does not run (or sees its ctx done), no reservation is left, and the error
// is ctx's with a known outcome.
func TestCancelAtEveryPoint(t *testing.T) {
	eachSidecar(t, func(t *testing.T, s *sidecar, proto int, direct *client.Client) {
		ns := uniqueNS(t)
		v := []byte(`{"commandId":"c-2"}`)
		noBody := func(context.Context, bool) error { panic("the body ran") }
		requireResolved := func(t *testing.T, err error, key string) {
			t.Helper()
			require.ErrorIs(t, err, context.Canceled)
			require.False(t, client.OutcomeUnknown(err), "resolved: %v", err)
			requireNoRecord(t, direct, ns, key)
		}

		t.Run("before the send: nothing sent", func(t *testing.T) {
			p, rdb := viaProxy(t, s, proto, nil)
			ctx, cancel := context.WithCancel(testContext(t))
			cancel()
			err := client.New(rdb).UsingPrepare(ctx, ns, "before", v, noBody)
			requireResolved(t, err, "before")
			require.Zero(t, p.seen())
		})

		for _, tc := range []struct {
			name  string
			set   func(*redis.Options)
			relay bool
		}{
			{"after the send, the reply relayed", nil, true},
			{"after the send, the reply lost, no retries", func(o *redis.Options) { o.MaxRetries = -1 }, false},
			{"after the send, the reply lost, go-redis's retries", nil, false},
			{"after the send, the reply lost, ContextTimeoutEnabled", func(o *redis.Options) { o.ContextTimeoutEnabled = true }, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p, rdb := viaProxy(t, s, proto, tc.set)
				key := fmt.Sprint("after-", len(tc.name))
				ctx, cancel := context.WithCancel(testContext(t))
				p.interceptNext(1)
				result := make(chan error, 1)
				go func() { result <- client.New(rdb).UsingPrepare(ctx, ns, key, v, noBody) }()
				h := <-p.held
				require.Equal(t, ":1\r\n", string(h.Reply))
				cancel()
				if tc.relay {
					h.Relay()
				} else {
					h.Drop()
				}
				requireResolved(t, <-result, key)
			})
		}

		t.Run("during the body", func(t *testing.T) {
			_, rdb := viaProxy(t, s, proto, nil)
			ctx, cancel := context.WithCancel(testContext(t))
			err := client.New(rdb).UsingPrepare(ctx, ns, "body", v, func(ctx context.Context, prepared bool) error {
				require.True(t, prepared)
				cancel()
				<-ctx.Done()
				return ctx.Err()
			})
			require.True(t, err == context.Canceled, "fn's error as is: %v", err)
			requireNoRecord(t, direct, ns, "body")
		})
	})
}

// TestOutcomeUnknown: the predicate for each kind of error, each made for
// real (a sidecar, a proxy that holds or drops a reply, a closed port).
func TestOutcomeUnknown(t *testing.T) {
	s := start(t, "--backend", "memory:")
	down := start(t, "--backend", "redis://"+closedPort(t))
	pk := client.New(s.client(t, 3, &recorder{}))
	ctx, v := testContext(t), []byte("v")
	noRetries := func(o *redis.Options) { o.MaxRetries = -1 }

	require.False(t, client.OutcomeUnknown(nil))

	t.Run("-UNAVAILABLE: unknown", func(t *testing.T) {
		_, err := client.New(down.client(t, 3, &recorder{})).Prepare(ctx, "n", "k", v)
		require.ErrorIs(t, err, client.ErrUnavailable)
		require.True(t, client.OutcomeUnknown(err))
	})
	t.Run("-ERR, -MISMATCH, invalid arguments: known", func(t *testing.T) {
		_, err := pk.Prepare(ctx, "n", "k", v, client.ExpireAt(time.UnixMilli(1)))
		require.Regexp(t, "^ERR ", replyMsg(t, err))
		require.False(t, client.OutcomeUnknown(err))
		_, err = pk.ChangeKey(ctx, "n", "nobody", v, "new", v)
		require.ErrorIs(t, err, client.ErrMismatch)
		require.False(t, client.OutcomeUnknown(err))
		_, err = pk.Prepare(ctx, "bad name", "k", v)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
		require.False(t, client.OutcomeUnknown(err))
	})
	t.Run("ctx done before the call: known", func(t *testing.T) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		_, err := pk.Prepare(done, "n", "k", v)
		require.ErrorIs(t, err, context.Canceled)
		require.False(t, client.OutcomeUnknown(err))
	})
	t.Run("ctx cancelled after the send: unknown (here: reserved)", func(t *testing.T) {
		p, rdb := viaProxy(t, s, 3, noRetries)
		sent, cancel := context.WithCancel(ctx)
		p.interceptNext(1)
		result := make(chan error, 1)
		go func() { _, err := client.New(rdb).Prepare(sent, "n", "cancelled", v); result <- err }()
		h := <-p.held
		cancel()
		err := <-result // at once, the reply still held
		require.ErrorIs(t, err, context.Canceled)
		require.True(t, client.OutcomeUnknown(err))
		h.Relay()
		requireRecord(t, pk, "n", "cancelled", "v", time.Time{})
	})
	t.Run("connection lost mid reply (EOF): unknown", func(t *testing.T) {
		p, rdb := viaProxy(t, s, 3, noRetries)
		p.interceptNext(1)
		result := make(chan error, 1)
		go func() { _, err := client.New(rdb).Prepare(ctx, "n", "eof", v); result <- err }()
		(<-p.held).Drop()
		err := <-result
		require.Error(t, err)
		require.True(t, client.OutcomeUnknown(err), "%v", err)
	})
	t.Run("read timeout: unknown", func(t *testing.T) {
		p, rdb := viaProxy(t, s, 3, func(o *redis.Options) { o.MaxRetries = -1; o.ReadTimeout = 100 * time.Millisecond })
		p.interceptNext(1)
		result := make(chan error, 1)
		go func() { _, err := client.New(rdb).Prepare(ctx, "n", "timeout", v); result <- err }()
		h := <-p.held
		err := <-result // go-redis gives up at its ReadTimeout
		h.Drop()
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.True(t, client.OutcomeUnknown(err))
	})
	t.Run("connection refused: unknown (go-redis returns its last attempt's error only)", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: closedPort(t), MaxRetries: -1})
		defer rdb.Close()
		_, err := client.New(rdb).Prepare(ctx, "n", "k", v)
		var opErr *net.OpError
		require.ErrorAs(t, err, &opErr)
		require.Equal(t, "dial", opErr.Op)
		require.True(t, client.OutcomeUnknown(err))
	})
	t.Run("a closed client: known", func(t *testing.T) {
		rdb := redis.NewClient(&redis.Options{Addr: s.addr, Password: password})
		require.NoError(t, rdb.Close())
		_, err := client.New(rdb).Prepare(ctx, "n", "k", v)
		require.ErrorIs(t, err, redis.ErrClosed)
		require.False(t, client.OutcomeUnknown(err))
	})
	t.Run("a failed rollback: unknown", func(t *testing.T) {
		err := &client.RollbackError{Rollback: errors.New("x"), Body: errors.New("y")}
		require.True(t, client.OutcomeUnknown(err))
		require.False(t, client.OutcomeUnknown(errors.New("the body's own error")))
	})
}
