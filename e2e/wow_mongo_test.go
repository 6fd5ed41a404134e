package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	mongodrv "go.mongodb.org/mongo-driver/v2/mongo"
	mongoopts "go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend/mongo"
)

// The sidecar in layout=wow and a Wow service on one MongoDB database. The
// Wow service is a test double written from the facts of Wow's layout
// (docs/mongo.md, "Wow layout"; Wow 8.10's MongoPrepareKey.kt): its
// operations are the driver calls Wow makes, and it turns JSON into BSON
// as Wow's Jackson (floats as BigDecimal) and the Java driver do, with its
// own converter (wowValue), not the sidecar's.

// wowForeverMs is Wow's ttlAt of a record that never expires
// (6666-06-06T00:00:00Z), in Redis and (as a Date) in MongoDB.
const wowForeverMs int64 = 148204944000000

// wowMongoService is the double: one Wow service on database db.
type wowMongoService struct {
	db *mongodrv.Database
}

func (w wowMongoService) coll(name string) *mongodrv.Collection {
	return w.db.Collection("prepare_" + name)
}

// bsonOf is the BSON value of a JSON text as Wow stores it when every
// whole number is an Int field (see wowValue).
func bsonOf(t testing.TB, json string) any {
	t.Helper()
	return wowValue(t, json)
}

// wowValue is the BSON value Wow stores for a JSON text: Wow converts its
// value to a map with Jackson, which reads a fraction as a BigDecimal of
// Double.toString's digits (USE_BIG_DECIMAL_FOR_FLOATS), and the Java
// driver writes a BigDecimal as a Decimal128 of the same coefficient and
// exponent, a zero without its sign (BigDecimal has no -0); a whole number
// is an Int32, or an Int64 for a Long field (the field names in longs) or
// when it does not fit. Objects keep their field order.
func wowValue(t testing.TB, text string, longs ...string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := wowNext(dec, "", longs)
	require.NoError(t, err, "JSON %s", text)
	return v
}

func wowNext(dec *json.Decoder, field string, longs []string) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '[' {
			a := bson.A{}
			for dec.More() {
				v, err := wowNext(dec, field, longs)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token()
			return a, err
		}
		d := bson.D{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := wowNext(dec, k.(string), longs)
			if err != nil {
				return nil, err
			}
			d = append(d, bson.E{Key: k.(string), Value: v})
		}
		_, err := dec.Token()
		return d, err
	case json.Number:
		text := string(tok)
		if strings.ContainsAny(text, ".eE") {
			d, err := bson.ParseDecimal128(text)
			if err != nil {
				return nil, err
			}
			if bi, _, err := d.BigInt(); err == nil && bi.Sign() == 0 {
				h, l := d.GetBytes()
				d = bson.NewDecimal128(h&^(1<<63), l)
			}
			return d, nil
		}
		n, err := tok.Int64()
		if err != nil {
			return nil, err
		}
		if n == int64(int32(n)) && !slices.Contains(longs, field) {
			return int32(n), nil
		}
		return n, nil
	default:
		return tok, nil // string, bool, nil
	}
}

// prepare is Wow's prepare: replace a record whose ttlAt is past, else
// insert; a duplicate key means the key is held.
func (w wowMongoService) prepare(t testing.TB, name, key, json string, ttlAt time.Time) (bool, error) {
	return w.prepareValue(name, key, bsonOf(t, json), ttlAt)
}

// prepareValue is prepare of a BSON value (see wowValue).
func (w wowMongoService) prepareValue(name, key string, value any, ttlAt time.Time) (bool, error) {
	now := time.Now()
	doc := bson.D{{Key: "_id", Value: key}, {Key: "value", Value: value}, {Key: "ttlAt", Value: bson.NewDateTimeFromTime(ttlAt)}}
	_, err := w.coll(name).ReplaceOne(ctx(), bson.D{{Key: "_id", Value: key}, {Key: "ttlAt", Value: bson.D{{Key: "$lt", Value: bson.NewDateTimeFromTime(now)}}}},
		doc, mongoopts.Replace().SetUpsert(true))
	if mongodrv.IsDuplicateKeyError(err) {
		return false, nil
	}
	return err == nil, err
}

// rollbackValue is Wow's rollback(value).
func (w wowMongoService) rollbackValue(t testing.TB, name, key, json string) bool {
	return w.rollbackBSON(t, name, key, bsonOf(t, json))
}

