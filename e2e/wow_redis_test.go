package e2e

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The end-to-end tests of layout=wow on Redis: the sidecar (the binary,
// --backend …?layout=wow) and a "Wow service" share one Redis, on
// standalone, Sentinel and Cluster, and each side sees, refuses, releases,
// replaces and takes over the other's reservations.
//
// wowRedisService is that Wow service, written from the facts of Wow's layout
// (../shared/WOW-LAYOUT.md), not from Wow's source: its Redis operations as
// Lua scripts run with EVAL on the record's key, answering 1 for true and
// nil for false, its clock the test's (the JVM's), forever 148204944000000.

// Wow's scripts. KEYS[1] is the record's key.
var (
	// prepare(now, ttlAt, value): refuse while the stored ttlAt > now (no
	// ttlAt counts as 0), else HSET.
	wowPrepareLua = redis.NewScript(`
local t = tonumber(redis.call('HGET', KEYS[1], 'ttlAt') or '0')
if t > tonumber(ARGV[1]) then return nil end
redis.call('HSET', KEYS[1], 'ttlAt', ARGV[2], 'value', ARGV[3])
return 1`)
	// rollback(now): delete a live record only (stored ttlAt >= now).
	wowRollbackNowLua = redis.NewScript(`
local t = tonumber(redis.call('HGET', KEYS[1], 'ttlAt') or '0')
if t >= tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) return 1 end
return nil`)
	// rollback(value): delete if the value is the one given.
	wowRollbackValueLua = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'value') == ARGV[1] then redis.call('DEL', KEYS[1]) return 1 end
return nil`)
	// reprepare(ttlAt, value): replace (Wow's script also creates a
	// missing record).
	wowReprepareLua = redis.NewScript(`
redis.call('HSET', KEYS[1], 'ttlAt', ARGV[1], 'value', ARGV[2])
return 1`)
	// reprepare(ttlAt, value, oldValue): replace if the value is oldValue.
	wowReprepareIfLua = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'value') == ARGV[3] then
  redis.call('HSET', KEYS[1], 'ttlAt', ARGV[1], 'value', ARGV[2])
  return 1
end
return nil`)
)

// wowRedisService plays a Wow service on the sidecar's Redis.
type wowRedisService struct {
	t testing.TB
	c redis.UniversalClient
}

// wowKey is Wow's record key of (name, key): v2:prepare:{b64(name).b64(key)}.
func wowKey(name, key string) string {
	b := base64.RawURLEncoding
	return "v2:prepare:{" + b.EncodeToString([]byte(name)) + "." + b.EncodeToString([]byte(key)) + "}"
}

func wowNow() int64 { return time.Now().UnixMilli() }

// flag reads a Wow script's answer: 1 true, nil false.
func (w *wowRedisService) flag(r *redis.Cmd) bool {
	w.t.Helper()
	v, err := r.Result()
	if errors.Is(err, redis.Nil) {
		return false
	}
	require.NoError(w.t, err)
	require.Equal(w.t, int64(1), v)
	return true
}

func (w *wowRedisService) prepare(name, key, value string, ttlAt int64) bool {
	w.t.Helper()
	return w.flag(wowPrepareLua.Run(ctx(), w.c, []string{wowKey(name, key)}, wowNow(), ttlAt, value))
}

func (w *wowRedisService) rollback(name, key string) bool {
	w.t.Helper()
	return w.flag(wowRollbackNowLua.Run(ctx(), w.c, []string{wowKey(name, key)}, wowNow()))
}

func (w *wowRedisService) rollbackValue(name, key, value string) bool {
	w.t.Helper()
	return w.flag(wowRollbackValueLua.Run(ctx(), w.c, []string{wowKey(name, key)}, value))
}

func (w *wowRedisService) reprepare(name, key, value string, ttlAt int64) bool {
	w.t.Helper()
	return w.flag(wowReprepareLua.Run(ctx(), w.c, []string{wowKey(name, key)}, ttlAt, value))
}

