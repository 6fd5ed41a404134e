package e2e

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestBackendDown: with its Redis or MongoDB unreachable the sidecar still
// starts, says it is not ready, and answers every command -UNAVAILABLE
// within --backend-timeout — never :0 or nil.
func TestBackendDown(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a backend under load and waits for its recovery")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, url := range []string{"redis://" + dead, "redis+cluster://" + dead, "mongodb://" + dead + "/?directConnection=true"} {
		t.Run(strings.SplitN(url, ":", 2)[0], func(t *testing.T) {
			t.Parallel()
			s := start(t, "--backend", url, "--backend-timeout", "300ms")
			c := s.client(t, 2)
			info, err := c.Info(ctx(), "backend").Result()
			require.NoError(t, err)
			require.Contains(t, info, "backend_ready:0\r\n")
			require.Contains(t, info, "backend_error:")
			for _, args := range [][]any{
				{"PK.PREPARE", "ns", "k", "v"},
				{"PK.GET", "ns", "k"},
				{"PK.GETVALUE", "ns", "k"},
				{"PK.ROLLBACK", "ns", "k", "IFEQ", "v"},
				{"PK.REPREPARE", "ns", "k", "v"},
				{"PK.REPREPARE", "ns", "k2", "v", "FROM", "k", "IFEQ", "v"},
			} {
				began := time.Now()
				_, err := c.Do(ctx(), args...).Result()
				require.Error(t, err, "%v", args)
				require.True(t, strings.HasPrefix(err.Error(), "UNAVAILABLE "), "%v: %v", args, err)
				// a key change may spend a second timeout on its undo
				require.Less(t, time.Since(began), 2*time.Second, "%v", args)
			}
			// A transaction fails as a whole: one -UNAVAILABLE for EXEC (MongoDB
			// refuses blocks before it would reach the server).
			r := s.raw(t)
			r.send(resp("MULTI") + resp("PK.PREPARE", "ns", "k", "v") + resp("PK.GET", "ns", "k") + resp("EXEC"))
			r.expect("+OK\r\n+QUEUED\r\n+QUEUED\r\n")
			line, err := r.rd.ReadString('\n')
			require.NoError(t, err)
			if strings.HasPrefix(url, "mongodb") {
				require.True(t, strings.HasPrefix(line, "-EXECABORT Transaction discarded: the mongodb backend"), line)
			} else {
				require.True(t, strings.HasPrefix(line, "-UNAVAILABLE redis: exec: "), line)
			}
			check(t, c, "PONG", "PING")
		})
	}
}

// TestHungRedis: a Redis that stops answering (SIGSTOP) costs each command
// -UNAVAILABLE within --backend-timeout, never :0, while other clients are
// still answered: the event loop does not wait on Redis. Once Redis
// resumes, commands succeed again without a restart.
func TestHungRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("stops a Redis of its own (SIGSTOP) under load")
	}
	port := freePort(t)
	srv := redisServer(t, "--port", fmt.Sprint(port))
	url := fmt.Sprintf("redis://127.0.0.1:%d", port)
	s := start(t, "--backend", url, "--backend-timeout", "1s")
	a, b := s.client(t, 2), s.client(t, 2)
	require.Eventually(t, func() bool { return a.Do(ctx(), "PK.PREPARE", "hung", "k", "v").Err() == nil },
		10*time.Second, 20*time.Millisecond)
	// The loop's own connection is up, so that it is the one that hangs.
	admin := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer admin.Close()
	loopServed := regexp.MustCompile(`name=prepkey-loop .*cmd=evalsha`)
	warm := 0
	require.Eventually(t, func() bool {
		warm++
		if a.Do(ctx(), "PK.PREPARE", "hung", fmt.Sprint("warm", warm), "v").Err() != nil {
			return false
		}
		list, err := admin.ClientList(ctx()).Result()
		return err == nil && loopServed.MatchString(list)
	}, 10*time.Second, 10*time.Millisecond)

	require.NoError(t, srv.Process.Signal(syscall.SIGSTOP))
	resumed := false
	defer func() {
		if !resumed {
			_ = srv.Process.Signal(syscall.SIGCONT)
		}
	}()
	unavailable := func(err error) {
		t.Helper()
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "UNAVAILABLE "), err.Error())
	}
	began := time.Now()
	unavailable(a.Do(ctx(), "PK.PREPARE", "hung", "k2", "v").Err())
	require.Less(t, time.Since(began), 3*time.Second)

	// k3 goes on a connection of its own, so that the sidecar's count of
	// commands handed to the store (INFO's total_commands_processed) tells
	// when it is at the store: every other command counted meanwhile is one
	// of b's INFOs.
	processed := func() int64 {
		t.Helper()
		info, err := b.Info(ctx(), "stats").Result()
		require.NoError(t, err)
		m := regexp.MustCompile(`total_commands_processed:(\d+)`).FindStringSubmatch(info)
		require.NotNil(t, m, info)
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	k3 := s.raw(t)
	k3.wait = 10 * time.Second
	base, infos := processed(), int64(0)
	k3.send(resp("PK.PREPARE", "hung", "k3", "v"))
	done := make(chan error, 1)
	go func() {
		line, err := k3.rd.ReadString('\n')
		if err == nil {
			err = errors.New(strings.TrimSpace(strings.TrimPrefix(line, "-")))
		}
		done <- err
	}()
	require.Eventually(t, func() bool { infos++; return processed() > base+infos }, 10*time.Second, time.Millisecond,
		"k3 reached the store")
	check(t, b, "PONG", "PING")
	select {
	case err := <-done:
		t.Fatalf("PING was answered only after the hung command (%v)", err)
	default:
	}
	unavailable(<-done)

	require.NoError(t, srv.Process.Signal(syscall.SIGCONT))
	resumed = true
	require.Eventually(t, func() bool {
		n, err := a.Do(ctx(), "PK.PREPARE", "hung", "k4", "v").Int64()
		return err == nil && n == 1
	}, 10*time.Second, 50*time.Millisecond)
	check(t, a, []any{"v", int64(-1)}, "PK.GETVALUE", "hung", "k")
	// The dropped connection is logged with its cause, and its return.
	dropped := regexp.MustCompile(`backend connection lost" conn=loop-\d+ err="no answer within 1s" unanswered=1`)
	require.Eventually(t, func() bool {
		logs := s.logs()
		return dropped.MatchString(logs) && strings.Contains(logs, "backend connection regained")
	}, 10*time.Second, 10*time.Millisecond, "logs: %s", s.logs())
}

