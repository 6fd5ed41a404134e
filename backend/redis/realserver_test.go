package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestRace64Connections races 64 clients, each with its own connection,
// for one key on a real Redis: exactly one wins, every round.
func TestRace64Connections(t *testing.T) {
	for _, env := range []string{envStandalone, envCluster} {
		t.Run(env, func(t *testing.T) {
			url := serverURL(t, env)
			t.Parallel()
			stores := make([]*Store, 64)
			stores[0] = openStore(t, url, Config{})
			for i := 1; i < len(stores); i++ {
				stores[i] = openStore(t, url, Config{KeyPrefix: stores[0].keys.(keyspace).prefix})
			}
			ctx := context.Background()
			for _, s := range stores {
				require.NoError(t, s.Ping(ctx)) // connected before the race
			}
			for round := range 10 {
				key := fmt.Appendf(nil, "k%d", round)
				var won atomic.Int32
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i, s := range stores {
					wg.Go(func() {
						<-start
						ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "race", key, fmt.Appendf(nil, "v%d", i), backend.Expiry{})
						require.NoError(t, err)
						if ok {
							won.Add(1)
						}
					})
				}
				close(start)
				wg.Wait()
				require.Equal(t, int32(1), won.Load(), "round %d", round)
			}
		})
	}
}

// load runs Prepare of fresh keys from workers goroutines until stop is
// closed, counting successes and errors. A false would mean a command ran
// twice or a failure was taken for an answer: it fails the test.
type load struct {
	ok, failed atomic.Int64
	lastErr    atomic.Value
	wg         sync.WaitGroup
	stop       chan struct{}
}

func startLoad(t *testing.T, s *Store, workers int) *load {
	l := &load{stop: make(chan struct{})}
	var seq atomic.Int64
	for range workers {
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				key := fmt.Appendf(nil, "load%d", seq.Add(1))
				ok, err := (backend.Calls{Runner: s}).Prepare(context.Background(), "load", key, []byte("v"), backend.Expiry{})
				switch {
				case err != nil:
					l.failed.Add(1)
					l.lastErr.Store(err.Error())
					time.Sleep(5 * time.Millisecond)
				case !ok:
					t.Errorf("Prepare of the fresh key %s answered false", key)
				default:
					l.ok.Add(1)
				}
			}
		})
	}
	return l
}

// waitServing waits until the load has more successes than at the call.
func (l *load) waitServing(t *testing.T, within time.Duration) {
	t.Helper()
	base := l.ok.Load()
	require.Eventually(t, func() bool { return l.ok.Load() > base+50 }, within, 10*time.Millisecond,
		"no service (last error: %v)", l.lastErr.Load())
}

func (l *load) end() { close(l.stop); l.wg.Wait() }

// TestRestartMidLoad kills a real redis-server under load and starts a new
// one on the same port, without its scripts: commands fail meanwhile, then
// succeed through the NOSCRIPT fallback, on the same Store.
func TestRestartMidLoad(t *testing.T) {
	t.Parallel()
	p := startRedis(t)
	s := openStore(t, "redis://"+p.addr(), Config{Timeout: 500 * time.Millisecond})
	l := startLoad(t, s, 8)
	defer l.end()
	l.waitServing(t, 5*time.Second)

	p.kill()
	base := l.failed.Load()
	require.Eventually(t, func() bool { return l.failed.Load() > base }, 5*time.Second, 10*time.Millisecond)
	p.start(t)
	t.Cleanup(p.kill)

	l.waitServing(t, 10*time.Second)
	t.Logf("restart: %d ok, %d errors, last error: %v", l.ok.Load(), l.failed.Load(), l.lastErr.Load())
	// The new process started without scripts: EVALSHA got NOSCRIPT, and
	// the store fell back to EVAL, which loaded the script again.
	rc := p.client(t)
	stats, err := rc.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	require.Contains(t, stats, "cmdstat_eval:calls=")
	loaded, err := rc.ScriptExists(context.Background(), sha(blockLua)).Result()
	require.NoError(t, err)
	require.Equal(t, []bool{true}, loaded)
}

// TestSentinelFailover kills the master under load: commands fail during
// the failover and succeed again afterwards on the promoted replica,
// without reopening the Store.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	master := startRedis(t)
	replica := startRedis(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	sentinel := startSentinel(t, master.port)
	rc := replica.client(t)
	ctx := context.Background()
	require.Eventually(t, func() bool {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 10*time.Second, 20*time.Millisecond)

	url := fmt.Sprintf("redis+sentinel://%s/mymaster", sentinel.addr())
	s := openStore(t, url, Config{Timeout: 500 * time.Millisecond})
	l := startLoad(t, s, 8)
	defer l.end()
	l.waitServing(t, 5*time.Second)

	start := time.Now()
	master.kill()
	base := l.failed.Load()
	require.Eventually(t, func() bool { return l.failed.Load() > base }, 5*time.Second, 10*time.Millisecond)
	l.waitServing(t, 20*time.Second)
	t.Logf("failover: service back after %s; %d ok, %d errors, last error: %v",
		time.Since(start).Round(time.Millisecond), l.ok.Load(), l.failed.Load(), l.lastErr.Load())
	info, err := rc.Info(ctx, "replication").Result()
	require.NoError(t, err)
	require.Contains(t, info, "role:master")
	require.NoError(t, s.Ping(ctx))
}

// sha is the SHA1 digest of a script, as EVALSHA names it.
func sha(src string) string {
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:])
}