func (w *wowRedisService) reprepareIf(name, key, value, oldValue string, ttlAt int64) bool {
	w.t.Helper()
	return w.flag(wowReprepareIfLua.Run(ctx(), w.c, []string{wowKey(name, key)}, ttlAt, value, oldValue))
}

// getValue is Wow's HGETALL read: the value and ttlAt of a live record
// (expired when ttlAt < now), ok false otherwise.
func (w *wowRedisService) getValue(name, key string) (value string, ttlAt int64, ok bool) {
	w.t.Helper()
	h, err := w.c.HGetAll(ctx(), wowKey(name, key)).Result()
	require.NoError(w.t, err)
	if len(h) == 0 {
		return "", 0, false
	}
	ttlAt, err = strconv.ParseInt(h["ttlAt"], 10, 64)
	require.NoError(w.t, err, "ttlAt %q", h["ttlAt"])
	if ttlAt < wowNow() {
		return "", 0, false
	}
	return h["value"], ttlAt, true
}

// keyChange is Wow's client-side key change: prepare the new key, then
// roll back the old one with its value; if that fails, release the new.
func (w *wowRedisService) keyChange(name, oldKey, oldValue, newKey, newValue string, ttlAt int64) bool {
	w.t.Helper()
	if !w.prepare(name, newKey, newValue, ttlAt) {
		return false
	}
	if w.rollbackValue(name, oldKey, oldValue) {
		return true
	}
	w.rollbackValue(name, newKey, newValue)
	return false
}

// wowTopology is one Redis deployment: the sidecar's --backend URL
// (layout=wow) and a client of the same Redis for the Wow service.
type wowTopology struct {
	name   string
	url    string
	client func(t testing.TB) redis.UniversalClient
}

// wowTopologies are the Redis deployments the scripts started (scripts/
// redis-servers.sh): standalone, Sentinel and Cluster.
func wowTopologies(t testing.TB) []wowTopology {
	var list []wowTopology
	for _, v := range []struct{ name, env string }{
		{"standalone", "PREPKEY_REDIS_URL"},
		{"sentinel", "PREPKEY_REDIS_SENTINEL_URL"},
		{"cluster", "PREPKEY_REDIS_CLUSTER_URL"},
	} {
		url := os.Getenv(v.env)
		if url == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is unset: scripts/test.sh starts that server", v.env)
			}
			continue
		}
		_, rest, _ := strings.Cut(url, "://")
		hosts, path, _ := strings.Cut(rest, "/")
		addrs := strings.Split(hosts, ",")
		top := wowTopology{name: v.name, url: url + "?layout=wow"}
		top.client = func(t testing.TB) redis.UniversalClient {
			var c redis.UniversalClient
			switch v.name {
			case "standalone":
				c = redis.NewClient(&redis.Options{Addr: addrs[0]})
			case "sentinel":
				c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: path, SentinelAddrs: addrs})
			default:
				c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		list = append(list, top)
	}
	if len(list) == 0 {
		t.Skip(`no Redis: run eval "$(scripts/redis-servers.sh up DIR)" first`)
	}
	return list
}

// eachWowTopology runs f with a sidecar on layout=wow and a Wow service on
// the same Redis, per topology.
func eachWowTopology(t *testing.T, f func(t *testing.T, s *sidecar, w *wowRedisService)) {
	for _, top := range wowTopologies(t) {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			s := start(t, "--backend", top.url, "--expired-retention", "1h")
			f(t, s, &wowRedisService{t: t, c: top.client(t)})
		})
	}
}

