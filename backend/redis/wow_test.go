package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// wowForever is Wow's forever ttlAt, 6666-06-06T00:00:00Z.
const wowForever = "148204944000000"

func TestWowRecordKey(t *testing.T) {
	ks := wowKeys{head: WowKeyHead}
	tests := []struct{ ns, key, want string }{
		{"string", "id", "v2:prepare:{c3RyaW5n.aWQ}"}, // WOW-LAYOUT.md's example
		{"username", "alice", "v2:prepare:{dXNlcm5hbWU.YWxpY2U}"},
		{"u", "\xff\xfe}", "v2:prepare:{dQ.__59}"}, // URL-safe alphabet, no padding
		{"u", "é", "v2:prepare:{dQ.w6k}"},
	}
	for _, tt := range tests {
		rk := ks.recordKey(tt.ns, []byte(tt.key))
		require.Equal(t, tt.want, rk)
		require.Len(t, rk, ks.recordKeyLen(tt.ns, []byte(tt.key)))
		key, ok := ks.parse(tt.ns, rk)
		require.True(t, ok, rk)
		require.Equal(t, tt.key, string(key))
		_, ok = ks.parse(tt.ns+"x", rk)
		require.False(t, ok, "another namespace's key")
	}
	// The hash tag is the whole "name.key": both keys of a record never
	// split, and the slot is the tag's.
	require.Equal(t, slot("{c3RyaW5n.aWQ}"), slot(ks.recordKey("string", []byte("id"))))
}

func TestWowParseRejects(t *testing.T) {
	ks := wowKeys{head: WowKeyHead}
	for _, rk := range []string{
		"v2:prepare:{dQ.}",        // empty key
		"v2:prepare:{dQ.YQ==}",    // padded
		"v2:prepare:{dQ.YR}",      // not canonical (trailing bits set)
		"v2:prepare:{dQ.Y+E}",     // the standard alphabet
		"v2:prepare:{dQ.YWJj",     // no closing brace
		"v2:prepare:{dQ.YW}J}",    // a brace inside
		"prepare:{dQ.YWJj}",       // Wow before 8.9
		"v2:prepare:{dQ:YWJj}",    // no dot
		"v2:prepare:{dQ.YWJj}x",   // trailing bytes
		"pk:{u:abc}",              // the sidecar's own layout
		"v2:prepare:{dXY.YWJj}",   // namespace "uv"
		"v2:prepare:{dQ.YWJj.YQ}", // '.' is no base64url character
	} {
		_, ok := ks.parse("u", rk)
		require.False(t, ok, rk)
	}
}

func TestParseURLLayout(t *testing.T) {
	for _, u := range []string{
		"redis://h?layout=wow", "rediss://h?layout=wow", "redis://h/2?wait=1&layout=wow",
		"redis+sentinel://s1/m?layout=wow", "rediss+sentinel://s1/m?layout=wow&sentinel_password=x",
		"redis+cluster://a,b?layout=wow", "rediss+cluster://a?layout=wow",
	} {
		got, err := parseURL(u)
		require.NoError(t, err, u)
		require.Equal(t, LayoutWow, got.layout, u)
	}
	for _, u := range []string{"redis://h", "redis://h?layout=prepkey", "redis+cluster://a?layout=prepkey"} {
		got, err := parseURL(u)
		require.NoError(t, err, u)
		require.Equal(t, LayoutPrepkey, got.layout, u)
	}
	_, err := parseURL("redis://h?layout=wow2")
	require.EqualError(t, err, `redis: invalid URL "redis://h?layout=wow2": layout="wow2": want prepkey or wow`)
	_, err = parseURL("redis+cluster://a?layout=")
	require.EqualError(t, err, `redis: invalid URL "redis+cluster://a?layout=": layout="": want prepkey or wow`)
}

func TestWowKeyPrefixRefused(t *testing.T) {
	_, err := Open(context.Background(), "redis://127.0.0.1:1?layout=wow", Config{KeyPrefix: "app:"})
	require.EqualError(t, err, `redis: --redis-key-prefix "app:" cannot apply with layout=wow: Wow's record keys are fixed (v2:prepare:{…}); leave the prefix at its default`)
	for _, prefix := range []string{"", DefaultKeyPrefix} {
		s, err := Open(context.Background(), "redis://127.0.0.1:1?layout=wow", Config{KeyPrefix: prefix})
		require.NoError(t, err)
		require.Equal(t, LayoutWow, s.Layout())
		require.NoError(t, s.Close())
	}
}

