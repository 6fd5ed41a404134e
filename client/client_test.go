package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/client"
)

// replyMsg returns err's sidecar reply (a *ReplyError's Msg), failing the
// test when err is not a reply error.
func replyMsg(t *testing.T, err error) string {
	t.Helper()
	var re *client.ReplyError
	require.ErrorAs(t, err, &re)
	return re.Msg
}

// requireRecord checks key's record exactly: its value and its expiry
// (forever when at is zero).
func requireRecord(t *testing.T, pk *client.Client, ns, key, value string, at time.Time) {
	t.Helper()
	rec, ok, err := pk.GetValue(testContext(t), ns, key)
	require.NoError(t, err)
	require.True(t, ok, "no record for %q", key)
	require.Equal(t, value, string(rec.Value))
	if at.IsZero() {
		require.True(t, rec.Forever, "record %q expires at %v, want forever", key, rec.ExpiresAt)
		require.True(t, rec.ExpiresAt.IsZero())
		return
	}
	require.False(t, rec.Forever)
	require.True(t, rec.ExpiresAt.Equal(at), "record %q expires at %v, want %v", key, rec.ExpiresAt, at)
}

// requireNoRecord checks that key has no record at all.
func requireNoRecord(t *testing.T, pk *client.Client, ns, key string) {
	t.Helper()
	rec, ok, err := pk.GetValue(testContext(t), ns, key)
	require.NoError(t, err)
	require.False(t, ok, "record %q: %+v", key, rec)
}

// pxat returns a whole-millisecond time d from now, as PXAT carries it.
func pxat(d time.Duration) time.Time { return time.UnixMilli(time.Now().Add(d).UnixMilli()) }

func TestPrepareGetRollback(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)
		binary := "\x00k\xff\r\n"
		value := []byte("{\"userId\":\"42\"}\x00\xff")

		ok, err := pk.Prepare(ctx, ns, binary, value)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = pk.Prepare(ctx, ns, binary, []byte("other"))
		require.NoError(t, err)
		require.False(t, ok, "a live record holds the key")
		got, found, err := pk.Get(ctx, ns, binary)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, value, got)
		requireRecord(t, pk, ns, binary, string(value), time.Time{})
		require.Equal(t, [][]string{
			{"PK.PREPARE", ns, binary, string(value)},
			{"PK.PREPARE", ns, binary, "other"},
			{"PK.GET", ns, binary},
			{"PK.GETVALUE", ns, binary},
		}, tg.rec.take())

		// The empty value is a value, nil is sent as it.
		ok, err = pk.Prepare(ctx, ns, "empty", nil)
		require.NoError(t, err)
		require.True(t, ok)
		got, found, err = pk.Get(ctx, ns, "empty")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, []byte{}, got)

		// Absent keys.
		got, found, err = pk.Get(ctx, ns, "nobody")
		require.NoError(t, err)
		require.False(t, found)
		require.Nil(t, got)
		requireNoRecord(t, pk, ns, "nobody")

		// RollbackIfEq releases only its own value; Rollback any.
		ok, err = pk.RollbackIfEq(ctx, ns, binary, []byte("other"))
		require.NoError(t, err)
		require.False(t, ok)
		requireRecord(t, pk, ns, binary, string(value), time.Time{})
		ok, err = pk.RollbackIfEq(ctx, ns, binary, value)
		require.NoError(t, err)
		require.True(t, ok)
		requireNoRecord(t, pk, ns, binary)
		ok, err = pk.RollbackIfEq(ctx, ns, binary, value)
		require.NoError(t, err)
		require.False(t, ok, "no record")
		ok, err = pk.Rollback(ctx, ns, "empty")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = pk.Rollback(ctx, ns, "empty")
		require.NoError(t, err)
		require.False(t, ok)
		tg.rec.take()
		ok, err = pk.RollbackIfEq(ctx, ns, "k", []byte("v"))
		require.NoError(t, err)
		require.False(t, ok)
		require.Equal(t, [][]string{{"PK.ROLLBACK", ns, "k", "IFEQ", "v"}}, tg.rec.take())
	})
}

