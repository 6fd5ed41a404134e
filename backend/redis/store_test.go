package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestLayout checks what a record looks like in Redis: the documented key,
// a string "ttlAt:value", and the key's own expiry at ttlAt + retention
// (none for a forever record), as every command leaves it.
func TestLayout(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{KeyPrefix: "app1:", Options: backend.Options{Retention: time.Hour}})
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	ctx := context.Background()
	now := f.clock().UnixMilli()
	const rkey = "app1:{user:al%7Dce%25}"
	after10s := backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000}
	at := backend.Expiry{Kind: backend.ExpireAt, Millis: now + 60_000}

	steps := []struct {
		name    string
		do      func() (bool, error)
		record  str
		expires int64 // PEXPIRETIME: -1 none
	}{
		{"prepare EX", func() (bool, error) {
			return (backend.Calls{Runner: s}).Prepare(ctx, "user", []byte("al}ce%"), []byte("v1"), after10s)
		}, str(itoa(now+10_000) + ":v1"), now + 10_000 + 3_600_000},
		{"reprepare KEEPTTL", func() (bool, error) {
			return (backend.Calls{Runner: s}).Reprepare(ctx, "user", []byte("al}ce%"), []byte("v2"), backend.Cond{}, backend.Expiry{Kind: backend.KeepTTL})
		}, str(itoa(now+10_000) + ":v2"), now + 10_000 + 3_600_000},
		{"reprepare forever", func() (bool, error) {
			return (backend.Calls{Runner: s}).Reprepare(ctx, "user", []byte("al}ce%"), []byte("v3"), backend.Cond{}, backend.Expiry{})
		}, "0:v3", -1},
		{"reprepare EXAT", func() (bool, error) {
			return (backend.Calls{Runner: s}).Reprepare(ctx, "user", []byte("al}ce%"), []byte("v4"), backend.IfEq([]byte("v3")), at)
		}, str(itoa(now+60_000) + ":v4"), now + 60_000 + 3_600_000},
	}
	for _, st := range steps {
		ok, err := st.do()
		require.NoError(t, err, st.name)
		require.True(t, ok, st.name)
		keys, err := rc.Keys(ctx, "*").Result()
		require.NoError(t, err)
		require.Equal(t, []string{rkey}, keys, st.name)
		requireKey(t, rc, rkey, st.record, st.name)
		exp, err := rc.Do(ctx, "PEXPIRETIME", rkey).Int64()
		require.NoError(t, err)
		require.Equal(t, st.expires, exp, st.name)
	}

	// Redis deletes the record by itself once its retention has run out.
	f.advance(60*time.Second + time.Hour - time.Millisecond)
	rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "user", []byte("al}ce%"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, backend.Record{Value: []byte("v4"), TTLAt: now + 60_000}, rec)
	f.advance(time.Millisecond)
	n, err := rc.Exists(ctx, rkey).Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestMoveLayout checks that the atomic key change leaves the documented
// layout, under the default prefix: the old key deleted, the new one with
// its expiry.
func TestMoveLayout(t *testing.T) {
	f := startFake(t)
	s, err := Open(context.Background(), f.url(), Config{Options: backend.Options{Retention: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	ctx := context.Background()
	now := f.clock().UnixMilli()

	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "u", []byte("old"), []byte("ov"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 5000})
	require.NoError(t, err)
	require.True(t, ok)
	res, err := (backend.Calls{Runner: s}).Move(ctx, "u", []byte("new"), []byte("nv"), []byte("old"), []byte("ov"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 7000})
	require.NoError(t, err)
	require.Equal(t, backend.Moved, res)
	keys, err := rc.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Equal(t, []string{"pk:{u:new}"}, keys)
	exp, err := rc.Do(ctx, "PEXPIRETIME", "pk:{u:new}").Int64()
	require.NoError(t, err)
	require.Equal(t, now+7000+60_000, exp)
}

// TestServerClock checks that expiry follows the Redis server's TIME, not
// the sidecar's clock nor Options.Now.
func TestServerClock(t *testing.T) {
	f := startFake(t)
	server := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	f.setClock(server)
	s := openStore(t, f.url(), Config{Options: backend.Options{
		Retention: time.Minute,
		Now:       func() time.Time { return time.Unix(42, 0) },
	}})
	ctx := context.Background()

	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "u", []byte("k"), []byte("v"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 10_000})
	require.NoError(t, err)
	require.True(t, ok)
	rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "u", []byte("k"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, backend.Record{Value: []byte("v"), TTLAt: server.UnixMilli() + 10_000, Live: true}, rec)

	f.advance(10 * time.Second)
	rec, found, err = (backend.Calls{Runner: s}).Get(ctx, "u", []byte("k"))
	require.NoError(t, err)
	require.True(t, found)
	require.False(t, rec.Live)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestLayoutForeverOverExpired: a forever record written over an expired
// one keeps no Redis expiry (SET without PX drops the key's expiry).
func TestLayoutForeverOverExpired(t *testing.T) {
	f := startFake(t)
	s := openStore(t, f.url(), Config{KeyPrefix: "pk:", Options: backend.Options{Retention: time.Hour}})
	rc := goredis.NewClient(&goredis.Options{Addr: f.Addr()})
	t.Cleanup(func() { _ = rc.Close() })
	ctx := context.Background()
	expires := func(rkey string) int64 {
		exp, err := rc.Do(ctx, "PEXPIRETIME", rkey).Int64()
		require.NoError(t, err)
		return exp
	}
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("fresh"), []byte("v"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(-1), expires("pk:{ns:fresh}"))

	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v1"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
	require.NoError(t, err)
	require.True(t, ok)
	require.Positive(t, expires("pk:{ns:k}"))
	f.advance(2 * time.Second)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("k"), []byte("v2"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok, "the record had expired")
	require.Equal(t, int64(-1), expires("pk:{ns:k}"))
	requireKey(t, rc, "pk:{ns:k}", str("0:v2"))
}