// TestWowSharesReservations: each side sees, refuses, releases and
// replaces the other's reservations, and takes them over after expiry.
func TestWowSharesReservations(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		c, ns := s.client(t, 2), uniqueNS(t)
		do := func(args ...any) any {
			t.Helper()
			v, err := c.Do(ctx(), args...).Result()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			require.NoError(t, err, "%v", args)
			return v
		}

		// Wow holds alice: the sidecar sees it and is refused.
		require.True(t, w.prepare(ns, "alice", `"u1"`, wowForeverMs))
		require.Equal(t, `"u1"`, do("PK.GET", ns, "alice"))
		require.Equal(t, []any{`"u1"`, int64(-1)}, do("PK.GETVALUE", ns, "alice"))
		require.Equal(t, int64(0), do("PK.PREPARE", ns, "alice", `"s1"`))
		// The sidecar replaces Wow's value; Wow sees it and is refused.
		require.Equal(t, int64(0), do("PK.REPREPARE", ns, "alice", `"s1"`, "IFEQ", `"other"`))
		require.Equal(t, int64(1), do("PK.REPREPARE", ns, "alice", `"s1"`, "IFEQ", `"u1"`, "KEEPTTL"))
		v, ttlAt, ok := w.getValue(ns, "alice")
		require.True(t, ok)
		require.Equal(t, `"s1"`, v)
		require.Equal(t, wowForeverMs, ttlAt, "forever is written as Wow's constant")
		require.False(t, w.prepare(ns, "alice", `"u2"`, wowForeverMs))
		// Wow releases it with the sidecar's value; the sidecar sees none.
		require.False(t, w.rollbackValue(ns, "alice", `"u1"`))
		require.True(t, w.rollbackValue(ns, "alice", `"s1"`))
		require.Nil(t, do("PK.GETVALUE", ns, "alice"))
		require.Equal(t, int64(1), do("PK.PREPARE", ns, "alice", `"s2"`))

		// The sidecar holds bob: Wow sees it, is refused, replaces it.
		require.Equal(t, int64(1), do("PK.PREPARE", ns, "bob", `{"id":2}`, "EX", "3600"))
		v, ttlAt, ok = w.getValue(ns, "bob")
		require.True(t, ok)
		require.Equal(t, `{"id":2}`, v)
		require.InDelta(t, wowNow()+3600_000, ttlAt, 5000)
		require.False(t, w.prepare(ns, "bob", `{"id":3}`, wowForeverMs))
		require.False(t, w.reprepareIf(ns, "bob", `{"id":3}`, `{"id":9}`, wowForeverMs))
		require.True(t, w.reprepareIf(ns, "bob", `{"id":3}`, `{"id":2}`, wowForeverMs))
		require.Equal(t, []any{`{"id":3}`, int64(-1)}, do("PK.GETVALUE", ns, "bob"))
		require.True(t, w.reprepare(ns, "bob", `{"id":4}`, wowForeverMs))
		require.Equal(t, `{"id":4}`, do("PK.GET", ns, "bob"))
		// Wow's rollback(now) of the sidecar's live record.
		require.True(t, w.rollback(ns, "bob"))
		require.Nil(t, do("PK.GET", ns, "bob"))

		// Release by the sidecar of Wow's reservations.
		require.True(t, w.prepare(ns, "carol", `"u3"`, wowForeverMs))
		require.Equal(t, int64(0), do("PK.ROLLBACK", ns, "carol", "IFEQ", `"u4"`))
		require.Equal(t, int64(1), do("PK.ROLLBACK", ns, "carol", "IFEQ", `"u3"`))
		_, _, ok = w.getValue(ns, "carol")
		require.False(t, ok)
		require.True(t, w.prepare(ns, "carol", `"u3"`, wowForeverMs))

		// Takeover after expiry, both ways.
		short := wowNow() + 300
		require.True(t, w.prepare(ns, "dave", `"w"`, short))
		require.Equal(t, int64(1), do("PK.PREPARE", ns, "erin", `"s"`, "PXAT", strconv.FormatInt(short, 10)))
		require.Equal(t, int64(0), do("PK.PREPARE", ns, "dave", `"s"`))
		require.False(t, w.prepare(ns, "erin", `"w"`, wowForeverMs))
		time.Sleep(time.Until(time.UnixMilli(short + 20)))
		require.Equal(t, []any{`"w"`, short}, do("PK.GETVALUE", ns, "dave"), "expired, retained")
		require.Nil(t, do("PK.GET", ns, "dave"))
		require.Equal(t, int64(1), do("PK.PREPARE", ns, "dave", `"s"`))
		require.True(t, w.prepare(ns, "erin", `"w"`, wowForeverMs))
		require.Equal(t, []any{`"w"`, int64(-1)}, do("PK.GETVALUE", ns, "erin"))
		v, _, ok = w.getValue(ns, "dave")
		require.True(t, ok)
		require.Equal(t, `"s"`, v)
	})
}