// rollbackBSON is Wow's rollback(value) of a BSON value (see wowValue).
func (w wowMongoService) rollbackBSON(t testing.TB, name, key string, value any) bool {
	res, err := w.coll(name).DeleteOne(ctx(), bson.D{{Key: "_id", Value: key}, {Key: "value", Value: value}})
	require.NoError(t, err)
	return res.DeletedCount == 1
}

// rollback is Wow's rollback(): a live record only.
func (w wowMongoService) rollback(t testing.TB, name, key string) bool {
	res, err := w.coll(name).DeleteOne(ctx(), bson.D{{Key: "_id", Value: key}, {Key: "ttlAt", Value: bson.D{{Key: "$gt", Value: bson.NewDateTimeFromTime(time.Now())}}}})
	require.NoError(t, err)
	return res.DeletedCount == 1
}

// reprepare is Wow's reprepare(value[, old]).
func (w wowMongoService) reprepare(t testing.TB, name, key, json string, ttlAt time.Time, old *string) bool {
	var oldValue any
	if old != nil {
		oldValue = bsonOf(t, *old)
	}
	return w.reprepareBSON(t, name, key, bsonOf(t, json), ttlAt, oldValue)
}

// reprepareBSON is Wow's reprepare(value[, old]) of BSON values (see
// wowValue); a nil old is reprepare(value).
func (w wowMongoService) reprepareBSON(t testing.TB, name, key string, value any, ttlAt time.Time, old any) bool {
	filter := bson.D{{Key: "_id", Value: key}}
	if old != nil {
		filter = append(filter, bson.E{Key: "value", Value: old})
	}
	res, err := w.coll(name).UpdateOne(ctx(), filter, bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: value}, {Key: "ttlAt", Value: bson.NewDateTimeFromTime(ttlAt)}}}})
	require.NoError(t, err)
	return res.MatchedCount == 1
}

// getValue is Wow's getValue: the record as stored, fields in order.
func (w wowMongoService) getValue(t testing.TB, name, key string) (bson.D, bool) {
	var d bson.D
	err := w.coll(name).FindOne(ctx(), bson.D{{Key: "_id", Value: key}}).Decode(&d)
	if errors.Is(err, mongodrv.ErrNoDocuments) {
		return nil, false
	}
	require.NoError(t, err)
	return d, true
}

var wowForeverDate = time.UnixMilli(wowForeverMs)

// wowMongo starts a sidecar in layout=wow on a fresh database and a Wow
// service on the same database. Without a MongoDB server it skips (fails
// on CI).
func wowMongo(t *testing.T, args ...string) (*sidecar, wowMongoService, string) {
	t.Helper()
	url := os.Getenv("MONGO_URI")
	if url == "" {
		url = os.Getenv("PK_TEST_MONGO_URI")
	}
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PK_TEST_MONGO_URI is unset: scripts/test.sh starts FerretDB (scripts/mongo-engine.sh)")
		}
		t.Skip(`no MongoDB server: eval "$(scripts/mongo-engine.sh up DIR)"`)
	}
	dbName := fmt.Sprintf("wow_%d", time.Now().UnixNano())
	u, err := mongo.WithDatabase(url, dbName)
	require.NoError(t, err)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	s := start(t, append([]string{"--backend", u + sep + "layout=wow"}, args...)...)
	client, err := mongodrv.Connect(mongoopts.Client().ApplyURI(url))
	require.NoError(t, err)
	db := client.Database(dbName)
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = db.Drop(c)
		_ = client.Disconnect(c)
	})
	return s, wowMongoService{db: db}, url
}