func TestExpiries(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)

		at := pxat(time.Hour)
		ok, err := pk.Prepare(ctx, ns, "at", []byte("v"), client.ExpireAt(at))
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "at", "v", at)
		require.Equal(t, []string{"PK.PREPARE", ns, "at", "v", "PXAT", fmt.Sprint(at.UnixMilli())}, tg.rec.take()[0])

		// TTL counts from the backend's clock, here this machine's.
		before := time.Now()
		ok, err = pk.Prepare(ctx, ns, "ttl", []byte("v"), client.TTL(90*time.Second+1500*time.Microsecond))
		require.NoError(t, err)
		require.True(t, ok)
		after := time.Now()
		require.Equal(t, []string{"PK.PREPARE", ns, "ttl", "v", "PX", "90001"}, tg.rec.take()[0])
		rec, found, err := pk.GetValue(ctx, ns, "ttl")
		require.NoError(t, err)
		require.True(t, found)
		require.False(t, rec.Forever)
		require.False(t, rec.ExpiresAt.Before(before.Add(90001*time.Millisecond).Truncate(time.Millisecond)), rec.ExpiresAt)
		require.False(t, rec.ExpiresAt.After(after.Add(90001*time.Millisecond)), rec.ExpiresAt)
		require.True(t, rec.Live(time.Now()))
		require.False(t, rec.Live(rec.ExpiresAt))

		// Every TTL goes as PX in milliseconds: a sub-second one keeps its
		// precision, a whole-second one is not sent as EX.
		tg.rec.take()
		for d, px := range map[time.Duration]string{250 * time.Millisecond: "250", 5 * time.Second: "5000"} {
			key := "px" + px
			_, err = pk.Prepare(ctx, ns, key, []byte("v"), client.TTL(d))
			require.NoError(t, err)
			require.Equal(t, []string{"PK.PREPARE", ns, key, "v", "PX", px}, tg.rec.take()[0])
		}

		// A time already past is the sidecar's to refuse.
		_, err = pk.Prepare(ctx, ns, "past", []byte("v"), client.ExpireAt(time.Now().Add(-time.Minute)))
		require.Equal(t, "ERR invalid expire time in 'pk.prepare' command", replyMsg(t, err))
		require.NotErrorIs(t, err, client.ErrInvalidArgument)
		require.NotErrorIs(t, err, client.ErrUnavailable)
		var redisErr redis.Error
		require.ErrorAs(t, err, &redisErr, "the go-redis error is underneath")
		requireNoRecord(t, pk, ns, "past")

		// An expired record: Get has none, GetValue shows it while retained,
		// and Prepare replaces it.
		ok, err = pk.Prepare(ctx, ns, "short", []byte("v"), client.TTL(time.Millisecond))
		require.NoError(t, err)
		require.True(t, ok)
		waitExpired(t, pk, ns, "short")
		rec, found, err = pk.GetValue(ctx, ns, "short")
		require.NoError(t, err)
		require.True(t, found, "retained after expiry")
		require.Equal(t, "v", string(rec.Value))
		require.False(t, rec.Live(time.Now()))
		ok, err = pk.Prepare(ctx, ns, "short", []byte("w"))
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "short", "w", time.Time{})
	})
}

// waitExpired waits until key's record has expired: Get no longer finds it.
// Polled: expiry is the backend's clock, not an event the test can wait on.
func waitExpired(t *testing.T, pk *client.Client, ns, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, found, err := pk.Get(testContext(t), ns, key)
		require.NoError(t, err)
		return !found
	}, 10*time.Second, time.Millisecond)
}

func TestReprepare(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)

		ok, err := pk.Reprepare(ctx, ns, "k", []byte("v"))
		require.NoError(t, err)
		require.False(t, ok, "no live record")
		requireNoRecord(t, pk, ns, "k")

		at := pxat(time.Hour)
		_, err = pk.Prepare(ctx, ns, "k", []byte("v1"), client.ExpireAt(at))
		require.NoError(t, err)
		ok, err = pk.Reprepare(ctx, ns, "k", []byte("v2"), client.IfEq([]byte("nope")), client.KeepTTL())
		require.NoError(t, err)
		require.False(t, ok, "IfEq differs")
		requireRecord(t, pk, ns, "k", "v1", at)

		ok, err = pk.Reprepare(ctx, ns, "k", []byte("v2"), client.IfEq([]byte("v1")), client.KeepTTL())
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "k", "v2", at)

		at2 := pxat(2 * time.Hour)
		ok, err = pk.Reprepare(ctx, ns, "k", []byte("v3"), client.ExpireAt(at2))
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "k", "v3", at2)

		ok, err = pk.Reprepare(ctx, ns, "k", []byte("v4"))
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "k", "v4", time.Time{})

		// An empty IfEq is a value too.
		_, err = pk.Prepare(ctx, ns, "e", nil)
		require.NoError(t, err)
		ok, err = pk.Reprepare(ctx, ns, "e", []byte("x"), client.IfEq(nil), client.TTL(time.Hour))
		require.NoError(t, err)
		require.True(t, ok)

		tg.rec.take()
		_, err = pk.Reprepare(ctx, ns, "k", []byte("v5"), client.IfEq([]byte("v4")), client.TTL(2*time.Second))
		require.NoError(t, err)
		require.Equal(t, [][]string{{"PK.REPREPARE", ns, "k", "v5", "IFEQ", "v4", "PX", "2000"}}, tg.rec.take())
	})
}