// TestWowKeyChangeAndMPrepare: the sidecar's key change and MPREPARE over
// Wow's records, and Wow's key change over the sidecar's.
func TestWowKeyChangeAndMPrepare(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		c, ns := s.client(t, 2), uniqueNS(t)
		do := func(args ...any) (any, error) {
			v, err := c.Do(ctx(), args...).Result()
			if errors.Is(err, redis.Nil) {
				return nil, nil
			}
			return v, err
		}
		ok := func(want any, args ...any) {
			t.Helper()
			v, err := do(args...)
			require.NoError(t, err, "%v", args)
			require.Equal(t, want, v, "%v", args)
		}

		require.True(t, w.prepare(ns, "old", `"u1"`, wowForeverMs))
		ok(int64(1), "PK.REPREPARE", ns, "new", `"u1"`, "FROM", "old", "IFEQ", `"u1"`)
		_, _, held := w.getValue(ns, "old")
		require.False(t, held)
		v, ttlAt, held := w.getValue(ns, "new")
		require.True(t, held)
		require.Equal(t, `"u1"`, v)
		require.Equal(t, wowForeverMs, ttlAt)

		require.True(t, w.prepare(ns, "taken", `"w"`, wowForeverMs))
		ok(int64(0), "PK.REPREPARE", ns, "taken", `"u1"`, "FROM", "new", "IFEQ", `"u1"`)
		_, err := do("PK.REPREPARE", ns, "free", `"u1"`, "FROM", "new", "IFEQ", `"u2"`)
		require.EqualError(t, err, "MISMATCH old key has no record with that value")
		_, _, held = w.getValue(ns, "free")
		require.False(t, held, "a mismatch leaves the new key free")

		ok(int64(0), "PK.MPREPARE", "2", ns, "m1", `"a"`, ns, "taken", `"b"`)
		_, _, held = w.getValue(ns, "m1")
		require.False(t, held, "all or none")
		require.True(t, w.rollbackValue(ns, "taken", `"w"`))
		ok(int64(1), "PK.MPREPARE", "2", ns, "m1", `"a"`, ns, "taken", `"b"`)
		require.False(t, w.prepare(ns, "m1", `"w"`, wowForeverMs))
		v, _, _ = w.getValue(ns, "taken")
		require.Equal(t, `"b"`, v)

		// Wow's key change over the sidecar's record.
		ok(int64(1), "PK.PREPARE", ns, "p", `"v"`)
		require.False(t, w.keyChange(ns, "p", `"other"`, "q", `"v"`, wowForeverMs))
		ok(nil, "PK.GET", ns, "q")
		require.True(t, w.keyChange(ns, "p", `"v"`, "q", `"v"`, wowForeverMs))
		ok(nil, "PK.GET", ns, "p")
		ok([]any{`"v"`, int64(-1)}, "PK.GETVALUE", ns, "q")
	})
}

// TestWowScan: PK.SCAN lists Wow's records, with their ttlAt (-1 forever,
// an expired one while retained), and skips what is not a record of the
// namespace.
func TestWowScan(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		c, ns := s.client(t, 2), uniqueNS(t)
		want := map[string]string{}
		for i := range 12 {
			k := fmt.Sprintf("k%02d", i)
			require.True(t, w.prepare(ns, k, fmt.Sprintf(`"v%d"`, i), wowForeverMs))
			want[k] = fmt.Sprintf(`"v%d" -1`, i)
		}
		past := wowNow() - 1000
		require.True(t, w.prepare(ns, "expired", `"x"`, past))
		want["expired"] = fmt.Sprintf(`"x" %d`, past)
		require.True(t, w.prepare(ns+"x", "other", `"o"`, wowForeverMs))    // another name
		require.NoError(t, w.c.Set(ctx(), wowKey(ns, "str"), "x", 0).Err()) // another type
		require.NoError(t, w.c.HSet(ctx(), wowKey(ns, "bad"), "ttlAt", "soon", "value", `"b"`).Err())

		got := map[string]string{}
		cursor := "0"
		for {
			v, err := c.Do(ctx(), "PK.SCAN", ns, cursor, "COUNT", "5").Slice()
			require.NoError(t, err)
			cursor = v[0].(string)
			for _, r := range v[1].([]any) {
				rec := r.([]any)
				got[rec[0].(string)] = fmt.Sprintf("%s %d", rec[1], rec[2])
			}
			if cursor == "0" {
				break
			}
		}
		require.Equal(t, want, got)
	})
}

