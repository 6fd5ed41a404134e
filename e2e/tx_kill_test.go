package e2e

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestKill9Transactions: on file:, blocks of two reservations run from 8
// clients while the sidecar is killed with SIGKILL. After a restart on the
// same directory every acknowledged block has both keys, and every block
// that was in flight has both or neither: a block is one write batch.
func TestKill9Transactions(t *testing.T) {
	if testing.Short() {
		t.Skip("kills sidecars under load, round after round")
	}
	dir := t.TempDir()
	s := start(t, "--backend", "file:"+dir)
	const clients = 8
	type block struct{ user, email, value string }
	var (
		mu       sync.Mutex
		acked    []block
		inFlight []block
		wg       sync.WaitGroup
	)
	enough := make(chan struct{})
	var once sync.Once
	for w := range clients {
		wg.Go(func() {
			c := redis.NewClient(&redis.Options{Addr: s.addr, PoolSize: 1, MaxRetries: -1})
			defer c.Close()
			for i := 0; ; i++ {
				b := block{fmt.Sprintf("u-%d-%d", w, i), fmt.Sprintf("e-%d-%d", w, i), fmt.Sprintf("w%d-i%d", w, i)}
				mu.Lock()
				inFlight = append(inFlight, b)
				mu.Unlock()
				cmds, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
					p.Do(ctx(), "PK.PREPARE", "username", b.user, b.value)
					p.Do(ctx(), "PK.PREPARE", "email", b.email, b.value)
					return nil
				})
				if err != nil {
					return // killed
				}
				x, _ := cmds[0].(*redis.Cmd).Int64()
				y, _ := cmds[1].(*redis.Cmd).Int64()
				if x != 1 || y != 1 {
					t.Errorf("%v: %d %d", b, x, y)
					return
				}
				mu.Lock()
				acked = append(acked, b)
				if len(acked) >= 400 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		})
	}
	select {
	case <-enough:
	case <-time.After(60 * time.Second):
		t.Fatal("400 blocks not acknowledged within 60 s")
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
	<-s.done
	wg.Wait()

	again := start(t, "--backend", "file:"+dir)
	c := again.client(t, 2)
	get := func(ns, key string) (string, bool) {
		v, err := c.Do(ctx(), "PK.GET", ns, key).Text()
		if err == redis.Nil {
			return "", false
		}
		require.NoError(t, err)
		return v, true
	}
	isAcked := map[block]bool{}
	for _, b := range acked {
		isAcked[b] = true
		v1, ok1 := get("username", b.user)
		v2, ok2 := get("email", b.email)
		require.True(t, ok1 && ok2, "acknowledged block %v lost (%v %v)", b, ok1, ok2)
		require.Equal(t, []string{b.value, b.value}, []string{v1, v2})
	}
	for _, b := range inFlight {
		if isAcked[b] {
			continue
		}
		_, ok1 := get("username", b.user)
		_, ok2 := get("email", b.email)
		require.Equal(t, ok1, ok2, "block %v in flight at the kill: half of it on disk", b)
	}
}
