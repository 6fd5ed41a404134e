package redis

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// BenchmarkPrepare measures the hop to Redis: Prepare through the Store
// against EVALSHA of the same script sent directly, by rueidis (the
// Store's client) and by go-redis, from 50 goroutines as from 50
// connections. Keys are fresh and expire after 10 s, so Redis stays small.
//
// Besides ns/op it reports the CPU time per operation of this process
// (client-cpu-ns/cmd) and of redis-server (redis-cpu-ns/cmd): on a machine
// where the sidecar, Redis and the load share the cores, CPU per request
// decides throughput.
//
//	eval "$(scripts/redis-servers.sh up /tmp/rs)"
//	go test ./backend/redis -run '^$' -bench Prepare -benchtime 100000x
func BenchmarkPrepare(b *testing.B) {
	url := serverURL(b, envStandalone)
	tg, err := parseURL(url)
	require.NoError(b, err)
	const parallelism = 25 // × GOMAXPROCS goroutines
	args := func(i int64) (string, []string) {
		return "pkbench:{b:" + strconv.FormatInt(i, 10) + "}", []string{"0", "p", "v", "a", "10000"}
	}

	b.Run("store", func(b *testing.B) {
		s := openStore(b, url, Config{KeyPrefix: fmt.Sprintf("pkbench%d:", time.Now().UnixNano())})
		require.NoError(b, s.Ping(context.Background()))
		exp := backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000}
		var seq atomic.Int64
		measure(b, tg, parallelism, func() error {
			ok, err := (backend.Calls{Runner: s}).Prepare(context.Background(), "b", strconv.AppendInt(nil, seq.Add(1), 10), []byte("v"), exp)
			if err == nil && !ok {
				err = fmt.Errorf("fresh key taken")
			}
			return err
		})
	})

	b.Run("rueidis-evalsha", func(b *testing.B) {
		c, err := rueidis.NewClient(clientOption(tg, time.Second))
		require.NoError(b, err)
		b.Cleanup(c.Close)
		sha1 := loadPrepare(b, c)
		var seq atomic.Int64
		measure(b, tg, parallelism, func() error {
			key, argv := args(seq.Add(1))
			return c.Do(context.Background(), c.B().Evalsha().Sha1(sha1).Numkeys(1).Key(key).Arg(argv...).Build()).Error()
		})
	})

	b.Run("goredis-evalsha", func(b *testing.B) {
		opt, err := goredis.ParseURL(url)
		require.NoError(b, err)
		opt.PoolSize = parallelism * 2 * 2
		c := goredis.NewClient(opt)
		b.Cleanup(func() { _ = c.Close() })
		sha1, err := c.ScriptLoad(context.Background(), blockLua).Result()
		require.NoError(b, err)
		var seq atomic.Int64
		measure(b, tg, parallelism, func() error {
			key, argv := args(seq.Add(1))
			return c.EvalSha(context.Background(), sha1, []string{key}, argv).Err()
		})
	})
}

