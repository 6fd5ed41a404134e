package client_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// TestClusterClient: a go-redis ClusterClient over two sidecars of one
// Redis backend (ClusterSlots lists them, since a sidecar is not a Cluster
// node). PK commands declare no Redis keys, so the cluster client spreads
// them over its nodes; both see the same records.
func TestClusterClient(t *testing.T) {
	url := os.Getenv("PREPKEY_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PREPKEY_REDIS_URL is unset: scripts/test.sh starts that server")
		}
		t.Skip("PREPKEY_REDIS_URL is unset: two sidecars need a shared Redis backend (scripts/test.sh starts one)")
	}
	prefix := fmt.Sprintf("pk-client-cluster-%d:", time.Now().UnixNano())
	a := start(t, "--backend", url, "--redis-key-prefix", prefix)
	b := start(t, "--backend", url, "--redis-key-prefix", prefix)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			var mu sync.Mutex
			perNode := map[string]int{}
			cc := redis.NewClusterClient(&redis.ClusterOptions{
				ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
					return []redis.ClusterSlot{
						{Start: 0, End: 8191, Nodes: []redis.ClusterNode{{Addr: a.addr}}},
						{Start: 8192, End: 16383, Nodes: []redis.ClusterNode{{Addr: b.addr}}},
					}, nil
				},
				Password: password, Protocol: proto, MaxRetries: -1,
			})
			t.Cleanup(func() { cc.Close() })
			cc.OnNewNode(func(node *redis.Client) {
				addr := node.Options().Addr
				node.AddHook(countHook(func(cmd redis.Cmder) {
					mu.Lock()
					defer mu.Unlock()
					if len(cmd.Name()) > 3 && cmd.Name()[:3] == "pk." {
						perNode[addr]++
					}
				}))
			})
			pk, ctx, ns := client.New(cc), testContext(t), uniqueNS(t)
			direct := []*client.Client{client.New(a.client(t, proto, &recorder{})), client.New(b.client(t, proto, &recorder{}))}

			const n = 20
			for i := range n {
				ok, err := pk.Prepare(ctx, ns, fmt.Sprint("k", i), []byte(fmt.Sprint("v", i)))
				require.NoError(t, err)
				require.True(t, ok)
			}
			// go-redis up to v9.2x (this module requires v9.17.3) takes an
			// unknown command's first argument for its key: the PK commands
			// of one namespace go to one node. Namespaces of their own
			// reach both; later versions take the nodes in turn.
			for i := range n {
				ok, err := pk.Prepare(ctx, fmt.Sprint(ns, "-", i), "k", []byte("v"))
				require.NoError(t, err)
				require.True(t, ok)
				requireRecord(t, direct[i%2], fmt.Sprint(ns, "-", i), "k", "v", time.Time{})
			}
			for i := range n {
				for _, d := range direct {
					got, found, err := d.Get(ctx, ns, fmt.Sprint("k", i))
					require.NoError(t, err)
					require.True(t, found)
					require.Equal(t, fmt.Sprint("v", i), string(got))
				}
			}
			got := collect(t, pk.Scan(ctx, ns, client.ScanCount(3)))
			require.Len(t, got, n)

			errBody := errors.New("body")
			err := pk.UsingPrepare(ctx, ns, "using", []byte("v"), func(context.Context, bool) error { return errBody })
			require.True(t, err == errBody)
			requireNoRecord(t, direct[0], ns, "using")
			ok, err := pk.MPrepare(ctx, []client.Entry{{Name: ns, Key: "m1"}, {Name: ns, Key: "k0"}})
			require.NoError(t, err)
			require.False(t, ok)
			requireNoRecord(t, direct[1], ns, "m1")
			_, err = pk.ChangeKey(ctx, ns, "k1", []byte("wrong"), "k1b", nil)
			require.ErrorIs(t, err, client.ErrMismatch)

			mu.Lock()
			defer mu.Unlock()
			// Both sidecars served some (with go-redis's ShardPicker, in
			// later versions, a scan's pages too: its cursors are good on any
			// sidecar of the backend). 2^-19 that 20 namespaces hash to one.
			require.Len(t, perNode, 2, "%v", perNode)
			t.Logf("PK commands per sidecar: %v", perNode)
		})
	}
}

// TestRing: a go-redis Ring over the same two sidecars of one Redis
// backend: it shards by what it takes for the key; any shard serves.
func TestRing(t *testing.T) {
	url := os.Getenv("PREPKEY_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PREPKEY_REDIS_URL is unset: scripts/test.sh starts that server")
		}
		t.Skip("PREPKEY_REDIS_URL is unset: two sidecars need a shared Redis backend (scripts/test.sh starts one)")
	}
	prefix := fmt.Sprintf("pk-client-ring-%d:", time.Now().UnixNano())
	a := start(t, "--backend", url, "--redis-key-prefix", prefix)
	b := start(t, "--backend", url, "--redis-key-prefix", prefix)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			ring := redis.NewRing(&redis.RingOptions{
				Addrs:    map[string]string{"a": a.addr, "b": b.addr},
				Password: password, Protocol: proto, MaxRetries: -1,
			})
			t.Cleanup(func() { ring.Close() })
			pk, ctx, ns := client.New(ring), testContext(t), uniqueNS(t)
			direct := client.New(b.client(t, proto, &recorder{}))
			for i := range 10 {
				ok, err := pk.Prepare(ctx, ns, fmt.Sprint("k", i), []byte(fmt.Sprint("v", i)))
				require.NoError(t, err)
				require.True(t, ok)
				requireRecord(t, direct, ns, fmt.Sprint("k", i), fmt.Sprint("v", i), time.Time{})
			}
			require.Len(t, collect(t, pk.Scan(ctx, ns, client.ScanCount(4))), 10)
			err := pk.UsingPrepare(ctx, ns, "k0", []byte("x"), func(_ context.Context, prepared bool) error {
				require.False(t, prepared)
				return nil
			})
			require.NoError(t, err)
		})
	}
}

// countHook calls f for every command a go-redis client processes.
type countHook func(redis.Cmder)

func (h countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd)
		return next(ctx, cmd)
	}
}

func (h countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h(c)
		}
		return next(ctx, cmds)
	}
}
