package redis

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestUpgradeFromHashRecords: records written by the former layout (a hash
// {v, t} with the key's expiry at t + retention) keep working after an
// upgrade: they are read and scanned, a live one holds its key
// (PK.PREPARE answers 0 and leaves it as it was), and every write replaces
// the hash with the string layout: a REPREPARE KEEPTTL keeping the hash's
// expiry, a ROLLBACK deleting it, a PREPARE over an expired one, and a
// key change from one. PK.SCAN skips a list under the prefix. On miniredis
// and on a real redis-server.
func TestUpgradeFromHashRecords(t *testing.T) {
	f := startFake(t)
	own := startRedis(t)
	for _, tg := range []struct{ name, url string }{{"miniredis", f.url()}, {"redis-server", "redis://" + own.addr()}} {
		t.Run(tg.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, tg.url, Config{KeyPrefix: "up:", Options: backend.Options{Retention: time.Hour}})
			opt, err := goredis.ParseURL(tg.url)
			require.NoError(t, err)
			rc := goredis.NewClient(opt)
			t.Cleanup(func() { _ = rc.Close() })
			tm, err := rc.Time(ctx).Result()
			require.NoError(t, err)
			now := tm.UnixMilli()
			const hour = int64(time.Hour / time.Millisecond)
			// What the former block.lua wrote: HSET v t, PEXPIREAT t + retention.
			legacy := func(key, v string, ttlAt int64) string {
				rkey := "up:{ns:" + key + "}"
				require.NoError(t, rc.HSet(ctx, rkey, "v", v, "t", itoa(ttlAt)).Err())
				if ttlAt != 0 {
					require.NoError(t, rc.PExpireAt(ctx, rkey, time.UnixMilli(ttlAt+hour)).Err())
				}
				return rkey
			}
			expires := func(rkey string) int64 {
				exp, err := rc.Do(ctx, "PEXPIRETIME", rkey).Int64()
				require.NoError(t, err)
				return exp
			}
			ra := legacy("a", "old-a", now+60_000) // live
			rb := legacy("b", "old-b", 0)          // forever
			rc_ := legacy("c", "old-c", now-1000)  // expired, retained
			rd := legacy("d", "old-d", now+60_000) // the old key of a key change
			b := func(s string) []byte { return []byte(s) }

			rec, found, err := s.Get(ctx, "ns", b("a"))
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, backend.Record{Value: b("old-a"), TTLAt: now + 60_000, Live: true}, rec)
			rec, found, err = s.Get(ctx, "ns", b("c"))
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, backend.Record{Value: b("old-c"), TTLAt: now - 1000}, rec)

			// PK.SCAN reads the hashes too, and skips what is no record: a
			// string not of the form, a key of another type.
			require.NoError(t, rc.Set(ctx, "up:{ns:junk}", "junk", 0).Err())
			require.NoError(t, rc.RPush(ctx, "up:{ns:list}", "x").Err())
			page, err := s.Scan(ctx, "ns", nil, 1000)
			require.NoError(t, err)
			seen := map[string]string{}
			for _, r := range page.Records {
				seen[string(r.Key)] = string(r.Record.Value)
			}
			for !page.Done {
				page, err = s.Scan(ctx, "ns", page.Next, 1000)
				require.NoError(t, err)
				for _, r := range page.Records {
					seen[string(r.Key)] = string(r.Record.Value)
				}
			}
			require.Equal(t, map[string]string{"a": "old-a", "b": "old-b", "c": "old-c", "d": "old-d"}, seen)

			// Held while live: nothing changes.
			for _, k := range []string{"a", "b"} {
				ok, err := s.Prepare(ctx, "ns", b(k), b("new"), backend.Expiry{})
				require.NoError(t, err)
				require.False(t, ok, k)
			}
			requireKey(t, rc, ra, hash{"v": "old-a", "t": itoa(now + 60_000)})
			requireKey(t, rc, rb, hash{"v": "old-b", "t": "0"})
			require.Equal(t, now+60_000+hour, expires(ra))

			// REPREPARE KEEPTTL: the string, with the hash's ttlAt and expiry.
			ok, err := s.Reprepare(ctx, "ns", b("a"), b("v2"), backend.IfEq(b("old-a")), backend.Expiry{Kind: backend.KeepTTL})
			require.NoError(t, err)
			require.True(t, ok)
			requireKey(t, rc, ra, str(itoa(now+60_000)+":v2"))
			require.Equal(t, now+60_000+hour, expires(ra))

			// ROLLBACK releases a forever hash; the key is then free.
			ok, err = s.Rollback(ctx, "ns", b("b"), backend.IfEq(b("old-b")))
			require.NoError(t, err)
			require.True(t, ok)
			requireKey(t, rc, rb, nil)
			ok, err = s.Prepare(ctx, "ns", b("b"), b("new-b"), backend.Expiry{})
			require.NoError(t, err)
			require.True(t, ok)
			requireKey(t, rc, rb, str("0:new-b"))
			require.Equal(t, int64(-1), expires(rb))

			// PREPARE over an expired hash: the string, with its own expiry.
			ok, err = s.Prepare(ctx, "ns", b("c"), b("new-c"), backend.Expiry{Kind: backend.ExpireAt, Millis: now + 5000})
			require.NoError(t, err)
			require.True(t, ok)
			requireKey(t, rc, rc_, str(itoa(now+5000)+":new-c"))
			if tg.name == "miniredis" { // a real server's clock moved on since now
				require.Equal(t, now+5000+hour, expires(rc_))
			} else {
				require.InDelta(t, now+5000+hour, expires(rc_), 2000)
			}

			// A key change from a hash.
			mv, err := s.Move(ctx, "ns", b("e"), b("new-e"), b("d"), b("old-d"), backend.Expiry{})
			require.NoError(t, err)
			require.Equal(t, backend.Moved, mv)
			requireKey(t, rc, rd, nil)
			requireKey(t, rc, "up:{ns:e}", str("0:new-e"))
		})
	}
}
