package e2e

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestLinearizableWow checks a mixed history for linearizability: sidecar
// clients (through the binary, --backend …?layout=wow) and Wow service
// clients (wowRedisService's scripts, EVAL on the same Redis) race over a few
// keys of one namespace, each on a connection of its own, and porcupine
// decides whether one order of atomic commands explains every reply, with
// the model of lin_model_test.go.
//
// Wow's operations map onto the model's commands because every record in
// the history is forever (so "live" is "present"): prepare(now, forever,
// v) is PK.PREPARE; rollback(value) is PK.ROLLBACK IFEQ; rollback(now)
// is PK.ROLLBACK; reprepare(forever, v, old) is PK.REPREPARE IFEQ (Wow's
// needs no live record, but only a present one holds a value); getValue
// (HGETALL) is PK.GETVALUE. Wow's reprepare without oldValue also creates
// a missing record, which no PK command does: it is left out.
func TestLinearizableWow(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	for _, top := range wowTopologies(t) {
		if top.name == "sentinel" {
			continue // one master, as standalone: the scripts are the same
		}
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			seed := linSeed(t)
			s := start(t, "--backend", top.url)
			for round := range linRounds(2, 10) {
				h := &wowLin{
					t: t, ns: fmt.Sprintf("linwow%d", time.Now().UnixNano()),
					keys: []string{"k0", "k1", "k2"},
				}
				h.run(s, top.client, seed+uint64(round), 4, 4, linRounds(80, 300))
				h.check()
			}
		})
	}
}

// wowLin records one mixed history.
type wowLin struct {
	t    *testing.T
	ns   string
	keys []string
	t0   time.Time

	mu  sync.Mutex
	ops []porcupine.Operation
}

func (h *wowLin) since() int64 { return time.Since(h.t0).Nanoseconds() }

func (h *wowLin) record(client int, in linIn, call int64, out linOut) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: h.since()})
}

// run races sidecars sidecar clients and wows Wow clients, ops commands
// each.
func (h *wowLin) run(s *sidecar, wowClient func(testing.TB) redis.UniversalClient, seed uint64, sidecars, wows, ops int) {
	h.t0 = time.Now()
	var wg sync.WaitGroup
	for c := range sidecars + wows {
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		if c < sidecars {
			cl := s.client(h.t, 2, func(o *redis.Options) { o.PoolSize = 1 })
			wg.Go(func() { h.sidecarClient(c, cl, rng, ops) })
		} else {
			cl := wowClient(h.t)
			wg.Go(func() { h.wowClient(c, cl, rng, ops) })
		}
	}
	wg.Wait()
}

// value is a value no other command writes; cond an IFEQ value, often one
// a command of this client wrote.
func value(c, i int) string { return fmt.Sprintf(`"c%d-%d"`, c, i) }

func (h *wowLin) cond(rng *rand.Rand, c, i int) string {
	return value(rng.IntN(8), max(0, i-1-rng.IntN(4)))
}

func (h *wowLin) sidecarClient(c int, cl *redis.Client, rng *rand.Rand, ops int) {
	for i := range ops {
		k := rng.IntN(len(h.keys))
		in := linIn{Key: k}
		args := []any{}
		switch n := rng.IntN(10); {
		case n < 3:
			in.Kind, in.Value = linPrepare, value(c, i)
			args = []any{"PK.PREPARE", h.ns, h.keys[k], in.Value}
		case n < 5:
			in.Kind = linGetValue
			args = []any{"PK.GETVALUE", h.ns, h.keys[k]}
		case n < 6:
			in.Kind = linGet
			args = []any{"PK.GET", h.ns, h.keys[k]}
		case n < 8:
			in.Kind, in.Cond, in.Cond2 = linRollback, h.cond(rng, c, i), rng.IntN(3) > 0
			args = []any{"PK.ROLLBACK", h.ns, h.keys[k]}
			if in.Cond2 {
				args = append(args, "IFEQ", in.Cond)
			}
		default:
			in.Kind, in.Value, in.Cond, in.Cond2 = linReprepare, value(c, i), h.cond(rng, c, i), rng.IntN(2) > 0
			args = []any{"PK.REPREPARE", h.ns, h.keys[k], in.Value}
			if in.Cond2 {
				args = append(args, "IFEQ", in.Cond)
			}
			if rng.IntN(2) == 0 {
				in.TTL = linKeepTTL
				args = append(args, "KEEPTTL")
			}
		}
		call := h.since()
		v, err := cl.Do(ctx(), args...).Result()
		h.record(c, in, call, sidecarOut(in, v, err))
	}
}