// TestWowMongoInterop: each side sees, refuses, releases, replaces and
// takes over (after expiry) the other's reservations, through the binary.
func TestWowMongoInterop(t *testing.T) {
	t.Parallel()
	s, wow, url := wowMongo(t)
	c := s.client(t, 2)

	t.Run("each sees and refuses the other's", func(t *testing.T) {
		ns := uniqueNS(t)
		ok, err := wow.prepare(t, ns, "alice", `{"userId":"42","n":1}`, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, `{"userId":"42","n":1}`, "PK.GET", ns, "alice")
		check(t, c, []any{`{"userId":"42","n":1}`, int64(-1)}, "PK.GETVALUE", ns, "alice")
		check(t, c, int64(0), "PK.PREPARE", ns, "alice", `{"userId":"7"}`)

		ttlAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		check(t, c, int64(1), "PK.PREPARE", ns, "bob", `{"userId":"7"}`, "PXAT", fmt.Sprint(ttlAt.UnixMilli()))
		ok, err = wow.prepare(t, ns, "bob", `{"userId":"8"}`, wowForeverDate)
		require.NoError(t, err)
		require.False(t, ok, "Wow took the sidecar's reservation")
		doc, found := wow.getValue(t, ns, "bob")
		require.True(t, found)
		require.Equal(t, bson.D{{Key: "_id", Value: "bob"}, {Key: "value", Value: bson.D{{Key: "userId", Value: "7"}}}, {Key: "ttlAt", Value: bson.NewDateTimeFromTime(ttlAt)}}, doc)
		// The sidecar's forever is Wow's.
		check(t, c, int64(1), "PK.PREPARE", ns, "carol", `"c"`)
		doc, _ = wow.getValue(t, ns, "carol")
		require.Equal(t, bson.D{{Key: "_id", Value: "carol"}, {Key: "value", Value: "c"}, {Key: "ttlAt", Value: bson.DateTime(wowForeverMs)}}, doc)
	})

	t.Run("each releases the other's", func(t *testing.T) {
		ns := uniqueNS(t)
		ok, err := wow.prepare(t, ns, "w", `"wv"`, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, int64(1), "PK.PREPARE", ns, "s", `"sv"`, "EX", "3600")
		check(t, c, int64(0), "PK.ROLLBACK", ns, "w", "IFEQ", `"other"`)
		check(t, c, int64(1), "PK.ROLLBACK", ns, "w", "IFEQ", `"wv"`)
		_, found := wow.getValue(t, ns, "w")
		require.False(t, found)
		require.False(t, wow.rollbackValue(t, ns, "s", `"other"`))
		require.True(t, wow.rollbackValue(t, ns, "s", `"sv"`))
		check(t, c, nilReply, "PK.GETVALUE", ns, "s")
		// Wow's rollback() of a live sidecar record.
		check(t, c, int64(1), "PK.PREPARE", ns, "s2", `1`)
		require.True(t, wow.rollback(t, ns, "s2"))
		check(t, c, nilReply, "PK.GET", ns, "s2")
	})

	t.Run("each replaces the other's", func(t *testing.T) {
		ns := uniqueNS(t)
		check(t, c, int64(1), "PK.PREPARE", ns, "k", `{"v":1}`)
		old, wrong := `{"v":1}`, `{"v":9}`
		require.False(t, wow.reprepare(t, ns, "k", `{"v":2}`, wowForeverDate, &wrong))
		require.True(t, wow.reprepare(t, ns, "k", `{"v":2}`, wowForeverDate, &old))
		check(t, c, `{"v":2}`, "PK.GET", ns, "k")
		check(t, c, int64(0), "PK.REPREPARE", ns, "k", `{"v":3}`, "IFEQ", `{"v":1}`)
		check(t, c, int64(1), "PK.REPREPARE", ns, "k", `{"v":3}`, "IFEQ", `{"v":2}`, "EX", "3600")
		doc, _ := wow.getValue(t, ns, "k")
		require.Equal(t, bson.D{{Key: "v", Value: int32(3)}}, doc[1].Value)
		check(t, c, int64(1), "PK.REPREPARE", ns, "k", `{"v":4}`, "KEEPTTL")
		doc2, _ := wow.getValue(t, ns, "k")
		require.Equal(t, doc[2], doc2[2], "KEEPTTL keeps Wow's ttlAt")
		require.Equal(t, bson.D{{Key: "v", Value: int32(4)}}, doc2[1].Value)
	})

	t.Run("each takes over the other's after expiry", func(t *testing.T) {
		ns := uniqueNS(t)
		ok, err := wow.prepare(t, ns, "w", `"wow"`, time.Now().Add(300*time.Millisecond))
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, int64(0), "PK.PREPARE", ns, "w", `"sidecar"`)
		require.Eventually(t, func() bool { return c.Do(ctx(), "PK.GET", ns, "w").Err() == redis.Nil }, 10*time.Second, 20*time.Millisecond)
		check(t, c, int64(1), "PK.PREPARE", ns, "w", `"sidecar"`)
		doc, _ := wow.getValue(t, ns, "w")
		require.Equal(t, "sidecar", doc[1].Value)

		check(t, c, int64(1), "PK.PREPARE", ns, "s", `"sidecar"`, "PX", "300")
		ok, err = wow.prepare(t, ns, "s", `"wow"`, wowForeverDate)
		require.NoError(t, err)
		require.False(t, ok)
		require.Eventually(t, func() bool { return c.Do(ctx(), "PK.GET", ns, "s").Err() == redis.Nil }, 10*time.Second, 20*time.Millisecond)
		require.Eventually(t, func() bool {
			ok, err := wow.prepare(t, ns, "s", `"wow"`, wowForeverDate)
			require.NoError(t, err)
			return ok
		}, 10*time.Second, 20*time.Millisecond, "Wow takes over the expired record")
		check(t, c, `"wow"`, "PK.GET", ns, "s")
	})

	t.Run("key change and MPREPARE over Wow's records", func(t *testing.T) {
		ns := uniqueNS(t)
		ok, err := wow.prepare(t, ns, "old", `{"user":"ann"}`, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, errReply("MISMATCH old key has no record with that value"), "PK.REPREPARE", ns, "new", `{"user":"ann"}`, "FROM", "old", "IFEQ", `{"user":"bob"}`)
		_, found := wow.getValue(t, ns, "new")
		require.False(t, found, "new key left reserved")
		check(t, c, int64(1), "PK.REPREPARE", ns, "new", `{"user":"ann","v":2}`, "FROM", "old", "IFEQ", `{"user":"ann"}`)
		_, found = wow.getValue(t, ns, "old")
		require.False(t, found)
		doc, found := wow.getValue(t, ns, "new")
		require.True(t, found)
		require.Equal(t, bson.D{{Key: "user", Value: "ann"}, {Key: "v", Value: int32(2)}}, doc[1].Value)
		// Wow's own key change (prepare new, rollback old with its value)
		// over the sidecar's record.
		ok, err = wow.prepare(t, ns, "newer", `"x"`, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, wow.rollbackValue(t, ns, "new", `{"user":"ann","v":2}`))
		check(t, c, nilReply, "PK.GET", ns, "new")

		ok, err = wow.prepare(t, ns, "b", `"wow"`, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, int64(0), "PK.MPREPARE", "2", ns, "a", `"s"`, ns, "b", `"s"`)
		_, found = wow.getValue(t, ns, "a")
		require.False(t, found, "MPREPARE left a key reserved")
		require.True(t, wow.rollbackValue(t, ns, "b", `"wow"`))
		check(t, c, int64(1), "PK.MPREPARE", "2", ns, "a", `"s"`, ns, "b", `"s"`, "EX", "60")
		ok, err = wow.prepare(t, ns, "a", `"wow"`, wowForeverDate)
		require.NoError(t, err)
		require.False(t, ok)
	})

	t.Run("SCAN lists Wow's records", func(t *testing.T) {
		ns := uniqueNS(t)
		ttlAt := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		want := map[string][]any{}
		for i := range 7 {
			key, value := fmt.Sprintf("key-%d-é", i), fmt.Sprintf(`{"i":%d,"s":"x"}`, i)
			at, wire := wowForeverDate, int64(-1)
			if i%2 == 1 {
				at, wire = ttlAt, ttlAt.UnixMilli()
			}
			ok, err := wow.prepare(t, ns, key, value, at)
			require.NoError(t, err)
			require.True(t, ok)
			want[key] = []any{key, value, wire}
		}
		got := map[string][]any{}
		cursor := "0"
		for range 20 {
			r, err := c.Do(ctx(), "PK.SCAN", ns, cursor, "COUNT", "3").Slice()
			require.NoError(t, err)
			for _, rec := range r[1].([]any) {
				fields := rec.([]any)
				got[fields[0].(string)] = fields
			}
			if cursor = r[0].(string); cursor == "0" {
				break
			}
		}
		require.Equal(t, "0", cursor)
		require.Equal(t, want, got)
	})

	t.Run("JSON field order round trip", func(t *testing.T) {
		ns := uniqueNS(t)
		wowJSON := `{"zeta":1,"alpha":{"y":2.5,"x":[1,"s",true,null,{"b":1,"a":2}]},"big":9007199254740993,"neg":-1.0E-5}`
		if isFerretDB(t, url) { // v1 closes the connection on a Decimal128
			wowJSON = `{"zeta":1,"alpha":{"y":25,"x":[1,"s",true,null,{"b":1,"a":2}]},"big":9007199254740993,"neg":-1}`
		}
		ok, err := wow.prepare(t, ns, "w", wowJSON, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		check(t, c, wowJSON, "PK.GET", ns, "w")
		check(t, c, int64(1), "PK.ROLLBACK", ns, "w", "IFEQ", wowJSON)

		check(t, c, int64(1), "PK.PREPARE", ns, "s", `{"z":"é\n","m":[{"q":1,"p":2}]}`)
		doc, _ := wow.getValue(t, ns, "s")
		require.Equal(t, bson.D{{Key: "z", Value: "é\n"}, {Key: "m", Value: bson.A{bson.D{{Key: "q", Value: int32(1)}, {Key: "p", Value: int32(2)}}}}}, doc[1].Value)
		require.True(t, wow.rollbackValue(t, ns, "s", `{"z":"é\n","m":[{"q":1,"p":2}]}`))
	})

	t.Run("Wow's number types both ways", func(t *testing.T) {
		if isFerretDB(t, url) {
			t.Skip("FerretDB v1 closes the connection on a Decimal128; scripts/mongo-engine.sh starts FerretDB v2, which stores it")
		}
		ns := uniqueNS(t)
		// A data class with String, Int, Long (small and large) and Double
		// fields, nested, as Jackson writes it; "qty" and "id" are Longs.
		const text = `{"name":"Zoë ✓ 名前 😀","qty":3,"id":7,"price":9.99,"big":1.0E7,"tiny":1.0E-5,` +
			`"line":{"sku":"é-1","n":2147483648,"parts":[0.1,2.5,-1.25,0.0]}}`
		value := wowValue(t, text, "qty", "id")
		require.Equal(t, int64(3), value.(bson.D)[1].Value, "a Long field is an Int64 even when small")

		// Wow writes, the sidecar reads Jackson's JSON and matches it.
		ok, err := wow.prepareValue(ns, "w", value, wowForeverDate)
		require.NoError(t, err)
		require.True(t, ok)
		doc, _ := wow.getValue(t, ns, "w")
		require.Equal(t, value, doc[1].Value)
		check(t, c, text, "PK.GET", ns, "w")
		check(t, c, int64(0), "PK.ROLLBACK", ns, "w", "IFEQ", strings.Replace(text, "9.99", "9.990000000000001", 1))
		// On MongoDB numbers compare by value: other forms of the same
		// numbers match (not on Redis, where IFEQ compares bytes).
		variant := strings.NewReplacer("9.99", "9.990", "1.0E7", "10000000", "1.0E-5", "0.00001").Replace(text)
		check(t, c, int64(1), "PK.REPREPARE", ns, "w", text, "IFEQ", variant)
		check(t, c, text, "PK.GET", ns, "w")
		check(t, c, int64(1), "PK.ROLLBACK", ns, "w", "IFEQ", text)

		// The sidecar writes; Wow's reprepare(old) and rollback(value),
		// with the BSON Wow builds (Int64 for the Longs, Decimal128),
		// match it: MongoDB compares numbers by value, across types.
		check(t, c, int64(1), "PK.PREPARE", ns, "s", text)
		doc, _ = wow.getValue(t, ns, "s")
		require.Equal(t, wowValue(t, text), doc[1].Value, "the sidecar stores Int32 where it fits, a Decimal128 of the JSON's digits")
		other := wowValue(t, strings.Replace(text, "9.99", "9.98", 1), "qty", "id")
		require.False(t, wow.rollbackBSON(t, ns, "s", other))
		require.True(t, wow.reprepareBSON(t, ns, "s", other, wowForeverDate, value))
		check(t, c, strings.Replace(text, "9.99", "9.98", 1), "PK.GET", ns, "s")
		require.True(t, wow.reprepareBSON(t, ns, "s", value, wowForeverDate, other))
		require.True(t, wow.rollbackBSON(t, ns, "s", value))
		check(t, c, nilReply, "PK.GET", ns, "s")

		// -0.0: the sidecar keeps its sign, Wow's driver drops it; MongoDB
		// compares the two zeros as equal.
		check(t, c, int64(1), "PK.PREPARE", ns, "z", `{"d":-0.0}`)
		check(t, c, `{"d":-0.0}`, "PK.GET", ns, "z")
		require.True(t, wow.rollbackValue(t, ns, "z", `{"d":-0.0}`))
	})

	t.Run("unusual records", func(t *testing.T) {
		ns := uniqueNS(t)
		_, err := wow.coll(ns).InsertMany(ctx(), []any{
			bson.D{{Key: "_id", Value: "no-ttl"}, {Key: "value", Value: "a"}},
			bson.D{{Key: "_id", Value: "oid"}, {Key: "value", Value: bson.NewObjectID()}, {Key: "ttlAt", Value: bson.NewDateTimeFromTime(wowForeverDate)}},
		})
		require.NoError(t, err)
		check(t, c, []any{`"a"`, int64(-1)}, "PK.GETVALUE", ns, "no-ttl")
		check(t, c, int64(0), "PK.PREPARE", ns, "no-ttl", `"b"`)
		check(t, c, errReply("ERR stored value is not JSON (layout=wow): a BSON objectID at value"), "PK.GET", ns, "oid")
		check(t, c, int64(0), "PK.PREPARE", ns, "oid", `"b"`)
		check(t, c, errReply("ERR stored value is not JSON (layout=wow): a BSON objectID at value; not replaced"), "PK.REPREPARE", ns, "oid", `"b"`)
		doc, _ := wow.getValue(t, ns, "oid")
		require.IsType(t, bson.ObjectID{}, doc[1].Value, "the record is unchanged")
	})

	t.Run("MULTI/EXEC", func(t *testing.T) {
		ns := uniqueNS(t)
		_, err := c.TxPipelined(ctx(), func(p redis.Pipeliner) error {
			p.Do(ctx(), "PK.PREPARE", ns, "a", `"v"`)
			p.Do(ctx(), "PK.GET", ns, "a")
			return nil
		})
		require.ErrorContains(t, err, "EXECABORT Transaction discarded: the mongodb backend cannot run PK commands in a transaction")
		_, found := wow.getValue(t, ns, "a")
		require.False(t, found)
	})

	t.Run("bad input", func(t *testing.T) {
		ns := uniqueNS(t)
		check(t, c, errReply("ERR value is not valid JSON (layout=wow)"), "PK.PREPARE", ns, "k", "plain text")
		check(t, c, errReply("ERR key is not valid UTF-8 (layout=wow)"), "PK.PREPARE", ns, "k\xff", `"v"`)
		check(t, c, errReply(`ERR value cannot be stored in MongoDB (layout=wow): field name "$oid" starts with '$'`), "PK.PREPARE", ns, "k", `{"$oid":"5f0000000000000000000000"}`)
		n, err := wow.coll(ns).CountDocuments(ctx(), bson.D{})
		require.NoError(t, err)
		require.Zero(t, n)
		info, err := c.Info(ctx(), "errorstats").Result()
		require.NoError(t, err)
		require.NotContains(t, info, "errorstat_UNAVAILABLE")
	})

	// After all of that (and a scan, which needs the cursors' secret), the
	// database holds no collection but prepare_*.
	names, err := wow.db.ListCollectionNames(ctx(), bson.D{})
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		require.True(t, strings.HasPrefix(name, "prepare_"), "collection %s", name)
	}
	require.Contains(t, names, "prepare_prepkey:meta")
}