func TestChangeKey(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)
		_, err := pk.Prepare(ctx, ns, "alice", []byte("42"))
		require.NoError(t, err)
		_, err = pk.Prepare(ctx, ns, "bob", []byte("43"))
		require.NoError(t, err)

		// Moved.
		at := pxat(time.Hour)
		ok, err := pk.ChangeKey(ctx, ns, "alice", []byte("42"), "alice2", []byte("42b"), client.ExpireAt(at))
		require.NoError(t, err)
		require.True(t, ok)
		requireNoRecord(t, pk, ns, "alice")
		requireRecord(t, pk, ns, "alice2", "42b", at)

		// The new key is taken: false, nothing changed.
		ok, err = pk.ChangeKey(ctx, ns, "alice2", []byte("42b"), "bob", []byte("42"))
		require.NoError(t, err)
		require.False(t, ok)
		requireRecord(t, pk, ns, "alice2", "42b", at)
		requireRecord(t, pk, ns, "bob", "43", time.Time{})

		// The old key holds another value: ErrMismatch, nothing changed.
		ok, err = pk.ChangeKey(ctx, ns, "alice2", []byte("wrong"), "carol", []byte("42"))
		require.False(t, ok)
		require.ErrorIs(t, err, client.ErrMismatch)
		require.NotErrorIs(t, err, client.ErrUnavailable)
		require.Equal(t, "MISMATCH old key has no record with that value", replyMsg(t, err))
		require.Equal(t, "prepkey: PK.REPREPARE: MISMATCH old key has no record with that value", err.Error())
		requireNoRecord(t, pk, ns, "carol")
		requireRecord(t, pk, ns, "alice2", "42b", at)

		// ... or no record at all.
		_, err = pk.ChangeKey(ctx, ns, "zed", []byte("1"), "carol", []byte("1"))
		require.ErrorIs(t, err, client.ErrMismatch)
		requireNoRecord(t, pk, ns, "carol")

		tg.rec.take()
		_, err = pk.ChangeKey(ctx, ns, "alice2", []byte("42b"), "alice3", []byte("v"), client.TTL(time.Minute))
		require.NoError(t, err)
		require.Equal(t, [][]string{{"PK.REPREPARE", ns, "alice3", "v", "FROM", "alice2", "IFEQ", "42b", "PX", "60000"}}, tg.rec.take())
	})
}

func TestMPrepare(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)
		emails := ns + "-email"
		at := pxat(time.Hour)
		ok, err := pk.MPrepare(ctx, []client.Entry{
			{Name: ns, Key: "alice", Value: []byte("42")},
			{Name: emails, Key: "alice@example.com", Value: []byte("42")},
		}, client.ExpireAt(at))
		require.NoError(t, err)
		require.True(t, ok)
		requireRecord(t, pk, ns, "alice", "42", at)
		requireRecord(t, pk, emails, "alice@example.com", "42", at)

		// One key taken: none reserved.
		ok, err = pk.MPrepare(ctx, []client.Entry{
			{Name: ns, Key: "bob", Value: []byte("43")},
			{Name: emails, Key: "alice@example.com", Value: []byte("43")},
			{Name: ns, Key: "bob2", Value: []byte("43")},
		})
		require.NoError(t, err)
		require.False(t, ok)
		requireNoRecord(t, pk, ns, "bob")
		requireNoRecord(t, pk, ns, "bob2")
		requireRecord(t, pk, emails, "alice@example.com", "42", at)

		// A TTL resolves once: every key the same expiry.
		ok, err = pk.MPrepare(ctx, []client.Entry{
			{Name: ns, Key: "c1", Value: []byte("1")},
			{Name: ns, Key: "c2", Value: nil},
		}, client.TTL(time.Hour))
		require.NoError(t, err)
		require.True(t, ok)
		r1, _, err := pk.GetValue(ctx, ns, "c1")
		require.NoError(t, err)
		requireRecord(t, pk, ns, "c2", "", r1.ExpiresAt)
		require.False(t, r1.Forever)

		tg.rec.take()
		_, err = pk.MPrepare(ctx, []client.Entry{{Name: ns, Key: "d", Value: []byte("v")}})
		require.NoError(t, err)
		require.Equal(t, [][]string{{"PK.MPREPARE", "1", ns, "d", "v"}}, tg.rec.take())
	})
}