// sidecarOut is the model's reply of a sidecar reply.
func sidecarOut(in linIn, v any, err error) linOut {
	switch {
	case errors.Is(err, redis.Nil):
		return linOut{Nil: true}
	case err != nil:
		return linOut{Unknown: true}
	}
	switch in.Kind {
	case linGet:
		return linOut{Value: v.(string)}
	case linGetValue:
		arr := v.([]any)
		return linOut{Value: arr[0].(string), TTL: arr[1].(int64)}
	}
	return linOut{Int: v.(int64)}
}

func (h *wowLin) wowClient(c int, cl redis.UniversalClient, rng *rand.Rand, ops int) {
	for i := range ops {
		k := rng.IntN(len(h.keys))
		rk := wowKey(h.ns, h.keys[k])
		in := linIn{Key: k}
		var run func() (any, error)
		switch n := rng.IntN(10); {
		case n < 3:
			in.Kind, in.Value = linPrepare, value(c, i)
			run = func() (any, error) {
				return wowPrepareLua.Run(ctx(), cl, []string{rk}, wowNow(), wowForeverMs, in.Value).Result()
			}
		case n < 5:
			in.Kind = linGetValue
			run = func() (any, error) { return cl.HGetAll(ctx(), rk).Result() }
		case n < 7:
			in.Kind, in.Cond, in.Cond2 = linRollback, h.cond(rng, c, i), true
			run = func() (any, error) { return wowRollbackValueLua.Run(ctx(), cl, []string{rk}, in.Cond).Result() }
		case n < 8:
			in.Kind = linRollback
			run = func() (any, error) { return wowRollbackNowLua.Run(ctx(), cl, []string{rk}, wowNow()).Result() }
		default:
			in.Kind, in.Value, in.Cond, in.Cond2 = linReprepare, value(c, i), h.cond(rng, c, i), true
			run = func() (any, error) {
				return wowReprepareIfLua.Run(ctx(), cl, []string{rk}, wowForeverMs, in.Value, in.Cond).Result()
			}
		}
		call := h.since()
		v, err := run()
		h.record(c, in, call, wowOut(in, v, err))
	}
}

// wowOut is the model's reply of a Wow script's answer (1 or nil) or of
// HGETALL.
func wowOut(in linIn, v any, err error) linOut {
	if in.Kind == linGetValue {
		if err != nil {
			return linOut{Unknown: true}
		}
		m := v.(map[string]string)
		if len(m) == 0 {
			return linOut{Nil: true}
		}
		ttl := int64(-1)
		if m["ttlAt"] != fmt.Sprint(wowForeverMs) {
			ttl = -2 // never forever: the model then finds no match
		}
		return linOut{Value: m["value"], TTL: ttl}
	}
	switch {
	case errors.Is(err, redis.Nil):
		return linOut{Int: 0}
	case err != nil:
		return linOut{Unknown: true}
	}
	return linOut{Int: v.(int64)}
}

// check runs porcupine over the history: an unknown outcome may take
// effect up to the end of the history, or never; an unknown read says
// nothing.
func (h *wowLin) check() {
	t := h.t
	end := h.since() + 1
	history := make([]porcupine.Operation, 0, len(h.ops))
	unknown := 0
	for _, op := range h.ops {
		if op.Output.(linOut).Unknown {
			unknown++
			if !op.Input.(linIn).writes() {
				continue
			}
			op.Return = end
		}
		history = append(history, op)
	}
	res, info := porcupine.CheckOperationsVerbose(linModel(h.keys, true), history, time.Minute)
	t.Logf("%d commands (%d with unknown outcome) over %d keys: %s", len(h.ops), unknown, len(h.keys), res)
	if res != porcupine.Ok {
		out := t.TempDir() + "/wow-lin.html"
		if porcupine.VisualizePath(linModel(h.keys, true), info, out) == nil {
			t.Logf("visualization: %s", out)
		}
	}
	require.Equal(t, porcupine.Ok, res, "the mixed history is not linearizable")
	wins := 0
	for _, op := range history {
		if in, out := op.Input.(linIn), op.Output.(linOut); in.Kind == linPrepare && out.Int == 1 {
			wins++
		}
	}
	require.Positive(t, wins, "a history without one reservation checks nothing")
}