// TestWowMongoRace: the sidecar's clients and a Wow service race for the
// same keys over real concurrent connections: exactly one wins each key,
// and the record is the winner's. Absent keys everywhere; keys held by an
// expired record where updates are atomic (not FerretDB, see docs/mongo.md).
func TestWowMongoRace(t *testing.T) {
	t.Parallel()
	s, wow, url := wowMongo(t)
	t.Run("absent keys", func(t *testing.T) { raceWow(t, s, wow, uniqueNS(t), false) })
	t.Run("expired keys", func(t *testing.T) {
		if isFerretDB(t, url) {
			t.Skip("FerretDB v1 updates an existing document without re-checking the filter, so races on an existing record have several winners there; set MONGO_URI to a real MongoDB to run this")
		}
		raceWow(t, s, wow, uniqueNS(t), true)
	})
}

func raceWow(t *testing.T, s *sidecar, wow wowMongoService, ns string, expired bool) {
	const keys = 40
	if expired {
		until := time.Now().Add(200 * time.Millisecond)
		for i := range keys {
			ok, err := wow.prepare(t, ns, fmt.Sprintf("race-%d", i), `{"by":"before"}`, until)
			require.NoError(t, err)
			require.True(t, ok)
		}
		c := s.client(t, 2)
		require.Eventually(t, func() bool { return c.Do(ctx(), "PK.GET", ns, fmt.Sprintf("race-%d", keys-1)).Err() == redis.Nil }, 10*time.Second, 20*time.Millisecond)
		for time.Now().Before(until.Add(time.Millisecond)) { // Wow's clock too
			time.Sleep(time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	sideWon, wowWon := make([]bool, keys), make([]bool, keys)
	errs := make(chan error, 2*keys)
	startGun := make(chan struct{})
	for i := range keys {
		key := fmt.Sprintf("race-%d", i)
		c := s.client(t, 2)
		wg.Go(func() {
			<-startGun
			n, err := c.Do(ctx(), "PK.PREPARE", ns, key, `{"by":"sidecar"}`).Int64()
			if err != nil {
				errs <- err
				return
			}
			sideWon[i] = n == 1
		})
		wg.Go(func() {
			<-startGun
			ok, err := wow.prepare(t, ns, key, `{"by":"wow"}`, wowForeverDate)
			if err != nil {
				errs <- err
				return
			}
			wowWon[i] = ok
		})
	}
	close(startGun)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c := s.client(t, 2)
	var side, wows int
	for i := range keys {
		key := fmt.Sprintf("race-%d", i)
		require.NotEqual(t, sideWon[i], wowWon[i], "key %s: sidecar won %t, Wow won %t", key, sideWon[i], wowWon[i])
		by := "wow"
		if sideWon[i] {
			by, side = "sidecar", side+1
		} else {
			wows++
		}
		check(t, c, `{"by":"`+by+`"}`, "PK.GET", ns, key)
	}
	t.Logf("sidecar won %d keys, Wow %d", side, wows)
}

// TestWowMongoBadLayout: an unknown layout stops the sidecar at start with
// one line.
func TestWowMongoBadLayout(t *testing.T) {
	cmd := exec.Command(sidecarBin, "--backend", "mongodb://127.0.0.1:1/app?w=majority&layout=wows")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 2, exit.ExitCode())
	require.Equal(t, "sidecar: --backend: mongo: invalid URL: unknown layout \"wows\" (want wow or prepkey)\n", stderr.String())
	require.Empty(t, stdout.String())
}

// TestWowMongoLinearizable: sidecar clients and Wow service clients race
// PK commands and Wow's operations over a few keys; porcupine decides
// whether one order of atomic commands explains the mixed history (the
// model of lin_model_test.go: Wow's prepare is PREPARE, rollback(value)
// ROLLBACK IFEQ, rollback() ROLLBACK, reprepare REPREPARE [IFEQ], getValue
// GETVALUE; nothing expires while it runs). On FerretDB v1, whose updates
// and deletes of an existing record are not atomic (deletesMissUpdates),
// each key's existing record is changed by one client only (its owner,
// alternately a sidecar and a Wow client). On FerretDB v2 the sidecar's
// commands are atomic, but Wow's own deleteOne can miss a record that an
// update races (DocumentDB: backend/mongo's
// TestEngineDeleteOneRacingUpdates), so there Wow's rollbacks go only to
// a key that no one else changes: an odd key is changed (rolled back,
// reprepared) by the Wow client of its number only; the even keys by the
// sidecar clients, and reprepared by the Wow clients too. Everyone
// prepares and reads every key.
func TestWowMongoLinearizable(t *testing.T) {
	if testing.Short() {
		t.Skip("records and checks concurrent histories (make test runs them)")
	}
	t.Parallel()
	s, wow, url := wowMongo(t)
	seed := linSeed(t)
	ferret := deletesMissUpdates(t, url)
	docdb := !ferret && ferretDBVersion(t, url) != "" // FerretDB v2
	ns := uniqueNS(t)
	keys := []string{"k0", "k1", "k2", "k3"}
	const clients, opsPerClient = 6, 50
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		values  atomic.Int64
		wg      sync.WaitGroup
	)
	t0 := time.Now()
	for cl := range clients {
		sidecarSide := cl%2 == 0
		rc := s.client(t, 2)
		rng := rand.New(rand.NewPCG(seed, uint64(cl)))
		wg.Go(func() {
			known := map[int]string{}
			for range opsPerClient {
				key := rng.IntN(len(keys))
				r := rng.IntN(100)
				switch {
				case r < 60: // PREPARE or GETVALUE: any client, any key
				case ferret:
					if key%clients != cl {
						if cl >= len(keys) {
							r = rng.IntN(60)
						} else {
							key = cl
						}
					}
				case docdb:
					if key%2 == 1 && key != cl {
						key-- // an odd key is changed by its Wow client only
					}
					if !sidecarSide && r < 80 && key != cl {
						// Wow's rollback, on a key others change: to its own
						// key, or a reprepare instead
						if cl < len(keys) {
							key = cl
						} else {
							r = 80 + rng.IntN(20)
						}
					}
				}
				value := fmt.Sprintf(`"v%d"`, values.Add(1))
				cond := func() string {
					if v, ok := known[key]; ok && rng.IntN(4) > 0 {
						return v
					}
					return fmt.Sprintf(`"v%d"`, 1+rng.Int64N(values.Load()))
				}
				var ttl int64 // forever
				if rng.IntN(2) == 0 {
					ttl = farTTL(rng)
				}
				var in linIn
				switch {
				case r < 35:
					in = linIn{Kind: linPrepare, Key: key, Value: value, TTL: ttl}
				case r < 60:
					in = linIn{Kind: linGetValue, Key: key}
				case r < 80:
					in = linIn{Kind: linRollback, Key: key}
					if rng.IntN(2) == 0 {
						in.Cond, in.Cond2 = cond(), true
					}
				default:
					in = linIn{Kind: linReprepare, Key: key, Value: value, TTL: ttl}
					if rng.IntN(2) == 0 {
						in.Cond, in.Cond2 = cond(), true
					}
				}
				call := time.Since(t0).Nanoseconds()
				var out linOut
				if sidecarSide {
					out = sidecarLinOp(rc, ns, keys, in)
				} else {
					out = wowLinOp(t, wow, ns, keys, in)
				}
				ret := time.Since(t0).Nanoseconds()
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: cl, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				learn(known, in, out)
				require.False(t, out.Unknown, "%s: %s", describeLin(keys, in, out), out.Err)
			}
		})
	}
	wg.Wait()
	// Not vacuous: each side reserved, changed and released something,
	// and saw the other's records.
	wrote := map[bool]map[linKind]int{true: {}, false: {}}
	for _, op := range history {
		in, out := op.Input.(linIn), op.Output.(linOut)
		if out.Int == 1 || (in.Kind == linGetValue && !out.Nil) {
			wrote[op.ClientId%2 == 0][in.Kind]++
		}
	}
	for side, name := range map[bool]string{true: "sidecar", false: "Wow"} {
		for _, k := range []linKind{linPrepare, linGetValue, linRollback, linReprepare} {
			require.Positive(t, wrote[side][k], "%s clients: no successful command of kind %d", name, k)
		}
	}
	res := porcupine.CheckOperationsTimeout(linModel(keys, true), history, time.Minute)
	t.Logf("%d operations from %d sidecar and %d Wow clients over %d keys (FerretDB v1: %t, v2: %t): %s", len(history), clients/2, clients/2, len(keys), ferret, docdb, res)
	require.Equal(t, porcupine.Ok, res)
}

// sidecarLinOp runs in through the sidecar.
func sidecarLinOp(c *redis.Client, ns string, keys []string, in linIn) linOut {
	key := keys[in.Key]
	ttlArgs := func(args []any) []any {
		if in.TTL != 0 {
			args = append(args, "PXAT", in.TTL)
		}
		return args
	}
	var args []any
	switch in.Kind {
	case linPrepare:
		args = ttlArgs([]any{"PK.PREPARE", ns, key, in.Value})
	case linGetValue:
		args = []any{"PK.GETVALUE", ns, key}
	case linRollback:
		args = []any{"PK.ROLLBACK", ns, key}
		if in.Cond2 {
			args = append(args, "IFEQ", in.Cond)
		}
	case linReprepare:
		args = []any{"PK.REPREPARE", ns, key, in.Value}
		if in.Cond2 {
			args = append(args, "IFEQ", in.Cond)
		}
		args = ttlArgs(args)
	}
	got, err := c.Do(ctx(), args...).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return linOut{Nil: true}
	case err != nil:
		return linOut{Unknown: true, Err: err.Error()}
	}
	if rec, ok := got.([]any); ok {
		return linOut{Value: rec[0].(string), TTL: rec[1].(int64)}
	}
	return linOut{Int: got.(int64)}
}