func TestScan(t *testing.T) {
	eachTarget(t, func(t *testing.T, tg target) {
		pk, ctx, ns := client.New(tg.rdb), testContext(t), uniqueNS(t)
		at := pxat(time.Hour)
		want := map[string]client.Record{}
		for i := range 25 {
			key, value := fmt.Sprintf("key%02d", i), []byte(fmt.Sprintf("value\x00%d", i))
			exp := client.Expiry{}
			rec := client.Record{Value: value, Forever: true}
			if i%2 == 1 {
				exp, rec = client.ExpireAt(at), client.Record{Value: value, ExpiresAt: at}
			}
			ok, err := pk.Prepare(ctx, ns, key, value, exp)
			require.NoError(t, err)
			require.True(t, ok)
			want[key] = rec
		}
		_, err := pk.Prepare(ctx, ns+"-other", "elsewhere", []byte("v"))
		require.NoError(t, err)

		tg.rec.take()
		got := collect(t, pk.Scan(ctx, ns, client.ScanCount(3)))
		require.Equal(t, len(want), len(got))
		for key, rec := range want {
			require.Equal(t, string(rec.Value), string(got[key].Value), key)
			require.Equal(t, rec.Forever, got[key].Forever, key)
			require.True(t, rec.ExpiresAt.Equal(got[key].ExpiresAt), key)
		}
		sent := tg.rec.take()
		require.Greater(t, len(sent), 1, "more than one page")
		require.Equal(t, []string{"PK.SCAN", ns, "0", "COUNT", "3"}, sent[0])
		for i, words := range sent[1:] {
			require.NotEqual(t, "0", words[2], "page %d's cursor", i+1)
		}

		// MATCH.
		got = collect(t, pk.Scan(ctx, ns, client.ScanMatch("key1?"), client.ScanCount(1000)))
		require.Equal(t, []string{"key10", "key11", "key12", "key13", "key14", "key15", "key16", "key17", "key18", "key19"}, sortedKeys(got))
		require.Equal(t, []string{"PK.SCAN", ns, "0", "MATCH", "key1?", "COUNT", "1000"}, tg.rec.take()[0])

		// LIVE and EXPIRED, with one expired record.
		_, err = pk.Prepare(ctx, ns, "gone", []byte("v"), client.TTL(time.Millisecond))
		require.NoError(t, err)
		waitExpired(t, pk, ns, "gone")
		got = collect(t, pk.Scan(ctx, ns, client.ScanExpired()))
		require.Equal(t, []string{"gone"}, sortedKeys(got))
		require.False(t, got["gone"].Live(time.Now()))
		got = collect(t, pk.Scan(ctx, ns, client.ScanLive(), client.ScanCount(7)))
		require.Len(t, got, 25)
		require.NotContains(t, got, "gone")

		// Breaking out sends nothing more (on Redis pages of COUNT 1 may
		// come back empty before the first record).
		tg.rec.take()
		n, pages := 0, 0
		for _, err := range pk.Scan(ctx, ns, client.ScanCount(1)) {
			require.NoError(t, err)
			n++
			pages = len(tg.rec.take())
			break
		}
		require.Equal(t, 1, n)
		require.GreaterOrEqual(t, pages, 1)
		require.Empty(t, tg.rec.take(), "sent after the break")

		// An empty namespace: one call, nothing yielded.
		require.Empty(t, collect(t, pk.Scan(ctx, ns+"-empty")))
	})
}

// collect runs a scan to its end, failing on an error; keys seen twice keep
// one record (a scan may return a record twice) that must be the same.
func collect(t *testing.T, seq func(func(client.ScanRecord, error) bool)) map[string]client.Record {
	t.Helper()
	out := map[string]client.Record{}
	for rec, err := range seq {
		require.NoError(t, err)
		if prev, seen := out[rec.Key]; seen {
			require.Equal(t, prev, rec.Record, "record %q returned twice, differently", rec.Key)
		}
		out[rec.Key] = rec.Record
	}
	return out
}

