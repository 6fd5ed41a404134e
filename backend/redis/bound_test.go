package redis

import (
	"context"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// boundLimit is the stores' MaxValueBytes in TestRecordTooLarge: small,
// so that the records at and past it are quick to plant.
const boundLimit = 100

// TestRecordTooLarge: a record whose value is longer than the store's read
// bound (--max-value-bytes), planted by another writer, is refused by the
// script with the refusal that names it, in every layout and record form,
// on every path a get takes (alone, in a batch, in a transaction, over the
// Wire), left out of a scan, and never sent; a value of exactly the bound
// is served; a rollback still deletes it; one past its retention is no
// record; a composed reserve over an expired one refuses with nothing
// written.
func TestRecordTooLarge(t *testing.T) {
	ctx := context.Background()
	const ns = "user"
	fits := strings.Repeat("f", boundLimit)
	big := strings.Repeat("b", boundLimit+1)
	type target struct {
		name string
		url  func(t *testing.T) (string, *goredis.Client)
	}
	targets := []target{
		{"miniredis", func(t *testing.T) (string, *goredis.Client) {
			f := startFake(t)
			rc := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
			t.Cleanup(func() { _ = rc.Close() })
			return f.url(), rc
		}},
		{"redis-server", func(t *testing.T) (string, *goredis.Client) {
			p := startRedis(t)
			return "redis://" + p.addr(), p.client(t)
		}},
	}
	// The forms a record takes: the layout, and how to plant a value with
	// a ttlAt (its text) at a key.
	type form struct {
		name    string
		wow     bool
		plant   func(rc *goredis.Client, rk, ttlAt, value string)
		forever string // the stored ttlAt of a forever record
	}
	forms := []form{
		{"string", false, func(rc *goredis.Client, rk, ttlAt, value string) {
			require.NoError(t, rc.Set(ctx, rk, ttlAt+":"+value, 0).Err())
		}, "0"},
		{"hash of before", false, func(rc *goredis.Client, rk, ttlAt, value string) {
			require.NoError(t, rc.HSet(ctx, rk, "v", value, "t", ttlAt).Err())
		}, "0"},
		{"wow", true, func(rc *goredis.Client, rk, ttlAt, value string) {
			require.NoError(t, rc.HSet(ctx, rk, "ttlAt", ttlAt, "value", value).Err())
		}, wowForever},
	}
	for _, tg := range targets {
		for _, fm := range forms {
			t.Run(tg.name+"/"+fm.name, func(t *testing.T) {
				url, rc := tg.url(t)
				cfg := Config{Options: backend.Options{Retention: time.Hour, MaxValueBytes: boundLimit}}
				if fm.wow {
					url, cfg.KeyPrefix = wowURL(url), DefaultKeyPrefix
				}
				s := openStore(t, url, cfg)
				plant := func(key, ttlAt, value string) {
					fm.plant(rc, s.keys.recordKey(ns, []byte(key)), ttlAt, value)
				}
				plant("fits", fm.forever, fits)
				plant("big", fm.forever, big)
				refusal := backend.RecordTooLarge(ns, []byte("big"), int64(len(big)+len(fm.forever)), boundLimit)
				require.Equal(t, `ERR record of key "big" in namespace user is `+itoa(int64(len(big)+len(fm.forever)))+
					` bytes, its value larger than max-value-bytes (100): another writer stored it; PK.ROLLBACK deletes it`, refusal.Text)
				fitsRec := backend.Record{Value: []byte(fits), TTLAt: backend.Forever, Live: true}

				get := func(key string) Op { return Op{Kind: OpGet, NS: ns, Key: []byte(key)} }
				// Alone, and in a batch with other ops, which are answered.
				require.Equal(t, Result{Record: fitsRec, Found: true}, s.RunOne(ctx, get("fits")))
				require.Equal(t, Result{Err: refusal}, s.RunOne(ctx, get("big")))
				ops := []Op{get("big"), {Kind: OpPrepare, NS: ns, Key: []byte("new"), Value: []byte("1")}, get("fits")}
				want := []Result{{Err: refusal}, {OK: true}, {Record: fitsRec, Found: true}}
				res := make([]Result, len(ops))
				require.NoError(t, s.Run(ctx, ops, res, backend.Pipelined))
				require.Equal(t, want, res)
				// In a transaction: that get's refusal, the block runs.
				ops[1].Key = []byte("new2")
				require.NoError(t, s.Run(ctx, ops, res, backend.Isolated))
				require.Equal(t, want, res)
				listed := []string{"fits", "new", "new2"}
				if w := s.Wire(); w != nil && tg.name == "redis-server" {
					ops[1].Key = []byte("new3")
					require.Equal(t, want, wireRun(t, w, ops))
					listed = append(listed, "new3")
				}

				// A scan lists the record that fits, not the other.
				page, err := s.Scan(ctx, ns, nil, 100)
				require.NoError(t, err)
				var keys []string
				for _, r := range page.Records {
					keys = append(keys, string(r.Key))
				}
				require.True(t, page.Done)
				require.ElementsMatch(t, listed, keys)

				// Past its retention, it is no record: nil, not a refusal.
				plant("gone", "1", big)
				require.Equal(t, Result{}, s.RunOne(ctx, get("gone")))

				// A composed reserve (a key change across Cluster slots)
				// over an expired, retained one cannot hand it back for
				// the undo: refused, nothing written.
				expired := itoa(time.Now().UnixMilli() - 1000)
				if tg.name == "miniredis" {
					expired = "1750000000000" // the fake's clock is 1,750,000,000,123 ms
				}
				plant("expired", expired, big)
				_, ok, err := steps{s}.Reserve(ctx, ns, []byte("expired"), []byte("v"), backend.Expiry{})
				require.False(t, ok)
				require.Equal(t, backend.RecordTooLarge(ns, []byte("expired"), int64(len(big)+len(expired)), boundLimit), err)
				require.IsType(t, &backend.Refusal{}, s.RunOne(ctx, get("expired")).Err, "still there, and still refused")

				// One far past the bound is never read whole by the scripts
				// (GETRANGE, HSTRLEN): refused with its size all the same,
				// it holds its key, and no IFEQ matches it.
				huge := strings.Repeat("h", 10*boundLimit)
				plant("huge", fm.forever, huge)
				require.Equal(t, Result{Err: backend.RecordTooLarge(ns, []byte("huge"), int64(len(huge)+len(fm.forever)), boundLimit)},
					s.RunOne(ctx, get("huge")))
				require.Equal(t, Result{}, s.RunOne(ctx, Op{Kind: OpPrepare, NS: ns, Key: []byte("huge"), Value: []byte("x")}))
				require.Equal(t, Result{}, s.RunOne(ctx, Op{Kind: OpRollback, NS: ns, Key: []byte("huge"), Cond: backend.IfEq([]byte(huge[:boundLimit]))}))
				require.Equal(t, Result{}, s.RunOne(ctx, Op{Kind: OpReprepare, NS: ns, Key: []byte("huge"), Value: []byte("x"), Cond: backend.IfEq([]byte(huge[:boundLimit]))}))
				require.Equal(t, Result{Move: backend.OldKeyMismatch}, s.RunOne(ctx, Op{Kind: OpMove, NS: ns, Key: []byte("to"), Value: []byte("x"), OldKey: []byte("huge"), OldValue: []byte(huge[:boundLimit])}))
				require.Equal(t, Result{OK: true}, s.RunOne(ctx, Op{Kind: OpReprepare, NS: ns, Key: []byte("huge"), Value: []byte("x"), Cond: backend.Cond{}}))
				require.Equal(t, Result{Record: backend.Record{Value: []byte("x"), TTLAt: backend.Forever, Live: true}, Found: true}, s.RunOne(ctx, get("huge")))
				plant("expired-huge", expired, huge)
				_, ok, err = steps{s}.Reserve(ctx, ns, []byte("expired-huge"), []byte("v"), backend.Expiry{})
				require.False(t, ok)
				require.Equal(t, backend.RecordTooLarge(ns, []byte("expired-huge"), int64(len(huge)+len(expired)), boundLimit), err)
				require.NoError(t, steps{s}.Unreserve(ctx, ns, []byte("expired-huge"), []byte("v"), nil, false), "left alone: it is not v")
				require.IsType(t, &backend.Refusal{}, s.RunOne(ctx, get("expired-huge")).Err)

				// A rollback deletes it (no value is returned).
				require.Equal(t, Result{OK: true}, s.RunOne(ctx, Op{Kind: OpRollback, NS: ns, Key: []byte("big")}))
				require.Equal(t, Result{}, s.RunOne(ctx, get("big")))
			})
		}
	}
}

// TestScriptsMaxValue: the scripts hold --max-value-bytes' default in the
// embedded files, and the store writes its own bound in their source.
func TestScriptsMaxValue(t *testing.T) {
	for _, l := range []Layout{LayoutPrepkey, LayoutWow} {
		def := loadScripts(l, backend.DefaultMaxValueBytes)
		other := loadScripts(l, 7)
		for i, sc := range def.all() {
			require.Contains(t, sc.src, "\nlocal maxValue = 65536\n")
			require.Equal(t, strings.Replace(sc.src, "\nlocal maxValue = 65536\n", "\nlocal maxValue = 7\n", 1), other.all()[i].src)
			require.NotEqual(t, sc.sha, other.all()[i].sha)
		}
	}
	require.Equal(t, blockLua, loadScripts(LayoutPrepkey, backend.DefaultMaxValueBytes).block.src)
	require.Equal(t, wowBlockLua, loadScripts(LayoutWow, backend.DefaultMaxValueBytes).block.src)
}