// TestWowArgCheck: layout=wow refuses a key that is not UTF-8 in every
// key argument; the default layout has no check at all.
func TestWowArgCheck(t *testing.T) {
	f := startFake(t)
	def := openStore(t, f.url(), Config{})
	require.Nil(t, def.ArgCheck())
	wow := openStore(t, wowURL(f.url()), Config{KeyPrefix: DefaultKeyPrefix})
	check := wow.ArgCheck()
	bad, good := []byte("a\xffb"), []byte("é")
	for _, op := range []backend.Op{
		{Kind: backend.OpPrepare, NS: "n", Key: bad},
		{Kind: backend.OpGet, NS: "n", Key: bad},
		{Kind: backend.OpMove, NS: "n", Key: good, OldKey: bad},
		{Kind: backend.OpMove, NS: "n", Key: bad, OldKey: good},
		{Kind: backend.OpMPrepare, Entries: []backend.Entry{{NS: "n", Key: good}, {NS: "m", Key: bad}}},
	} {
		require.EqualError(t, check(&op), backend.ErrKeyNotUTF8.Text, "%+v", op)
	}
	require.EqualError(t, check(&backend.Op{Kind: backend.OpGet, NS: "\xff", Key: good}), backend.ErrNamespaceNotUTF8.Text)
	// Values, new ones and IFEQ ones, must be JSON that Wow can read.
	notJSON, js := []byte("v"), []byte(`{"a":"é"}`)
	for _, op := range []backend.Op{
		{Kind: backend.OpPrepare, NS: "n", Key: good, Value: notJSON},
		{Kind: backend.OpPrepare, NS: "n", Key: good, Value: []byte("\"\xff\"")},
		{Kind: backend.OpReprepare, NS: "n", Key: good, Value: notJSON},
		{Kind: backend.OpReprepare, NS: "n", Key: good, Value: js, Cond: backend.IfEq(notJSON)},
		{Kind: backend.OpRollback, NS: "n", Key: good, Cond: backend.IfEq(notJSON)},
		{Kind: backend.OpMove, NS: "n", Key: good, OldKey: good, Value: notJSON, OldValue: js},
		{Kind: backend.OpMove, NS: "n", Key: good, OldKey: good, Value: js, OldValue: notJSON},
		{Kind: backend.OpMPrepare, Entries: []backend.Entry{{NS: "n", Key: good, Value: js}, {NS: "m", Key: good, Value: notJSON}}},
	} {
		require.EqualError(t, check(&op), backend.ErrValueNotJSON.Text, "%+v", op)
	}
	require.NoError(t, check(&backend.Op{Kind: backend.OpReprepare, NS: "n", Key: good, Value: js, Cond: backend.IfEq(js)}))
	require.NoError(t, check(&backend.Op{Kind: backend.OpRollback, NS: "n", Key: good}))
	// ?values=any: any bytes, keys still UTF-8.
	anyv := openStore(t, wowURL(f.url())+"&values=any", Config{KeyPrefix: DefaultKeyPrefix})
	check = anyv.ArgCheck()
	require.NoError(t, check(&backend.Op{Kind: backend.OpPrepare, NS: "n", Key: good, Value: notJSON}))
	require.EqualError(t, check(&backend.Op{Kind: backend.OpPrepare, NS: "n", Key: bad, Value: notJSON}), backend.ErrKeyNotUTF8.Text)
	_, err := Open(context.Background(), f.url()+"?values=any", Config{})
	require.ErrorContains(t, err, `?values=any": values=any applies only with layout=wow (the sidecar's own layout takes any bytes)`)
	_, err = Open(context.Background(), wowURL(f.url())+"&values=some", Config{})
	require.ErrorContains(t, err, `&values=some": values="some": want json or any`)
}

// wowRecord reads the hash at the record key of (ns, key) and its Redis
// expiry.
func wowRecord(t *testing.T, f *fakeRedis, s *Store, ns, key string) (map[string]string, time.Duration) {
	t.Helper()
	rk := s.keys.recordKey(ns, []byte(key))
	if !f.Exists(rk) {
		return nil, 0
	}
	h := map[string]string{}
	fields, err := f.HKeys(rk)
	require.NoError(t, err)
	for _, field := range fields {
		h[field] = f.HGet(rk, field)
	}
	return h, f.TTL(rk)
}