// BenchmarkPrepare16 is BenchmarkPrepare with pipelines of 16 commands,
// as a client pipelining 16 deep sends them: one by one through the Store,
// as one Batch, and as one pipeline of EVALSHA sent directly.
func BenchmarkPrepare16(b *testing.B) {
	url := serverURL(b, envStandalone)
	tg, err := parseURL(url)
	require.NoError(b, err)
	const parallelism, depth = 25, 16
	exp := backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000}

	b.Run("store-one-by-one", func(b *testing.B) {
		s := openStore(b, url, Config{KeyPrefix: fmt.Sprintf("pkbench%d:", time.Now().UnixNano())})
		require.NoError(b, s.Ping(context.Background()))
		var seq atomic.Int64
		measureN(b, tg, parallelism, depth, func() error {
			for range depth {
				ok, err := (backend.Calls{Runner: s}).Prepare(context.Background(), "b", strconv.AppendInt(nil, seq.Add(1), 10), []byte("v"), exp)
				if err == nil && !ok {
					err = fmt.Errorf("fresh key taken")
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	})

	b.Run("store-batch", func(b *testing.B) {
		s := openStore(b, url, Config{KeyPrefix: fmt.Sprintf("pkbench%d:", time.Now().UnixNano())})
		require.NoError(b, s.Ping(context.Background()))
		var seq atomic.Int64
		measureN(b, tg, parallelism, depth, func() error {
			ops, res := make([]Op, depth), make([]Result, depth)
			for i := range ops {
				ops[i] = Op{Kind: OpPrepare, NS: "b", Key: strconv.AppendInt(nil, seq.Add(1), 10), Value: []byte("v"), Exp: exp}
			}
			s.Run(context.Background(), ops, res, backend.Pipelined)
			for _, r := range res {
				if r.Err != nil {
					return r.Err
				}
				if !r.OK {
					return fmt.Errorf("fresh key taken")
				}
			}
			return nil
		})
	})

	b.Run("rueidis-evalsha", func(b *testing.B) {
		c, err := rueidis.NewClient(clientOption(tg, time.Second))
		require.NoError(b, err)
		b.Cleanup(c.Close)
		sha1 := loadPrepare(b, c)
		var seq atomic.Int64
		measureN(b, tg, parallelism, depth, func() error {
			cmds := make(rueidis.Commands, depth)
			for i := range cmds {
				key := "pkbench:{b:" + strconv.FormatInt(seq.Add(1), 10) + "}"
				cmds[i] = c.B().Evalsha().Sha1(sha1).Numkeys(1).Key(key).Arg("0", "p", "v", "a", "10000").Build()
			}
			for _, r := range c.DoMulti(context.Background(), cmds...) {
				if err := r.Error(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func loadPrepare(b *testing.B, c rueidis.Client) string {
	sha1, err := c.Do(context.Background(), c.B().ScriptLoad().Script(blockLua).Build()).ToString()
	require.NoError(b, err)
	return sha1
}

// measure runs op in parallel and reports the CPU per op of this process
// and of the redis-server.
func measure(b *testing.B, tg target, parallelism int, op func() error) {
	measureN(b, tg, parallelism, 1, op)
}

// measureN is measure for ops of n commands each; metrics are per command.
func measureN(b *testing.B, tg target, parallelism, n int, op func() error) {
	admin := goredis.NewClient(&goredis.Options{Addr: tg.addrs[0], Username: tg.username, Password: tg.password})
	defer admin.Close()
	redisCPU := func() time.Duration {
		info, err := admin.Info(context.Background(), "cpu").Result()
		require.NoError(b, err)
		var total float64
		for _, line := range strings.Split(info, "\r\n") {
			name, v, _ := strings.Cut(line, ":")
			if name == "used_cpu_sys" || name == "used_cpu_user" {
				f, err := strconv.ParseFloat(v, 64)
				require.NoError(b, err)
				total += f
			}
		}
		return time.Duration(total * float64(time.Second))
	}
	var failed atomic.Int64
	b.SetParallelism(parallelism)
	r0, c0 := redisCPU(), selfCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(); err != nil {
				failed.Add(1)
			}
		}
	})
	b.StopTimer()
	r1, c1 := redisCPU(), selfCPU(b)
	require.Zero(b, failed.Load(), "failed operations")
	cmds := float64(b.N * n)
	b.ReportMetric(float64(c1-c0)/cmds, "client-cpu-ns/cmd")
	b.ReportMetric(float64(r1-r0)/cmds, "redis-cpu-ns/cmd")
	b.ReportMetric(cmds/b.Elapsed().Seconds(), "cmds/s")
}

// selfCPU is the CPU time this process used so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSignUp compares a block of two reservations (a username and an
// email) run as a transaction (Exec: one block.lua script) with the same
// two commands as a pipeline (Batch: two scripts, each atomic alone), from
// 50 goroutines; metrics are per command.
//
//	go test ./backend/redis -run '^$' -bench SignUp/exec -benchtime 50000x
//	go test ./backend/redis -run '^$' -bench SignUp/batch -benchtime 50000x
func BenchmarkSignUp(b *testing.B) {
	url := serverURL(b, envStandalone)
	tg, err := parseURL(url)
	require.NoError(b, err)
	s := openStore(b, url, Config{KeyPrefix: fmt.Sprintf("pkbench%d:", time.Now().UnixNano())})
	require.NoError(b, s.Ping(context.Background()))
	exp := backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000}
	var seq atomic.Int64
	ops := func() []backend.Op {
		k := strconv.AppendInt(nil, seq.Add(1), 10)
		return []backend.Op{
			{Kind: backend.OpPrepare, NS: "username", Key: k, Value: []byte("v"), Exp: exp},
			{Kind: backend.OpPrepare, NS: "email", Key: k, Value: []byte("v"), Exp: exp},
		}
	}
	b.Run("exec", func(b *testing.B) {
		measureN(b, tg, 25, 2, func() error {
			res := make([]backend.Result, 2)
			if err := s.Run(context.Background(), ops(), res, backend.Isolated); err != nil {
				return err
			}
			if !res[0].OK || !res[1].OK {
				return fmt.Errorf("fresh key taken")
			}
			return nil
		})
	})
	b.Run("batch", func(b *testing.B) {
		measureN(b, tg, 25, 2, func() error {
			res := make([]backend.Result, 2)
			s.Run(context.Background(), ops(), res, backend.Pipelined)
			if err := cmp.Or(res[0].Err, res[1].Err); err != nil {
				return err
			}
			if !res[0].OK || !res[1].OK {
				return fmt.Errorf("fresh key taken")
			}
			return nil
		})
	})
}
