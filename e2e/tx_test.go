package e2e

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// blocks says which transaction blocks a backend runs: all of them, those
// whose keys are in one slot (Redis Cluster), or none with a PK command
// (MongoDB).
func blocks(backend string) string {
	switch backend {
	case "mongo":
		return "none"
	case "redis-cluster":
		return "one slot"
	}
	return "all"
}

// TestTransactions runs blocks through go-redis's TxPipelined (MULTI …
// EXEC, as redis-py's pipeline(), ioredis's multi() and redis-rb's multi
// send them), in RESP2 and RESP3, on every backend.
func TestTransactions(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b.args(t)...)
			runs := blocks(b.name)
			for _, proto := range []int{2, 3} {
				t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
					c := s.client(t, proto)
					ns := uniqueNS(t)

					// One key: every backend that runs blocks at all.
					cmds, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
						p.Do(ctx(), "PK.PREPARE", ns, "alice", "v1")
						p.Do(ctx(), "PK.PREPARE", ns, "alice", "v2")
						p.Do(ctx(), "PK.GET", ns, "alice")
						p.Do(ctx(), "PING")
						p.Do(ctx(), "PK.ROLLBACK", ns, "alice")
						p.Do(ctx(), "PK.GET", ns, "alice")
						return nil
					})
					if runs == "none" {
						require.ErrorContains(t, err, "EXECABORT Transaction discarded: ")
					} else {
						require.ErrorIs(t, err, redis.Nil) // the last command's nil
						got := make([]any, len(cmds))
						for i, cmd := range cmds {
							got[i], _ = cmd.(*redis.Cmd).Result()
						}
						require.Equal(t, []any{int64(1), int64(0), "v1", "PONG", int64(1), nil}, got)
					}
					check(t, c, nilReply, "PK.GET", ns, "alice")

					// Two keys: one slot each on a Cluster.
					_, err = c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
						p.Do(ctx(), "PK.PREPARE", ns, "a", "x")
						p.Do(ctx(), "PK.PREPARE", ns, "b", "x")
						return nil
					})
					if runs == "all" {
						require.NoError(t, err)
						check(t, c, "x", "PK.GET", ns, "a")
						check(t, c, "x", "PK.GET", ns, "b")
					} else {
						require.ErrorContains(t, err, "EXECABORT Transaction discarded: ")
						if b.name == "redis-cluster" {
							require.ErrorContains(t, err, "CROSSSLOT")
						}
						check(t, c, nilReply, "PK.GET", ns, "a")
						check(t, c, nilReply, "PK.GET", ns, "b")
					}

					// A command refused while queued: nothing runs.
					_, err = c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
						p.Do(ctx(), "PK.PREPARE", ns, "c", "x")
						p.Do(ctx(), "PK.PREPARE", ns, "d", "x", "EX", "0")
						return nil
					})
					require.ErrorContains(t, err, "EXECABORT Transaction discarded because of previous errors.")
					check(t, c, nilReply, "PK.GET", ns, "c")

					// The client goes on as usual.
					check(t, c, "PONG", "PING")
				})
			}
		})
	}
}

// TestTransactionsRaw checks EXEC's exact bytes, a block inside a
// pipeline included, on the backends that run blocks.
func TestTransactionsRaw(t *testing.T) {
	for _, b := range backends(t) {
		if blocks(b.name) != "all" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b.args(t)...)
			r := s.raw(t)
			ns := uniqueNS(t)
			r.send(resp("PK.PREPARE", ns, "old", "ov") + resp("MULTI") + resp("PK.PREPARE", ns, "a", "v") +
				resp("PK.REPREPARE", ns, "new", "nv", "FROM", "old", "IFEQ", "ov") + resp("PK.GETVALUE", ns, "old") +
				resp("ECHO", "e") + resp("PK.PREPARE", ns, "a", "w") + resp("EXEC") + resp("PK.GET", ns, "new") +
				resp("MULTI") + resp("EXEC") + resp("DISCARD") + resp("WATCH", "a"))
			r.expect(":1\r\n+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n" +
				"*5\r\n:1\r\n:1\r\n*-1\r\n$1\r\ne\r\n:0\r\n$2\r\nnv\r\n+OK\r\n*0\r\n-ERR DISCARD without MULTI\r\n" +
				"-ERR WATCH is not supported: use IFEQ conditions\r\n")
		})
	}
}

// TestTransactionsIsolated races, through the binary, blocks PK.PREPARE a
// + PK.PREPARE b against blocks PK.PREPARE b + PK.PREPARE a: one block
// takes both keys, never one key each.
func TestTransactionsIsolated(t *testing.T) {
	for _, b := range backends(t) {
		if blocks(b.name) != "all" {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, b.args(t)...)
			ns := uniqueNS(t)
			const clients, rounds = 6, 40
			cs := make([]*redis.Client, clients)
			for i := range cs {
				cs[i] = s.client(t, 2, func(o *redis.Options) { o.PoolSize = 1 })
			}
			for round := range rounds {
				var wg sync.WaitGroup
				start := make(chan struct{})
				won := make([]bool, clients)
				errs := make([]error, clients)
				for i, c := range cs {
					wg.Go(func() {
						keys := []string{"a", "b"}
						if i%2 == 1 {
							keys = []string{"b", "a"}
						}
						v := fmt.Sprintf("c%d-r%d", i, round)
						<-start
						cmds, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
							p.Do(ctx(), "PK.PREPARE", ns, keys[0], v)
							p.Do(ctx(), "PK.PREPARE", ns, keys[1], v)
							return nil
						})
						if err != nil {
							errs[i] = err
							return
						}
						x, _ := cmds[0].(*redis.Cmd).Int64()
						y, _ := cmds[1].(*redis.Cmd).Int64()
						if x != y {
							errs[i] = fmt.Errorf("client %d took one key of two (%d, %d)", i, x, y)
						}
						won[i] = x == 1
					})
				}
				close(start)
				wg.Wait()
				var winners []int
				for i := range cs {
					require.NoError(t, errs[i])
					if won[i] {
						winners = append(winners, i)
					}
				}
				require.Len(t, winners, 1, "round %d", round)
				v := fmt.Sprintf("c%d-r%d", winners[0], round)
				check(t, cs[0], v, "PK.GET", ns, "a")
				check(t, cs[0], v, "PK.GET", ns, "b")
				check(t, cs[0], int64(1), "PK.ROLLBACK", ns, "a")
				check(t, cs[0], int64(1), "PK.ROLLBACK", ns, "b")
			}
		})
	}
}
