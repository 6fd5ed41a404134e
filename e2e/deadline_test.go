package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestWaitSlowReplica: with ?wait=1 a write is answered once the replica
// has it, within wait-timeout (docs/redis.md), on every path the sidecar
// takes to Redis: batches through the Redis client (Sentinel) and each
// event loop's own connection (a standalone URL), a command alone and an
// EXEC. The replica is stopped (SIGSTOP) for longer than --backend-timeout
// and well within wait-timeout: every write is answered :1. The batch
// path's watchdog once answered -UNAVAILABLE at the plain backend timeout
// while the store itself, and the loop's connection, waited backend
// timeout plus wait-timeout (issue 33).
func TestWaitSlowReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis master, replica and sentinels")
	}
	set := startSentinelSet(t)
	b, err := os.ReadFile(filepath.Join(set.dir, "sentinel-replica", "redis.pid"))
	require.NoError(t, err)
	replica, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	master := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", set.master)})
	defer master.Close()

	for _, tc := range []struct{ name, url string }{
		{"batch", set.url + "?wait=1&wait-timeout=10s"},
		{"wire", fmt.Sprintf("redis://127.0.0.1:%d?wait=1&wait-timeout=10s", set.master)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, "--backend", tc.url, "--backend-timeout", "300ms")
			ns := uniqueNS(t)
			c := s.client(t, 2, func(o *redis.Options) { o.ReadTimeout = 15 * time.Second })
			require.Eventually(t, func() bool { return c.Do(ctx(), "PK.PREPARE", ns, "warm", "v").Err() == nil },
				20*time.Second, 20*time.Millisecond)
			if tc.name == "wire" { // the loop's own connection is up: the writes go on it
				require.Eventually(t, func() bool {
					list, err := master.ClientList(ctx()).Result()
					return err == nil && strings.Contains(list, "name=prepkey-loop")
				}, 10*time.Second, 10*time.Millisecond)
			}

			// The replica is away for 1s, over three backend timeouts.
			require.NoError(t, syscall.Kill(replica, syscall.SIGSTOP))
			resume := sync.OnceFunc(func() { _ = syscall.Kill(replica, syscall.SIGCONT) })
			defer resume()
			timer := time.AfterFunc(time.Second, resume) // the fault's length, not a wait for an event
			defer timer.Stop()
			n, err := c.Do(ctx(), "PK.PREPARE", ns, "alone", "v").Int64()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)

			require.NoError(t, syscall.Kill(replica, syscall.SIGSTOP))
			resume = sync.OnceFunc(func() { _ = syscall.Kill(replica, syscall.SIGCONT) })
			defer resume()
			timer = time.AfterFunc(time.Second, resume)
			defer timer.Stop()
			cmds, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
				p.Do(ctx(), "PK.PREPARE", ns, "block", "v")
				return nil
			})
			require.NoError(t, err)
			n, err = cmds[0].(*redis.Cmd).Int64()
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
		})
	}
}
