package redis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// op is one Store call, reduced to its error: a failure must come back as
// an error, whatever answer the call would have given.
type op struct {
	name string
	call func(ctx context.Context, s *Store) error
}

func allOps() []op {
	k, v := []byte("k"), []byte("v")
	return []op{
		{"prepare", func(ctx context.Context, s *Store) error {
			_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", k, v, backend.Expiry{})
			return err
		}},
		{"get", func(ctx context.Context, s *Store) error {
			_, _, err := (backend.Calls{Runner: s}).Get(ctx, "ns", k)
			return err
		}},
		{"rollback", func(ctx context.Context, s *Store) error {
			_, err := (backend.Calls{Runner: s}).Rollback(ctx, "ns", k, backend.Cond{})
			return err
		}},
		{"reprepare", func(ctx context.Context, s *Store) error {
			_, err := (backend.Calls{Runner: s}).Reprepare(ctx, "ns", k, v, backend.Cond{}, backend.Expiry{Kind: backend.KeepTTL})
			return err
		}},
		{"move", func(ctx context.Context, s *Store) error {
			_, err := (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("k2"), v, k, v, backend.Expiry{})
			return err
		}},
		{"ping", func(ctx context.Context, s *Store) error { return s.Ping(ctx) }},
	}
}

// requireOneLine checks the shape of an error the sidecar sends as
// -UNAVAILABLE <message>.
func requireOneLine(t *testing.T, err error, op string) {
	t.Helper()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "redis: "+op+": "), "%q", err)
	require.NotContains(t, err.Error(), "\n")
	require.NotContains(t, err.Error(), "\r")
}

// TestServerErrors checks that the errors Redis answers while it cannot
// serve (loading, demoted after a failover, cluster down, …) are errors,
// never a false, and that the store serves again when they stop.
func TestServerErrors(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{})
	ctx := context.Background()
	require.NoError(t, s.Ping(ctx))
	for _, msg := range []string{
		"LOADING Redis is loading the dataset in memory",
		"READONLY You can't write against a read only replica.",
		"CLUSTERDOWN The cluster is down",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
		"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
	} {
		t.Run(strings.Fields(msg)[0], func(t *testing.T) {
			f.SetError(msg)
			for _, o := range allOps() {
				err := o.call(ctx, s)
				requireOneLine(t, err, o.name)
				require.Equal(t, "redis: "+o.name+": "+msg, err.Error())
			}
			f.SetError("")
			for _, o := range allOps() {
				require.NoError(t, o.call(ctx, s), o.name)
			}
		})
	}
}

// TestDownAtOpen checks that Open succeeds while Redis is down, that
// commands then fail fast with an error, and that the same Store serves
// once Redis is up.
func TestDownAtOpen(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	s := openStore(t, "redis://"+addr, Config{Timeout: time.Second})
	ctx := context.Background()
	for _, o := range allOps() {
		start := time.Now()
		err := o.call(ctx, s)
		t.Logf("%s: %v", o.name, err)
		requireOneLine(t, err, o.name)
		require.Contains(t, err.Error(), "connect to "+addr+": ")
		require.Contains(t, err.Error(), "connection refused")
		require.Less(t, time.Since(start), time.Second, o.name)
	}

	m := miniredis.NewMiniRedis()
	require.NoError(t, m.StartAddr(addr))
	t.Cleanup(m.Close)
	for _, o := range allOps() {
		require.NoError(t, o.call(ctx, s), o.name)
	}
}

// TestDownAtOpenTopologies checks that Sentinel and Cluster URLs open too
// while nothing answers, and fail each command with an error.
func TestDownAtOpenTopologies(t *testing.T) {
	port := freePort(t)
	for url, want := range map[string]string{
		fmt.Sprintf("redis+cluster://127.0.0.1:%d", port):    fmt.Sprintf("connect to cluster 127.0.0.1:%d: ", port),
		fmt.Sprintf("redis+sentinel://127.0.0.1:%d/m", port): fmt.Sprintf(`connect to sentinel master "m" via 127.0.0.1:%d: `, port),
	} {
		t.Run(url, func(t *testing.T) {
			s := openStore(t, url, Config{Timeout: time.Second})
			for _, o := range allOps() {
				err := o.call(context.Background(), s)
				requireOneLine(t, err, o.name)
				require.Contains(t, err.Error(), want)
			}
		})
	}
}

// TestNoAnswer checks that a Redis that accepts connections but never
// answers costs each call the timeout, not more.
func TestNoAnswer(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := openStore(t, "redis://"+silentServer(t), Config{Timeout: timeout})
	for _, o := range allOps() {
		start := time.Now()
		err := o.call(context.Background(), s)
		took := time.Since(start)
		t.Logf("%s after %s: %v", o.name, took.Round(time.Millisecond), err)
		requireOneLine(t, err, o.name)
		require.Contains(t, err.Error(), "no answer within 200ms")
		limit := timeout + 300*time.Millisecond
		if o.name == "move" {
			limit += timeout // a key change across slots has a second budget
		}
		require.Less(t, took, limit, o.name)
	}
}

// silentServer accepts connections and never answers; it returns its
// address.
func silentServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	return l.Addr().String()
}

// TestClosed checks that calls after Close fail.
func TestClosed(t *testing.T) {
	f := startFake(t)
	s, err := Open(context.Background(), f.url(), Config{})
	require.NoError(t, err)
	require.NoError(t, s.Ping(context.Background()))
	require.NoError(t, s.Close())
	for _, o := range allOps() {
		err := o.call(context.Background(), s)
		require.EqualError(t, err, "redis: "+o.name+": store closed")
	}
}

// TestScriptFlush checks that commands go on after SCRIPT FLUSH, through
// the NOSCRIPT fallback, which also loads the script again.
func TestScriptFlush(t *testing.T) {
	f := startFake(t)
	urls := map[string]string{"miniredis": f.url()}
	if url, ok := lookupServer(t, envStandalone); ok {
		urls["redis-server"] = url
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			s := openStore(t, url, Config{})
			opt, err := goredis.ParseURL(url)
			require.NoError(t, err)
			rc := goredis.NewClient(opt)
			t.Cleanup(func() { _ = rc.Close() })
			ctx := context.Background()
			for i := range 3 {
				require.NoError(t, rc.ScriptFlush(ctx).Err())
				ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", fmt.Appendf(nil, "k%d", i), []byte("v"), backend.Expiry{})
				require.NoError(t, err)
				require.True(t, ok)
				loaded, err := rc.ScriptExists(ctx, sha(blockLua)).Result()
				require.NoError(t, err)
				require.Equal(t, []bool{true}, loaded)
			}
		})
	}
}

// TestHungServer stops a real redis-server (SIGSTOP) under a connected
// Store: calls fail within the timeout, and succeed again once it resumes.
func TestHungServer(t *testing.T) {
	p := startRedis(t)
	s := openStore(t, "redis://"+p.addr(), Config{Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	require.NoError(t, s.Ping(ctx))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGSTOP))
	resumed := false
	defer func() {
		if !resumed {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	for _, o := range allOps() {
		start := time.Now()
		err := o.call(ctx, s)
		t.Logf("%s after %s: %v", o.name, time.Since(start).Round(time.Millisecond), err)
		requireOneLine(t, err, o.name)
		require.Less(t, time.Since(start), time.Second, o.name)
	}
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGCONT))
	resumed = true
	require.Eventually(t, func() bool { return s.Ping(ctx) == nil }, 5*time.Second, 20*time.Millisecond)
	for _, o := range allOps() {
		require.NoError(t, o.call(ctx, s), o.name)
	}
}
