package redis

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestBlockScriptMalformed: block.lua checks its list whole before it runs
// anything, so a malformed list changes nothing.
func TestBlockScriptMalformed(t *testing.T) {
	f := startFake(t)
	c := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
	t.Cleanup(func() { c.Close() })
	for name, tc := range map[string]struct {
		keys []string
		args []any
		want string
	}{
		"unknown operation":   {[]string{"k1", "k2"}, []any{"0", "p", "x", "n", "0", "z"}, "ERR prepkey block: unknown operation z"},
		"too few keys":        {[]string{"k1"}, []any{"0", "p", "x", "n", "0", "p", "y", "n", "0"}, "ERR prepkey block: arguments do not match the operations"},
		"arguments cut short": {[]string{"k1", "k2"}, []any{"0", "p", "x", "n", "0", "p", "y"}, "ERR prepkey block: arguments do not match the operations"},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.Eval(context.Background(), blockLua, tc.keys, tc.args...).Err()
			require.EqualError(t, err, tc.want)
			n, err := c.Exists(context.Background(), "k1", "k2").Result()
			require.NoError(t, err)
			require.Zero(t, n, "nothing written")
		})
	}
}

// TestExecCluster: on a Cluster a block runs as one script when its keys
// are in one slot, and is refused, before anything is sent, otherwise.
func TestExecCluster(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{KeyPrefix: "pk:"})
	s.composed = true
	ctx := context.Background()

	apart := keysWithSlots(s.keys, "ns", 2, false)
	ops := []backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: apart[0], Value: []byte("v")},
		{Kind: backend.OpPrepare, NS: "ns", Key: apart[1], Value: []byte("v")},
	}
	err := s.Run(ctx, ops, make([]backend.Result, 2), backend.Isolated)
	ni, ok := errors.AsType[*backend.NotIsolated](err)
	require.True(t, ok, "got %v", err)
	require.Contains(t, ni.Reason, "CROSSSLOT Keys in request don't hash to the same slot")
	require.Empty(t, f.Keys(), "nothing written")

	together := keysWithSlots(s.keys, "ns", 2, true)
	ops = []backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: together[0], Value: []byte("v")},
		{Kind: backend.OpMove, NS: "ns", Key: together[1], Value: []byte("w"), OldKey: together[0], OldValue: []byte("v")},
		{Kind: backend.OpGet, NS: "ns", Key: together[0]},
	}
	res := make([]backend.Result, 3)
	require.NoError(t, s.Run(ctx, ops, res, backend.Isolated))
	require.Equal(t, []backend.Result{{OK: true}, {Move: backend.Moved}, {}}, res)
}

// TestExecUnavailable: a Redis that does not answer fails the whole block
// with the store's error, never a NotIsolated.
func TestExecUnavailable(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{Timeout: 200 * time.Millisecond})
	ops := []backend.Op{{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k"), Value: []byte("v")}}
	require.NoError(t, s.Run(context.Background(), ops, make([]backend.Result, 1), backend.Isolated))
	f.Close()
	err := s.Run(context.Background(), ops, make([]backend.Result, 1), backend.Isolated)
	require.Error(t, err)
	_, isNI := errors.AsType[*backend.NotIsolated](err)
	require.False(t, isNI)
	var re *Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, "exec", re.Op)
}