// TestWowRace: a sidecar client and a Wow client, on connections of their
// own, race for each of many keys: exactly one wins each, and the record
// holds the winner's value.
func TestWowRace(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		ns := uniqueNS(t)
		const keys = 60
		sideWins, wowWins := make([]bool, keys), make([]bool, keys)
		var wg sync.WaitGroup
		startGun := make(chan struct{})
		for k := range keys {
			key := fmt.Sprintf("k%d", k)
			c := s.client(t, 2)
			wg.Go(func() {
				<-startGun
				n, err := c.Do(ctx(), "PK.PREPARE", ns, key, `"sidecar"`).Int()
				require.NoError(t, err)
				sideWins[k] = n == 1
			})
			wg.Go(func() {
				<-startGun
				wowWins[k] = w.prepare(ns, key, `"wow"`, wowForeverMs)
			})
		}
		close(startGun)
		wg.Wait()
		for k := range keys {
			require.NotEqual(t, sideWins[k], wowWins[k], "key %d: exactly one winner", k)
			v, _, ok := w.getValue(ns, fmt.Sprintf("k%d", k))
			require.True(t, ok)
			if sideWins[k] {
				require.Equal(t, `"sidecar"`, v)
			} else {
				require.Equal(t, `"wow"`, v)
			}
		}
	})
}

// TestWowUnusualRecords: Wow records the sidecar reads as the contract
// says for what it can read, and never overwrites while they may be live.
func TestWowUnusualRecords(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		c, ns := s.client(t, 2), uniqueNS(t)
		// No ttlAt: 0, expired; a prepare takes it over, as Wow's does.
		require.NoError(t, w.c.HSet(ctx(), wowKey(ns, "nottl"), "value", `"w"`).Err())
		require.Equal(t, redis.Nil, c.Do(ctx(), "PK.GETVALUE", ns, "nottl").Err())
		require.Equal(t, int64(1), c.Do(ctx(), "PK.PREPARE", ns, "nottl", `"s"`).Val())
		require.Equal(t, map[string]string{"ttlAt": strconv.FormatInt(wowForeverMs, 10), "value": `"s"`},
			w.c.HGetAll(ctx(), wowKey(ns, "nottl")).Val())

		// A ttlAt that is not a number: held, unreadable, never overwritten.
		require.NoError(t, w.c.HSet(ctx(), wowKey(ns, "nan"), "ttlAt", "tomorrow", "value", `"w"`).Err())
		require.Equal(t, int64(0), c.Do(ctx(), "PK.PREPARE", ns, "nan", `"s"`).Val())
		require.Equal(t, int64(0), c.Do(ctx(), "PK.MPREPARE", "2", ns, "free", `"s"`, ns, "nan", `"s"`).Val())
		require.Equal(t, int64(0), c.Do(ctx(), "PK.REPREPARE", ns, "nan", `"s"`, "FROM", "nottl", "IFEQ", `"s"`).Val(), "the new key is held")
		require.EqualError(t, c.Do(ctx(), "PK.REPREPARE", ns, "free2", `"s"`, "FROM", "nan", "IFEQ", `"x"`).Err(), "MISMATCH old key has no record with that value")
		require.Equal(t, int64(0), c.Do(ctx(), "PK.REPREPARE", ns, "nan", `"s"`).Val(), "no live record it can read")
		err := c.Do(ctx(), "PK.GET", ns, "nan").Err()
		require.ErrorContains(t, err, "UNAVAILABLE")
		require.ErrorContains(t, err, "ttlAt is not a number")
		require.Equal(t, map[string]string{"ttlAt": "tomorrow", "value": `"w"`}, w.c.HGetAll(ctx(), wowKey(ns, "nan")).Val())
		require.Equal(t, int64(1), c.Do(ctx(), "PK.ROLLBACK", ns, "nan").Val(), "ROLLBACK deletes a record, readable or not")
		require.Equal(t, int64(1), c.Do(ctx(), "PK.PREPARE", ns, "nan", `"s"`).Val())

		// Another type: -UNAVAILABLE … WRONGTYPE, untouched.
		require.NoError(t, w.c.Set(ctx(), wowKey(ns, "str"), "x", 0).Err())
		require.ErrorContains(t, c.Do(ctx(), "PK.PREPARE", ns, "str", `"s"`).Err(), "WRONGTYPE")
		require.Equal(t, "x", w.c.Get(ctx(), wowKey(ns, "str")).Val())
	})
}