func sortedKeys(m map[string]client.Record) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestArgumentErrors: what every sidecar refuses is refused before anything
// is sent, with ErrInvalidArgument.
func TestArgumentErrors(t *testing.T) {
	s := start(t, "--backend", "memory:")
	rec := &recorder{}
	pk, ctx := client.New(s.client(t, 3, rec)), testContext(t)
	ok64 := []byte("v")
	tooMany := make([]client.Entry, 65)
	for i := range tooMany {
		tooMany[i] = client.Entry{Name: "n", Key: fmt.Sprint(i)}
	}
	cases := map[string]func() error{
		"empty namespace":    func() error { _, err := pk.Prepare(ctx, "", "k", ok64); return err },
		"namespace charset":  func() error { _, _, err := pk.Get(ctx, "user name", "k"); return err },
		"namespace too long": func() error { _, _, err := pk.GetValue(ctx, strings.Repeat("n", 65), "k"); return err },
		"empty key":          func() error { _, err := pk.Rollback(ctx, "n", ""); return err },
		"empty key, IFEQ":    func() error { _, err := pk.RollbackIfEq(ctx, "n", "", ok64); return err },
		"TTL zero":           func() error { _, err := pk.Prepare(ctx, "n", "k", ok64, client.TTL(0)); return err },
		"TTL below 1ms":      func() error { _, err := pk.Prepare(ctx, "n", "k", ok64, client.TTL(999*time.Microsecond)); return err },
		"TTL negative":       func() error { _, err := pk.Prepare(ctx, "n", "k", ok64, client.TTL(-time.Second)); return err },
		"ExpireAt 1970": func() error {
			_, err := pk.Prepare(ctx, "n", "k", ok64, client.ExpireAt(time.UnixMilli(0)))
			return err
		},
		"two expiries": func() error {
			_, err := pk.Prepare(ctx, "n", "k", ok64, client.TTL(time.Second), client.TTL(time.Second))
			return err
		},
		"KeepTTL with TTL": func() error {
			_, err := pk.Reprepare(ctx, "n", "k", ok64, client.KeepTTL(), client.TTL(time.Second))
			return err
		},
		"IfEq twice": func() error {
			_, err := pk.Reprepare(ctx, "n", "k", ok64, client.IfEq(nil), client.IfEq(nil))
			return err
		},
		"KeepTTL twice": func() error {
			_, err := pk.Reprepare(ctx, "n", "k", ok64, client.KeepTTL(), client.KeepTTL())
			return err
		},
		"reprepare empty key": func() error { _, err := pk.Reprepare(ctx, "n", "", ok64); return err },
		"change: old = new":   func() error { _, err := pk.ChangeKey(ctx, "n", "a", ok64, "a", ok64); return err },
		"change: empty old":   func() error { _, err := pk.ChangeKey(ctx, "n", "", ok64, "a", ok64); return err },
		"change: empty new":   func() error { _, err := pk.ChangeKey(ctx, "n", "a", ok64, "", ok64); return err },
		"change: bad ns":      func() error { _, err := pk.ChangeKey(ctx, "n/", "a", ok64, "b", ok64); return err },
		"mprepare: none":      func() error { _, err := pk.MPrepare(ctx, nil); return err },
		"mprepare: 65":        func() error { _, err := pk.MPrepare(ctx, tooMany); return err },
		"mprepare: duplicate": func() error {
			_, err := pk.MPrepare(ctx, []client.Entry{{Name: "n", Key: "a"}, {Name: "m", Key: "a"}, {Name: "n", Key: "a"}})
			return err
		},
		"mprepare: empty key": func() error {
			_, err := pk.MPrepare(ctx, []client.Entry{{Name: "n", Key: "a"}, {Name: "n"}})
			return err
		},
		"using: empty key": func() error {
			return pk.UsingPrepare(ctx, "n", "", ok64, func(context.Context, bool) error { panic("the body ran") })
		},
		"scan: count 0":        func() error { return scanErr(pk.Scan(ctx, "n", client.ScanCount(0))) },
		"scan: count 1001":     func() error { return scanErr(pk.Scan(ctx, "n", client.ScanCount(1001))) },
		"scan: live + expired": func() error { return scanErr(pk.Scan(ctx, "n", client.ScanLive(), client.ScanExpired())) },
		"scan: match twice":    func() error { return scanErr(pk.Scan(ctx, "n", client.ScanMatch("a"), client.ScanMatch("b"))) },
		"scan: bad namespace":  func() error { return scanErr(pk.Scan(ctx, "", client.ScanLive())) },
	}
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, client.ErrInvalidArgument)
			var re *client.ReplyError
			require.False(t, errors.As(err, &re), "not a reply: %v", err)
			require.Empty(t, rec.take(), "nothing sent")
		})
	}
	_, err := pk.Prepare(ctx, "n", "", nil)
	require.EqualError(t, err, "prepkey: invalid argument: PK.PREPARE: the key is empty")

	// The limits: what is allowed goes through.
	at64 := make([]client.Entry, 64)
	for i := range at64 {
		at64[i] = client.Entry{Name: "n-._AZaz09", Key: fmt.Sprint(i)}
	}
	ok, err := pk.MPrepare(ctx, at64, client.TTL(time.Millisecond))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"PK.MPREPARE"}, rec.names())
	ok, err = pk.Prepare(ctx, strings.Repeat("n", 64), "k", nil)
	require.NoError(t, err)
	require.True(t, ok)
}

