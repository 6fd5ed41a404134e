package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

func TestParseURLWait(t *testing.T) {
	got, err := parseURL("redis://h?wait=1")
	require.NoError(t, err)
	require.Equal(t, target{addrs: []string{"h:6379"}, wait: 1}, got)
	got, err = parseURL("redis+sentinel://s1,s2,s3/m?wait=2&wait-timeout=750ms&sentinel_password=x")
	require.NoError(t, err)
	require.Equal(t, 2, got.wait)
	require.Equal(t, 750*time.Millisecond, got.waitTimeout)

	for url, msg := range map[string]string{
		"redis://h?wait=x":                  `wait="x": want a number of replicas from 0 to 100`,
		"redis://h?wait=-1":                 `wait="-1": want a number of replicas from 0 to 100`,
		"redis://h?wait=101":                `wait="101": want a number of replicas from 0 to 100`,
		"redis://h?wait=1&wait-timeout=0s":  `wait-timeout="0s": want a positive duration such as 500ms or 2s`,
		"redis://h?wait=1&wait-timeout=5":   `wait-timeout="5": want a positive duration such as 500ms or 2s`,
		"redis://h?wait-timeout=1s":         `wait-timeout without wait`,
		"redis+cluster://a,b?wait=1":        `wait is not supported on redis+cluster:// (a batch's writes go to several masters; see docs/redis.md)`,
		"redis+cluster://a?wait-timeout=1s": `wait-timeout is not supported on redis+cluster:// (a batch's writes go to several masters; see docs/redis.md)`,
	} {
		_, err := parseURL(url)
		require.Error(t, err, url)
		require.True(t, strings.HasSuffix(err.Error(), ": "+msg), "%s: %v", url, err)
	}
}

