package redis

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// keysWithSlots returns n keys of namespace ns whose Redis keys are all in
// distinct slots (same false) or all in one slot (same true).
func keysWithSlots(ks keyCodec, ns string, n int, same bool) [][]byte {
	var keys [][]byte
	slots := map[uint16]bool{}
	for i := 0; len(keys) < n; i++ {
		k := fmt.Appendf(nil, "key%d", i)
		sl := slot(ks.recordKey(ns, k))
		switch {
		case same && (len(keys) == 0 || slots[sl]), !same && !slots[sl]:
			keys = append(keys, k)
			slots[sl] = true
		}
	}
	return keys
}

// TestConformanceComposedMove runs the suite on miniredis with the store
// taking it for a Cluster, so that every key change whose keys fall in two
// slots takes the composed path with its compensation.
func TestConformanceComposedMove(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole suite again, on the composed key change (make test runs it)")
	}
	ks := keyspace{prefix: "pk:"}
	require.NotEqual(t, slot(ks.recordKey("ns", []byte("new"))), slot(ks.recordKey("ns", []byte("old"))),
		"the suite's keys must fall in two slots for this test to mean anything")
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openStore(t, f.url(), Config{Options: opts, KeyPrefix: "pk:"})
		s.composed = true
		return storetest.Harness{Store: s, Now: f.clock, Advance: f.advance, Isolates: oneSlot(s), BlockKeys: slotMates(s),
			Fault: func(fl backend.Fault) { s.fault = fl }}
	})
}

// TestComposedMoveFaults injects failures at each step of a key change
// across slots and checks the answer and what is left in Redis.
func TestComposedMoveFaults(t *testing.T) {
	errLost := errors.New("reply lost")
	type state struct{ newKey, oldKey string } // value held, "" for none
	tests := []struct {
		name     string
		fault    map[string]bool // steps that fail
		down     bool            // Redis fails from the failing step on
		want     backend.MoveResult
		wantErr  string
		after    state
		seedNewE bool // new key starts with an expired, retained record "stale"
	}{
		{name: "before reserve", fault: map[string]bool{"before reserve #0": true},
			wantErr: "reply lost", after: state{"", "ov"}},
		{name: "reserve reply lost", fault: map[string]bool{"lost reply of reserve #0": true},
			wantErr: "reply lost", after: state{"", "ov"}},
		{name: "before release", fault: map[string]bool{"before release #0": true},
			wantErr: "reply lost", after: state{"", "ov"}},
		{name: "before release restores the replaced record", fault: map[string]bool{"before release #0": true}, seedNewE: true,
			wantErr: "reply lost", after: state{"stale", "ov"}},
		{name: "release reply lost", fault: map[string]bool{"lost reply of release #0": true},
			want: backend.Moved, after: state{"nv", ""}},
		{name: "redis down before release", fault: map[string]bool{"before release #0": true}, down: true,
			wantErr: "redis: move: release old key: reply lost; reading it to learn whether it was released: redis: get: LOADING Redis is loading the dataset in memory (the new key stays reserved)",
			after:   state{"nv", "ov"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startFake(t)
			s := openStore(t, f.url(), Config{Options: backend.Options{Retention: time.Hour}})
			s.composed = true
			ctx := context.Background()
			keys := keysWithSlots(s.keys, "ns", 2, false)
			newKey, oldKey := keys[0], keys[1]
			if tt.seedNewE {
				ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", newKey, []byte("stale"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
				require.NoError(t, err)
				require.True(t, ok)
				f.advance(2 * time.Second)
			}
			ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", oldKey, []byte("ov"), backend.Expiry{})
			require.NoError(t, err)
			require.True(t, ok)
			s.fault = func(step backend.Step) error {
				if !tt.fault[step.String()] {
					return nil
				}
				if tt.down {
					f.SetError("LOADING Redis is loading the dataset in memory")
				}
				return errLost
			}

			res, err := (backend.Calls{Runner: s}).Move(ctx, "ns", newKey, []byte("nv"), oldKey, []byte("ov"), backend.Expiry{})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.True(t, errors.Is(err, errLost))
			} else {
				require.NoError(t, err)
				require.Equal(t, tt.want, res)
			}

			f.SetError("")
			s.fault = nil
			for key, want := range map[string]string{string(newKey): tt.after.newKey, string(oldKey): tt.after.oldKey} {
				rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte(key))
				require.NoError(t, err)
				require.Equal(t, want != "", found, key)
				require.Equal(t, want, string(rec.Value), key)
			}
		})
	}
}