// scanErr returns the first error a scan yields.
func scanErr(seq func(func(client.ScanRecord, error) bool)) error {
	for _, err := range seq {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestUnavailable: a sidecar whose backend is down answers -UNAVAILABLE to
// every PK command; each method returns ErrUnavailable, never false.
func TestUnavailable(t *testing.T) {
	s := start(t, "--backend", "redis://"+closedPort(t))
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) {
			rec := &recorder{}
			rdb := s.client(t, proto, rec)
			require.NoError(t, rdb.Ping(testContext(t)).Err(), "the sidecar itself answers")
			pk, ctx := client.New(rdb), testContext(t)
			v := []byte("v")
			calls := map[string]func() (bool, error){
				"Prepare":      func() (bool, error) { return pk.Prepare(ctx, "n", "k", v) },
				"Get":          func() (bool, error) { _, ok, err := pk.Get(ctx, "n", "k"); return ok, err },
				"GetValue":     func() (bool, error) { _, ok, err := pk.GetValue(ctx, "n", "k"); return ok, err },
				"Rollback":     func() (bool, error) { return pk.Rollback(ctx, "n", "k") },
				"RollbackIfEq": func() (bool, error) { return pk.RollbackIfEq(ctx, "n", "k", v) },
				"Reprepare":    func() (bool, error) { return pk.Reprepare(ctx, "n", "k", v, client.KeepTTL()) },
				"ChangeKey":    func() (bool, error) { return pk.ChangeKey(ctx, "n", "a", v, "b", v) },
				"MPrepare": func() (bool, error) {
					return pk.MPrepare(ctx, []client.Entry{{Name: "n", Key: "a"}, {Name: "m", Key: "b"}})
				},
				"Scan": func() (bool, error) { return false, scanErr(pk.Scan(ctx, "n")) },
			}
			for name, call := range calls {
				ok, err := call()
				require.False(t, ok, name)
				require.ErrorIs(t, err, client.ErrUnavailable, name)
				require.NotErrorIs(t, err, client.ErrMismatch, name)
				require.Regexp(t, `^UNAVAILABLE `, replyMsg(t, err), name)
				require.Len(t, rec.take(), 1, "%s: sent once", name)
			}

			// usingPrepare case 5: the body is not run; the read that would
			// resolve the outcome fails too, so it stays unknown.
			ran := false
			err := pk.UsingPrepare(ctx, "n", "k", v, func(context.Context, bool) error { ran = true; return nil })
			require.ErrorIs(t, err, client.ErrUnavailable)
			require.True(t, client.OutcomeUnknown(err))
			require.False(t, ran, "the body ran")
			require.Equal(t, []string{"PK.PREPARE", "PK.GETVALUE"}, rec.names())
		})
	}
}

// TestCancelledContext: a done context sends nothing.
func TestCancelledContext(t *testing.T) {
	s := start(t, "--backend", "memory:")
	rec := &recorder{}
	pk := client.New(s.client(t, 3, rec))
	ctx, cancel := context.WithCancel(testContext(t))
	cancel()
	_, err := pk.Prepare(ctx, "n", "k", nil)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, client.ErrUnavailable)
	require.ErrorIs(t, scanErr(pk.Scan(ctx, "n")), context.Canceled)
	ran := false
	err = pk.UsingPrepare(ctx, "n", "k", nil, func(context.Context, bool) error { ran = true; return nil })
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ran)
	require.Empty(t, rec.take())
}