// TestRedisRestart runs a load of new keys through the sidecar while Redis
// loses its script cache (SCRIPT FLUSH), then is killed and started again
// empty on the same port. A new key is never answered :0: the flush costs
// nothing (the scripts are loaded again), the restart only -UNAVAILABLE
// while Redis is away, and the same sidecar serves again after it.
func TestRedisRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("flushes, kills and restarts a Redis of its own under load")
	}
	port := freePort(t)
	srv := redisServer(t, "--port", fmt.Sprint(port))
	s := start(t, "--backend", fmt.Sprintf("redis://127.0.0.1:%d", port), "--backend-timeout", "500ms")
	admin := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer admin.Close()
	c := s.client(t, 2)
	require.Eventually(t, func() bool { return c.Do(ctx(), "PK.PREPARE", "restart", "warm", "v").Err() == nil },
		10*time.Second, 20*time.Millisecond)

	const clients = 8
	var next atomic.Int64
	var wins, unavailable atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		select {
		case <-stop:
		default:
			close(stop) // a failed require: stop the load before the clients close
			wg.Wait()
		}
	}()
	for range clients {
		c := s.client(t, 2, func(o *redis.Options) { o.PoolSize = 1 })
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprint("k", next.Add(1))
				n, err := c.Do(ctx(), "PK.PREPARE", "restart", key, "v").Int64()
				switch {
				case err == nil && n == 1:
					wins.Add(1)
				case err != nil && strings.HasPrefix(err.Error(), "UNAVAILABLE "):
					unavailable.Add(1)
				default:
					t.Errorf("new key %s: %d, %v", key, n, err)
				}
			}
		})
	}
	progress := func(what string) {
		t.Helper()
		from := wins.Load()
		require.Eventually(t, func() bool { return wins.Load() > from+200 }, 20*time.Second, 10*time.Millisecond, what)
		// and the load goes over the event loop's own connection
		loopConn := regexp.MustCompile(`name=prepkey-loop .*cmd=evalsha`)
		require.Eventually(t, func() bool {
			list, err := admin.ClientList(ctx()).Result()
			return err == nil && loopConn.MatchString(list)
		}, 10*time.Second, 10*time.Millisecond, what)
	}
	progress("before")
	require.NoError(t, admin.ScriptFlush(ctx()).Err())
	progress("after SCRIPT FLUSH")
	require.Zero(t, unavailable.Load(), "a flushed script cache costs no failure")

	require.NoError(t, srv.Process.Kill())
	_ = srv.Wait()
	// commands meet a Redis that is away
	from := unavailable.Load()
	require.Eventually(t, func() bool { return unavailable.Load() > from }, 20*time.Second, time.Millisecond)
	redisServer(t, "--port", fmt.Sprint(port))
	progress("after the restart")
	close(stop)
	wg.Wait()
	require.Positive(t, unavailable.Load(), "Redis was away for a while")
	t.Logf("%d reservations, %d -UNAVAILABLE", wins.Load(), unavailable.Load())
}