// TestWowUTF8: in layout=wow a key that is not valid UTF-8 is refused with
// -ERR in every key argument, alone, pipelined and in MULTI, and nothing
// is stored.
func TestWowUTF8(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		r, ns := s.raw(t), uniqueNS(t)
		bad := "k\xff\xfe"
		const refused = "-ERR key is not valid UTF-8 (layout=wow)\r\n"
		r.do(refused, "PK.PREPARE", ns, bad, `"v"`)
		r.do(refused, "PK.GET", ns, bad)
		r.do(refused, "PK.GETVALUE", ns, bad)
		r.do(refused, "PK.ROLLBACK", ns, bad)
		r.do(refused, "PK.REPREPARE", ns, bad, `"v"`)
		r.do(refused, "PK.REPREPARE", ns, "new", `"v"`, "FROM", bad, "IFEQ", `"v"`)
		r.do(refused, "PK.MPREPARE", "2", ns, "ok", `"v"`, ns, bad, `"v"`)
		r.do(":1\r\n", "PK.PREPARE", ns, "é", `"v"`)
		// pipelined: each answered in order
		r.send(resp("PK.PREPARE", ns, bad, `"v"`) + resp("PK.PREPARE", ns, "p", `"v"`) + resp("PK.GET", ns, "p"))
		r.expect(refused + ":1\r\n$3\r\n\"v\"\r\n")
		// queued in MULTI: refused, and EXEC aborts
		r.do("+OK\r\n", "MULTI")
		r.do("+QUEUED\r\n", "PK.PREPARE", ns, "m", `"v"`)
		r.do(refused, "PK.PREPARE", ns, bad, `"v"`)
		r.do("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
		r.do("$-1\r\n", "PK.GET", ns, "m")
		r.do("$-1\r\n", "PK.GET", ns, "ok")
		n, err := w.c.Exists(ctx(), wowKey(ns, bad), wowKey(ns, "ok"), wowKey(ns, "m")).Result()
		if err == nil {
			require.Zero(t, n)
		} // a Cluster refuses EXISTS across slots; GET above said it all
		v, _, ok := w.getValue(ns, "é")
		require.True(t, ok)
		require.Equal(t, `"v"`, v)
	})
}