// TestWowRecords: what the store writes is exactly Wow's record, with no
// Redis expiry, and what it reads of Wow's records, usual or not.
func TestWowRecords(t *testing.T) {
	ctx := context.Background()
	f := startFake(t)
	s := openStore(t, wowURL(f.url()), Config{Options: backend.Options{Retention: time.Hour}, KeyPrefix: DefaultKeyPrefix})
	now := f.clock().UnixMilli()
	const ns = "username"

	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, ns, []byte("alice"), []byte(`"u1"`), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	h, ttl := wowRecord(t, f, s, ns, "alice")
	require.Equal(t, map[string]string{"ttlAt": wowForever, "value": `"u1"`}, h)
	require.Zero(t, ttl, "no Redis expiry")
	require.True(t, f.Exists("v2:prepare:{dXNlcm5hbWU.YWxpY2U}"))
	rec, found, err := (backend.Calls{Runner: s}).Get(ctx, ns, []byte("alice"))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, backend.Record{Value: []byte(`"u1"`), TTLAt: backend.Forever, Live: true}, rec)

	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, ns, []byte("bob"), []byte(`"u2"`), backend.Expiry{Kind: backend.ExpireAfter, Millis: 5000})
	require.NoError(t, err)
	require.True(t, ok)
	h, ttl = wowRecord(t, f, s, ns, "bob")
	require.Equal(t, map[string]string{"ttlAt": strconv.FormatInt(now+5000, 10), "value": `"u2"`}, h)
	require.Zero(t, ttl, "no Redis expiry on a finite record either: Wow's HSET would keep it")

	// Seeds of Wow's own, and of others.
	seed := func(key string, fields ...string) {
		rk := s.keys.recordKey(ns, []byte(key))
		f.Del(rk)
		for i := 0; i < len(fields); i += 2 {
			f.HSet(rk, fields[i], fields[i+1])
		}
	}
	get := func(key string) (backend.Record, bool, error) {
		return (backend.Calls{Runner: s}).Get(ctx, ns, []byte(key))
	}
	prepare := func(key string) bool {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, ns, []byte(key), []byte(`"new"`), backend.Expiry{})
		require.NoError(t, err)
		return ok
	}

	t.Run("ttlAt above forever", func(t *testing.T) {
		seed("c", "ttlAt", "999999999999999999", "value", `"w"`)
		rec, found, err := get("c")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, backend.Record{Value: []byte(`"w"`), TTLAt: backend.Forever, Live: true}, rec)
		require.False(t, prepare("c"))
	})
	t.Run("expired Wow record, retained", func(t *testing.T) {
		at := strconv.FormatInt(now-1000, 10)
		seed("d", "ttlAt", at, "value", `"w"`)
		rec, found, err := get("d")
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, backend.Record{Value: []byte(`"w"`), TTLAt: now - 1000, Live: false}, rec)
		require.True(t, prepare("d"), "an expired record is taken over")
		h, _ := wowRecord(t, f, s, ns, "d")
		require.Equal(t, map[string]string{"ttlAt": wowForever, "value": `"new"`}, h)
	})
	t.Run("expired past the retention", func(t *testing.T) {
		seed("e", "ttlAt", strconv.FormatInt(now-2*3600_000, 10), "value", `"w"`)
		_, found, err := get("e")
		require.NoError(t, err)
		require.False(t, found, "past ttlAt + retention reads as no record")
		ok, err := (backend.Calls{Runner: s}).Rollback(ctx, ns, []byte("e"), backend.Cond{})
		require.NoError(t, err)
		require.False(t, ok)
	})
	t.Run("no ttlAt", func(t *testing.T) {
		seed("f", "value", `"w"`)
		_, found, err := get("f")
		require.NoError(t, err)
		require.False(t, found, "ttlAt 0: expired in 1970")
		require.True(t, prepare("f"))
		h, _ := wowRecord(t, f, s, ns, "f")
		require.Equal(t, map[string]string{"ttlAt": wowForever, "value": `"new"`}, h)
	})
	t.Run("ttlAt not a number", func(t *testing.T) {
		seed("g", "ttlAt", "soon", "value", `"w"`)
		require.False(t, prepare("g"), "a record of unknown life holds its key")
		_, _, err := get("g")
		require.ErrorContains(t, err, "UNREADABLE")
		require.ErrorContains(t, err, "ttlAt is not a number")
		ok, err := (backend.Calls{Runner: s}).Reprepare(ctx, ns, []byte("g"), []byte(`"x"`), backend.Cond{}, backend.Expiry{})
		require.NoError(t, err)
		require.False(t, ok, "no live record to replace")
		r, err := (backend.Calls{Runner: s}).Move(ctx, ns, []byte("g"), []byte(`"x"`), []byte("alice"), []byte(`"u1"`), backend.Expiry{})
		require.NoError(t, err)
		require.Equal(t, backend.NewKeyTaken, r)
		ok, err = (backend.Calls{Runner: s}).MPrepare(ctx, []backend.Entry{{NS: ns, Key: []byte("free1"), Value: []byte("1")}, {NS: ns, Key: []byte("g"), Value: []byte("1")}}, backend.Expiry{})
		require.NoError(t, err)
		require.False(t, ok)
		h, _ := wowRecord(t, f, s, ns, "g")
		require.Equal(t, map[string]string{"ttlAt": "soon", "value": `"w"`}, h, "never overwritten")
		_, found, err := get("free1")
		require.NoError(t, err)
		require.False(t, found)
		ok, err = (backend.Calls{Runner: s}).Rollback(ctx, ns, []byte("g"), backend.IfEq([]byte(`"other"`)))
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = (backend.Calls{Runner: s}).Rollback(ctx, ns, []byte("g"), backend.Cond{})
		require.NoError(t, err)
		require.True(t, ok, "ROLLBACK deletes a record, live or not")
		require.True(t, prepare("g"))
	})
	t.Run("no value", func(t *testing.T) {
		seed("h", "ttlAt", wowForever)
		require.False(t, prepare("h"), "a live record holds its key")
		_, _, err := get("h")
		require.ErrorContains(t, err, "UNREADABLE")
		require.ErrorContains(t, err, "no value")
		ok, err := (backend.Calls{Runner: s}).Reprepare(ctx, ns, []byte("h"), []byte(`"x"`), backend.IfEq([]byte("")), backend.Expiry{})
		require.NoError(t, err)
		require.False(t, ok, "IFEQ never matches a missing value")
		ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, ns, []byte("h"), []byte(`"x"`), backend.Cond{}, backend.Expiry{Kind: backend.KeepTTL})
		require.NoError(t, err)
		require.True(t, ok)
		h, _ := wowRecord(t, f, s, ns, "h")
		require.Equal(t, map[string]string{"ttlAt": wowForever, "value": `"x"`}, h)

		seed("i", "ttlAt", strconv.FormatInt(now-1, 10))
		require.True(t, prepare("i"), "an expired record without a value is taken over")
	})
	t.Run("another type", func(t *testing.T) {
		rk := s.keys.recordKey(ns, []byte("j"))
		require.NoError(t, f.Set(rk, "x"))
		_, err := (backend.Calls{Runner: s}).Prepare(ctx, ns, []byte("j"), []byte("v"), backend.Expiry{})
		require.ErrorContains(t, err, "WRONGTYPE")
		v, _ := f.Get(rk)
		require.Equal(t, "x", v)
	})
	t.Run("scan", func(t *testing.T) {
		seed("g", "ttlAt", "soon", "value", `"w"`)
		require.NoError(t, f.Set(s.keys.recordKey(ns, []byte("j")), "x"))
		f.HSet("v2:prepare:{dXNlcm5hbWU.!!}", "ttlAt", wowForever, "value", "1") // not a record key
		got := map[string]string{}
		var pos []byte
		for {
			page, err := s.Scan(ctx, ns, pos, 3)
			require.NoError(t, err)
			for _, r := range page.Records {
				got[string(r.Key)] = string(r.Value)
			}
			if page.Done {
				break
			}
			pos = page.Next
		}
		require.Equal(t, map[string]string{"alice": `"u1"`, "bob": `"u2"`, "c": `"w"`, "d": `"new"`, "f": `"new"`, "h": `"x"`, "i": `"new"`}, got)
	})
}