// wowLinOp runs in as the Wow service's operation.
func wowLinOp(t *testing.T, wow wowMongoService, ns string, keys []string, in linIn) linOut {
	key := keys[in.Key]
	ttlAt := wowForeverDate
	if in.TTL != 0 {
		ttlAt = time.UnixMilli(in.TTL)
	}
	b2i := func(b bool) linOut {
		if b {
			return linOut{Int: 1}
		}
		return linOut{}
	}
	switch in.Kind {
	case linPrepare:
		ok, err := wow.prepare(t, ns, key, in.Value, ttlAt)
		if err != nil {
			return linOut{Unknown: true, Err: err.Error()}
		}
		return b2i(ok)
	case linGetValue:
		doc, found := wow.getValue(t, ns, key)
		if !found {
			return linOut{Nil: true}
		}
		v, ok := doc[1].Value.(string)
		require.True(t, ok, "value of %s: %v", key, doc)
		q, err := json.Marshal(v)
		require.NoError(t, err)
		ms := int64(doc[2].Value.(bson.DateTime))
		if ms >= wowForeverMs {
			ms = -1
		}
		return linOut{Value: string(q), TTL: ms}
	case linRollback:
		if in.Cond2 {
			return b2i(wow.rollbackValue(t, ns, key, in.Cond))
		}
		return b2i(wow.rollback(t, ns, key))
	case linReprepare:
		var old *string
		if in.Cond2 {
			old = &in.Cond
		}
		return b2i(wow.reprepare(t, ns, key, in.Value, ttlAt, old))
	}
	panic("unexpected op")
}