// TestWowNotJSON: in layout=wow a value that is not JSON (which Wow's
// getValue could not read) is refused with the MongoDB layout's reply, in
// every value argument, IFEQ values included, and nothing is stored; with
// ?values=any the URL takes any bytes.
func TestWowNotJSON(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		r, ns := s.raw(t), uniqueNS(t)
		const refused = "-ERR value is not valid JSON (layout=wow)\r\n"
		for _, bad := range []string{"v", "", `{"a":1`, "'a'", "\"\xff\"", "1 2", "NaN"} {
			r.do(refused, "PK.PREPARE", ns, "k", bad)
			r.do(refused, "PK.REPREPARE", ns, "k", bad)
			r.do(refused, "PK.REPREPARE", ns, "k", `"v"`, "IFEQ", bad)
			r.do(refused, "PK.ROLLBACK", ns, "k", "IFEQ", bad)
			r.do(refused, "PK.REPREPARE", ns, "new", bad, "FROM", "k", "IFEQ", `"v"`)
			r.do(refused, "PK.REPREPARE", ns, "new", `"v"`, "FROM", "k", "IFEQ", bad)
			r.do(refused, "PK.MPREPARE", "2", ns, "a", `"v"`, ns, "b", bad)
		}
		for _, key := range []string{"k", "new", "a", "b"} {
			r.do("$-1\r\n", "PK.GET", ns, key)
		}
		r.do(":1\r\n", "PK.PREPARE", ns, "k", ` {"a" : [1, 2.5, null]} `)
		v, _, ok := w.getValue(ns, "k")
		require.True(t, ok)
		require.Equal(t, ` {"a" : [1, 2.5, null]} `, v, "Redis keeps the bytes: JSON is checked, not rewritten")
	})
}

// TestWowTransaction: MULTI/EXEC and pipelines in layout=wow, on Wow's
// records (a Cluster runs a block in one slot: a key's own, here).
func TestWowTransaction(t *testing.T) {
	eachWowTopology(t, func(t *testing.T, s *sidecar, w *wowRedisService) {
		c, ns := s.client(t, 2), uniqueNS(t)
		require.True(t, w.prepare(ns, "a", `"w"`, wowForeverMs))
		cmds, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
			p.Do(ctx(), "PK.PREPARE", ns, "a", `"s"`)
			p.Do(ctx(), "PK.REPREPARE", ns, "a", `"s"`, "IFEQ", `"w"`)
			p.Do(ctx(), "PK.GETVALUE", ns, "a")
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, int64(0), cmds[0].(*redis.Cmd).Val())
		require.Equal(t, int64(1), cmds[1].(*redis.Cmd).Val())
		require.Equal(t, []any{`"s"`, int64(-1)}, cmds[2].(*redis.Cmd).Val())

		// A pipeline of many commands: Wow-held keys refused, free ones won.
		for i := range 10 {
			require.True(t, w.prepare(ns, fmt.Sprintf("held%d", i), `"w"`, wowForeverMs))
		}
		cmds, err = c.Pipelined(ctx(), func(p redis.Pipeliner) error {
			for i := range 10 {
				p.Do(ctx(), "PK.PREPARE", ns, fmt.Sprintf("held%d", i), `"s"`)
				p.Do(ctx(), "PK.PREPARE", ns, fmt.Sprintf("free%d", i), `"s"`)
			}
			return nil
		})
		require.NoError(t, err)
		for i := range 10 {
			require.Equal(t, int64(0), cmds[2*i].(*redis.Cmd).Val())
			require.Equal(t, int64(1), cmds[2*i+1].(*redis.Cmd).Val())
			require.False(t, w.prepare(ns, fmt.Sprintf("free%d", i), `"w"`, wowForeverMs))
		}
	})
}

// TestWowBadStart: an unknown layout, or a key prefix with layout=wow,
// refuses to start with one line.
func TestWowBadStart(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--backend", "redis://127.0.0.1:1?layout=wow2"},
			`sidecar: --backend: redis: invalid URL "redis://127.0.0.1:1?layout=wow2": layout="wow2": want prepkey or wow` + "\n"},
		{[]string{"--backend", "redis+cluster://127.0.0.1:1?layout=WOW"},
			`sidecar: --backend: redis: invalid URL "redis+cluster://127.0.0.1:1?layout=WOW": layout="WOW": want prepkey or wow` + "\n"},
		{[]string{"--backend", "redis://127.0.0.1:1?layout=wow", "--redis-key-prefix", "app:"},
			`sidecar: --backend: redis: --redis-key-prefix "app:" cannot apply with layout=wow: Wow's record keys are fixed (v2:prepare:{…}); leave the prefix at its default` + "\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(sidecarBin, tt.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			require.Equal(t, 2, exit.ExitCode())
			require.Equal(t, tt.want, stderr.String())
			require.Empty(t, stdout.String())
		})
	}
}