// waits returns how many WAITs the server has run (INFO commandstats).
func waits(t *testing.T, c *goredis.Client) int {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_wait:calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

// waitOps is a batch of writes and reads: PREPARE of n new keys, a GET,
// a REPREPARE and a ROLLBACK.
func waitOps(ns string, n int) []backend.Op {
	var ops []backend.Op
	for i := range n {
		ops = append(ops, backend.Op{Kind: backend.OpPrepare, NS: ns, Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")})
	}
	return append(ops,
		backend.Op{Kind: backend.OpGet, NS: ns, Key: []byte("k0")},
		backend.Op{Kind: backend.OpReprepare, NS: ns, Key: []byte("k0"), Value: []byte("w")},
		backend.Op{Kind: backend.OpRollback, NS: ns, Key: []byte("k1")})
}

// wireBatch sends ops over the Wire as package protocol does (the
// requests, then WAIT) and reads the replies.
func wireBatch(t *testing.T, w *Wire, ops []backend.Op) []backend.Result {
	t.Helper()
	ctx := context.Background()
	nc, err := w.Dial(ctx)
	require.NoError(t, err)
	defer nc.Close()
	req := w.Append(nil, ops)
	req, sync := w.AppendSync(req, ops)
	require.True(t, sync)
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = nc.Write(req)
	require.NoError(t, err)
	res := make([]backend.Result, len(ops))
	var buf []byte
	chunk := make([]byte, 4096)
	read := func(f func([]byte) int) {
		for {
			if n := f(buf); n > 0 {
				buf = buf[n:]
				return
			}
			k, err := nc.Read(chunk)
			require.NoError(t, err)
			buf = append(buf, chunk[:k]...)
		}
	}
	for i := 0; i < len(ops); {
		read(func(b []byte) int {
			n, k, again := w.Read(b, ops[i:], res[i:])
			require.False(t, again)
			i += k
			return n
		})
	}
	read(func(b []byte) int { return w.ReadSync(b, ops, res) })
	require.Empty(t, buf)
	return res
}

// TestWaitNoReplica: with wait=1 on a Redis without replicas, every write
// fails with a ReplicationError (it ran on the master: it may or may not
// survive), reads are answered, and a batch costs one WAIT, on both paths.
func TestWaitNoReplica(t *testing.T) {
	t.Parallel()
	srv := startRedis(t)
	admin := srv.client(t)
	s := openStore(t, fmt.Sprintf("redis://%s?wait=1&wait-timeout=50ms", srv.addr()), Config{Timeout: time.Second})
	ctx := context.Background()

	_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("single"), []byte("v"), backend.Expiry{})
	var re *ReplicationError
	require.ErrorAs(t, err, &re)
	require.Equal(t, ReplicationError{Acked: 0, Want: 1, After: 50 * time.Millisecond}, *re)
	require.EqualError(t, err, "replication: 0 of 1 replicas acknowledged the write within 50ms")
	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte("single"))
	require.NoError(t, err)
	require.True(t, ok, "the master ran the write")
	require.Equal(t, "v", string(rec.Value))

	// a transaction (EXEC, one script) is one write: one WAIT, and the
	// whole block fails
	before := waits(t, admin)
	err = s.Run(ctx, waitOps("tx", 2), make([]backend.Result, 5), backend.Isolated)
	require.ErrorAs(t, err, &re)
	require.Equal(t, before+1, waits(t, admin))

	for name, batch := range map[string]func(ops []backend.Op) []backend.Result{
		"rueidis": func(ops []backend.Op) []backend.Result {
			res := make([]backend.Result, len(ops))
			s.Run(ctx, ops, res, backend.Pipelined)
			return res
		},
		"wire": func(ops []backend.Op) []backend.Result { return wireBatch(t, s.Wire(), ops) },
	} {
		before := waits(t, admin)
		ops := waitOps("b"+name, 10)
		res := batch(ops)
		require.Equal(t, before+1, waits(t, admin), "%s: one WAIT per batch", name)
		for i, op := range ops {
			if op.Kind == backend.OpGet {
				require.NoError(t, res[i].Err, name)
				require.True(t, res[i].Found, name)
				continue
			}
			require.ErrorAs(t, res[i].Err, &re, "%s: op %d", name, i)
			require.Equal(t, 0, re.Acked)
		}
		// reads alone need no WAIT
		before = waits(t, admin)
		res = make([]backend.Result, 1)
		s.Run(ctx, []backend.Op{{Kind: backend.OpGet, NS: "b" + name, Key: []byte("k0")}}, res, backend.Pipelined)
		require.NoError(t, res[0].Err)
		_, sync := s.Wire().AppendSync(nil, []backend.Op{{Kind: backend.OpGet}})
		require.False(t, sync)
		require.Equal(t, before, waits(t, admin))
	}
}

// TestWaitReplica: with a replica that keeps up, wait=1 answers writes as
// usual, after one WAIT per batch.
func TestWaitReplica(t *testing.T) {
	t.Parallel()
	master := startRedis(t)
	replica := startRedis(t, "--replicaof", "127.0.0.1", fmt.Sprint(master.port))
	require.Eventually(t, func() bool {
		info, err := replica.client(t).Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	}, 10*time.Second, 20*time.Millisecond)
	admin := master.client(t)
	s := openStore(t, fmt.Sprintf("redis://%s?wait=1", master.addr()), Config{Timeout: 2 * time.Second})
	ctx := context.Background()
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("single"), []byte("v"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)

	for name, batch := range map[string]func(ops []backend.Op) []backend.Result{
		"rueidis": func(ops []backend.Op) []backend.Result {
			res := make([]backend.Result, len(ops))
			s.Run(ctx, ops, res, backend.Pipelined)
			return res
		},
		"wire": func(ops []backend.Op) []backend.Result { return wireBatch(t, s.Wire(), ops) },
	} {
		before := waits(t, admin)
		ops := waitOps("b"+name, 10)
		res := batch(ops)
		require.Equal(t, before+1, waits(t, admin), "%s: one WAIT per batch", name)
		for i, r := range res {
			require.NoError(t, r.Err, "%s: op %d", name, i)
			if ops[i].Kind == backend.OpGet {
				require.True(t, r.Found)
			} else {
				require.True(t, r.OK, "%s: op %d", name, i)
			}
		}
		// and the replica has them
		n, err := replica.client(t).Exists(ctx, s.keys.recordKey("b"+name, []byte("k9"))).Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	}
}

// TestWaitLostConnection: a connection that goes after the writes' replies
// but before WAIT's fails them (FailSync): no replica is known to have them.
func TestWaitLostConnection(t *testing.T) {
	s, err := Open(context.Background(), "redis://127.0.0.1:1?wait=1", Config{})
	require.NoError(t, err)
	defer s.Close()
	ops := waitOps("ns", 2)
	res := make([]backend.Result, len(ops))
	for i := range res {
		res[i].OK = true
	}
	s.Wire().FailSync(ops, res, net.ErrClosed)
	for i, op := range ops {
		if op.Kind == backend.OpGet {
			require.NoError(t, res[i].Err)
			continue
		}
		var re *ReplicationError
		require.ErrorAs(t, res[i].Err, &re)
		require.True(t, errors.Is(res[i].Err, net.ErrClosed))
		require.Contains(t, res[i].Err.Error(), "replication: WAIT 1 failed: connection to 127.0.0.1:1 lost")
	}
}
