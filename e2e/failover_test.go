package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestSentinelFailover runs the sidecar on redis+sentinel:// and kills the
// master under load: clients get -UNAVAILABLE during the failover (never
// :0 for a fresh key) and are served again by the promoted replica, with
// no restart of the sidecar.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Redis servers and sentinels and fails over under load")
	}
	mport, rport, sport := freePort(t), freePort(t), freePort(t)
	master := redisServer(t, "--port", fmt.Sprint(mport))
	redisServer(t, "--port", fmt.Sprint(rport), "--replicaof", "127.0.0.1", fmt.Sprint(mport))
	replica := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", rport), Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { replica.Close() })
	require.Eventually(t, func() bool {
		info, err := replica.Info(ctx(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 10*time.Second, 20*time.Millisecond)

	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, "port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor mymaster 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds mymaster 500\n"+
		"sentinel failover-timeout mymaster 3000\n", sport, dir, mport), 0o600))
	sentinel := exec.Command("redis-server", conf, "--sentinel")
	require.NoError(t, sentinel.Start())
	t.Cleanup(func() { _ = sentinel.Process.Kill(); _ = sentinel.Wait() })

	s := start(t, "--backend", fmt.Sprintf("redis+sentinel://127.0.0.1:%d/mymaster", sport), "--backend-timeout", "500ms")
	var ok, failed atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 8 {
		c := s.client(t, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				n, err := c.Do(ctx(), "PK.PREPARE", "failover", fmt.Sprintf("w%d-%d", w, i), "v").Int64()
				switch {
				case err != nil && !strings.HasPrefix(err.Error(), "UNAVAILABLE "):
					t.Errorf("not UNAVAILABLE: %v", err)
					return
				case err != nil:
					failed.Add(1)
					time.Sleep(10 * time.Millisecond)
				case n != 1:
					t.Errorf("a fresh key answered :%d", n)
					return
				default:
					ok.Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	serving := func(within time.Duration) {
		t.Helper()
		base := ok.Load()
		require.Eventually(t, func() bool { return ok.Load() > base+50 }, within, 10*time.Millisecond)
	}
	serving(10 * time.Second)

	// A ping has answered (INFO pings too), so the sidecar knows the
	// master before it dies: a change it has not seen a first master for
	// is not a failover to it.
	infoBefore, err := s.client(t, 2).Info(ctx(), "backend").Result()
	require.NoError(t, err)
	require.Contains(t, infoBefore, "backend_ready:1\r\n")
	began := time.Now()
	_ = master.Process.Kill()
	require.Eventually(t, func() bool { return failed.Load() > 0 }, 5*time.Second, 10*time.Millisecond)
	serving(30 * time.Second)
	t.Logf("service back %s after the master died; %d ok, %d unavailable",
		time.Since(began).Round(time.Millisecond), ok.Load(), failed.Load())
	info, err := replica.Info(ctx(), "replication").Result()
	require.NoError(t, err)
	require.Contains(t, info, "role:master")
	infoSidecar, err := s.client(t, 2).Info(ctx(), "backend").Result()
	require.NoError(t, err)
	require.Contains(t, infoSidecar, "backend_ready:1\r\n")
	// The health watcher's pings saw the master change: one log line.
	failover := regexp.MustCompile(`msg="redis: failover seen: the Sentinel master changed" conn=health from=127\.0\.0\.1:\d+ to=127\.0\.0\.1:\d+`)
	require.Eventually(t, func() bool { return failover.MatchString(s.logs()) }, 5*time.Second, 20*time.Millisecond, s.logs())
	require.Equal(t, 1, len(failover.FindAllString(s.logs(), -1)), s.logs())
}
