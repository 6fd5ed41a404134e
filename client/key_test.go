package client_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// signup is a value as a Wow command writes it: it names the writer (the
// command id), so that IFEQ and the resend rule tell our reservation from
// another's.
type signup struct {
	CommandID string  `json:"commandId"`
	UserID    string  `json:"userId"`
	Score     float64 `json:"score"`
}

// TestKey: a Key's methods against the sidecar, the records holding the
// codec's bytes (Jackson's), and IFEQ matching a record written as raw bytes
// (as Wow writes it on a shared Redis).
func TestKey(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ns, ctx := client.New(tg.rdb), uniqueNS(t), testContext(t)
		users := client.NewKey[signup](pk, ns, nil)
		require.Equal(t, ns, users.Name())
		alice := signup{"c-1", "42", 1e7}
		const aliceJSON = `{"commandId":"c-1","userId":"42","score":1.0E7}`

		ok, err := users.Prepare(ctx, "alice", alice, client.TTL(time.Hour))
		require.NoError(t, err)
		require.True(t, ok)
		got, ok, err := pk.Get(ctx, ns, "alice")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, aliceJSON, string(got), "the record holds Jackson's bytes")
		v, ok, err := users.Get(ctx, "alice")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, alice, v)
		rec, ok, err := users.GetValue(ctx, "alice")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, alice, rec.Value)
		require.False(t, rec.Forever)
		require.True(t, rec.Live(time.Now()))
		_, ok, err = users.Get(ctx, "nobody")
		require.NoError(t, err)
		require.False(t, ok)

		ok, err = users.Prepare(ctx, "alice", signup{"c-2", "43", 0})
		require.NoError(t, err)
		require.False(t, ok, "held")

		// Reprepare with a typed IfEq: the current value's bytes compared.
		bob := signup{"c-3", "42", 2.5}
		ok, err = users.Reprepare(ctx, "alice", bob, users.IfEq(signup{"c-9", "42", 1e7}))
		require.NoError(t, err)
		require.False(t, ok, "IfEq another value")
		ok, err = users.Reprepare(ctx, "alice", bob, users.IfEq(alice), client.KeepTTL())
		require.NoError(t, err)
		require.True(t, ok)
		_, err = users.Reprepare(ctx, "alice", bob, users.IfEq(signup{Score: math.NaN()}))
		require.ErrorContains(t, err, "has no JSON form")

		// ChangeKey: old value compared by its bytes.
		ok, err = users.ChangeKey(ctx, "alice", bob, "alice2", bob)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = users.ChangeKey(ctx, "alice", bob, "alice3", bob)
		require.ErrorIs(t, err, client.ErrMismatch)

		// A record written as raw bytes by another client (Wow): the typed
		// RollbackIfEq matches it.
		wow := signup{"c-4", "44", 0.1}
		ok, err = pk.Prepare(ctx, ns, "carol", []byte(`{"commandId":"c-4","userId":"44","score":0.1}`))
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = users.RollbackIfEq(ctx, "carol", wow)
		require.NoError(t, err)
		require.True(t, ok, "IFEQ matched Wow's bytes")

		ok, err = users.Rollback(ctx, "alice2")
		require.NoError(t, err)
		require.True(t, ok)

		// UsingPrepare: rolled back by its bytes when the body fails.
		errBody := errors.New("the body failed")
		err = users.UsingPrepare(ctx, "dave", signup{"c-5", "45", 0}, func(ctx context.Context, prepared bool) error {
			require.True(t, prepared)
			requireRecord(t, pk, ns, "dave", `{"commandId":"c-5","userId":"45","score":0.0}`, time.Time{})
			return errBody
		})
		require.True(t, err == errBody, "got %v", err)
		requireNoRecord(t, pk, ns, "dave")

		// A value that is not the codec's: an error, not a zero value.
		_, err = pk.Prepare(ctx, ns, "eve", []byte("not json"))
		require.NoError(t, err)
		_, ok, err = users.Get(ctx, "eve")
		require.Error(t, err)
		require.False(t, ok)

		// An invalid namespace is refused as Client's methods refuse it.
		_, err = client.NewKey[signup](pk, "bad name", nil).Prepare(ctx, "k", alice)
		require.ErrorIs(t, err, client.ErrInvalidArgument)
	})
}