// TestClusterSlots checks the store's slot function against the Cluster.
func TestClusterSlots(t *testing.T) {
	rc := clusterClient(t)
	ks := keyspace{prefix: "pk:"}
	for _, k := range []string{"alice", "bob", "a}b", "%", "\x00\xff", "{x}"} {
		rk := ks.recordKey("username", []byte(k))
		got, err := rc.ClusterKeySlot(context.Background(), rk).Result()
		require.NoError(t, err)
		require.Equal(t, int64(slot(rk)), got, rk)
	}
}

// TestClusterMove runs key changes on a real Cluster, across slots (the
// composed path) and within one slot (one script).
func TestClusterMove(t *testing.T) {
	url := serverURL(t, envCluster)
	t.Parallel()
	for _, same := range []bool{false, true} {
		t.Run(fmt.Sprintf("same slot %v", same), func(t *testing.T) {
			s := openStore(t, url, Config{})
			ctx := context.Background()
			keys := keysWithSlots(s.keys, "ns", 3, same)
			oldKey, newKey, takenKey := keys[0], keys[1], keys[2]
			for k, v := range map[string]string{string(oldKey): "ov", string(takenKey): "tv"} {
				ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte(k), []byte(v), backend.Expiry{})
				require.NoError(t, err)
				require.True(t, ok)
			}
			moves := []struct {
				newKey, oldKey []byte
				oldValue       string
				want           backend.MoveResult
			}{
				{takenKey, oldKey, "ov", backend.NewKeyTaken},
				{newKey, oldKey, "other", backend.OldKeyMismatch},
				{newKey, oldKey, "ov", backend.Moved},
			}
			for _, m := range moves {
				res, err := (backend.Calls{Runner: s}).Move(ctx, "ns", m.newKey, []byte("nv"), m.oldKey, []byte(m.oldValue), backend.Expiry{})
				require.NoError(t, err)
				require.Equal(t, m.want, res)
			}
			for k, want := range map[string]string{string(oldKey): "", string(newKey): "nv", string(takenKey): "tv"} {
				rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte(k))
				require.NoError(t, err)
				require.Equal(t, want != "", found, k)
				require.Equal(t, want, string(rec.Value), k)
			}
		})
	}
}

// TestClusterMoveRace has two clients move the same old key to two new
// keys, each in its own slot, at once: exactly one wins, and the loser
// leaves nothing behind.
func TestClusterMoveRace(t *testing.T) {
	url := serverURL(t, envCluster)
	t.Parallel()
	a := openStore(t, url, Config{})
	b := openStore(t, url, Config{KeyPrefix: a.keys.(keyspace).prefix})
	ctx := context.Background()
	for round := range 30 {
		keys := keysWithSlots(a.keys, fmt.Sprintf("r%d", round), 3, false)
		ns, oldKey := fmt.Sprintf("r%d", round), keys[0]
		ok, err := (backend.Calls{Runner: a}).Prepare(ctx, ns, oldKey, []byte("ov"), backend.Expiry{})
		require.NoError(t, err)
		require.True(t, ok)

		results := make([]backend.MoveResult, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range []*Store{a, b} {
			wg.Go(func() {
				<-start
				res, err := (backend.Calls{Runner: s}).Move(ctx, ns, keys[1+i], []byte("nv"), oldKey, []byte("ov"), backend.Expiry{})
				require.NoError(t, err)
				results[i] = res
			})
		}
		close(start)
		wg.Wait()
		require.ElementsMatch(t, []backend.MoveResult{backend.Moved, backend.OldKeyMismatch}, results, "round %d", round)
		winner := 0
		if results[1] == backend.Moved {
			winner = 1
		}
		for i, k := range [][]byte{oldKey, keys[1], keys[2]} {
			_, found, err := (backend.Calls{Runner: a}).Get(ctx, ns, k)
			require.NoError(t, err)
			require.Equal(t, i == 1+winner, found, "round %d key %s", round, k)
		}
	}
}

// clusterClient is a go-redis client on the test Cluster.
func clusterClient(t *testing.T) *goredis.ClusterClient {
	url := serverURL(t, envCluster)
	tg, err := parseURL(url)
	require.NoError(t, err)
	rc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: tg.addrs})
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}
