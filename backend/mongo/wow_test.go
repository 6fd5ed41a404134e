package mongo

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/prepkey/prepkey/backend"
)

// openWow opens a layout=wow store on a fresh database, with its log
// written to logs.
func openWow(t *testing.T, retention time.Duration, logs *bytes.Buffer) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	cfg := Config{Options: backend.Options{Retention: retention, Now: clock.Now}, SweepInterval: -1}
	if logs != nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	s := openTest(t, withLayout(t, serverURL(t), "wow"), cfg)
	require.Equal(t, LayoutWow, s.layout)
	return s, clock
}

// wowDoc reads the document of key as stored, fields in stored order.
func wowDoc(t *testing.T, s *Store, ns, key string) bson.D {
	t.Helper()
	var d bson.D
	require.NoError(t, s.db.Collection("prepare_"+ns).FindOne(t.Context(), bson.D{{Key: "_id", Value: key}}).Decode(&d))
	return d
}

// TestWowDocumentShape pins Wow's record: {_id: key, value: the BSON of the
// JSON in its order, ttlAt: Date}, forever as 6666-06-06, and the JSON
// read back in the stored order.
func TestWowDocumentShape(t *testing.T) {
	s, clock := openWow(t, time.Hour, nil)
	ctx := t.Context()
	now := clock.Now().UnixMilli()
	// A fraction is a Decimal128 (1.5 is 15×10⁻¹), as Wow stores it.
	alice := `{"userId":"42","age":7,"tags":["a",1.5],"big":4294967296}`
	tags := bson.A{"a", bson.NewDecimal128(0x303e000000000000, 15)}
	if ferretDB(t, s) {
		t.Log("FerretDB v1 closes the connection on a Decimal128: the fraction is left out here (scripts/mongo-engine.sh starts FerretDB v2, which runs it)")
		alice, tags = `{"userId":"42","age":7,"tags":["a"],"big":4294967296}`, bson.A{"a"}
	}
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "users", []byte("alice"), []byte(alice), backend.Expiry{Kind: backend.ExpireAfter, Millis: 5000})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "users", []byte("bob"), []byte(`"b"`), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)

	require.Equal(t, bson.D{
		{Key: "_id", Value: "alice"},
		{Key: "value", Value: bson.D{{Key: "userId", Value: "42"}, {Key: "age", Value: int32(7)}, {Key: "tags", Value: tags}, {Key: "big", Value: int64(4294967296)}}},
		{Key: "ttlAt", Value: bson.DateTime(now + 5000)},
	}, wowDoc(t, s, "users", "alice"))
	require.Equal(t, bson.D{{Key: "_id", Value: "bob"}, {Key: "value", Value: "b"}, {Key: "ttlAt", Value: bson.DateTime(148204944000000)}}, wowDoc(t, s, "users", "bob"))

	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "users", []byte("alice"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, backend.Record{Value: []byte(alice), TTLAt: now + 5000, Live: true}, rec)
	rec, ok, err = (backend.Calls{Runner: s}).Get(ctx, "users", []byte("bob"))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, backend.Record{Value: []byte(`"b"`), TTLAt: backend.Forever, Live: true}, rec)

	// KEEPTTL sets the value only; another TTL rewrites ttlAt.
	ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "users", []byte("alice"), []byte(`{"b":1,"a":2}`), backend.IfEq([]byte(alice)), backend.Expiry{Kind: backend.KeepTTL})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, bson.D{{Key: "_id", Value: "alice"}, {Key: "value", Value: bson.D{{Key: "b", Value: int32(1)}, {Key: "a", Value: int32(2)}}}, {Key: "ttlAt", Value: bson.DateTime(now + 5000)}},
		wowDoc(t, s, "users", "alice"))
	// Field order is part of the value: MongoDB compares documents in order.
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "users", []byte("alice"), backend.IfEq([]byte(`{"a":2,"b":1}`)))
	require.NoError(t, err)
	require.False(t, ok)
	// Numbers compare by value, as MongoDB compares them (1.0 is a
	// Decimal128, which v1 cannot take).
	one := `{"b":1.0,"a":2}`
	if ferretDB(t, s) {
		one = `{"b":1,"a":2}`
	}
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "users", []byte("alice"), backend.IfEq([]byte(one)))
	require.NoError(t, err)
	require.True(t, ok)

	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	require.NoError(t, err)
	require.Equal(t, []string{"prepare_users"}, names)
}

// TestWowUnusualRecords: records a Wow service (or a hand) may leave that
// do not follow the layout. A record without a Date ttlAt is held forever;
// one whose value has no JSON form is answered with an -ERR by reads,
// listed by SCAN as Extended JSON, and never overwritten while live.
func TestWowUnusualRecords(t *testing.T) {
	s, clock := openWow(t, time.Hour, nil)
	ctx := t.Context()
	c := s.collection("odd")
	now := clock.Now().UnixMilli()
	oid := bson.NewObjectID()
	_, err := c.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "no-ttl"}, {Key: "value", Value: "a"}},
		bson.D{{Key: "_id", Value: "int-ttl"}, {Key: "value", Value: "b"}, {Key: "ttlAt", Value: now - 1000}},
		bson.D{{Key: "_id", Value: "oid"}, {Key: "value", Value: bson.D{{Key: "id", Value: oid}}}, {Key: "ttlAt", Value: bson.DateTime(now + 60000)}},
		bson.D{{Key: "_id", Value: "oid-expired"}, {Key: "value", Value: oid}, {Key: "ttlAt", Value: bson.DateTime(now - 1000)}},
		bson.D{{Key: "_id", Value: "no-value"}, {Key: "ttlAt", Value: bson.DateTime(now + 60000)}},
		bson.D{{Key: "_id", Value: "past-forever"}, {Key: "value", Value: int64(1)}, {Key: "ttlAt", Value: bson.DateTime(253402300800000)}},
		bson.D{{Key: "_id", Value: "epoch"}, {Key: "value", Value: true}, {Key: "ttlAt", Value: bson.DateTime(0)}},
		bson.D{{Key: "_id", Value: int32(7)}, {Key: "value", Value: "not a key"}, {Key: "ttlAt", Value: bson.DateTime(now + 60000)}},
	})
	require.NoError(t, err)

	get := func(key string) (backend.Record, bool, error) {
		return (backend.Calls{Runner: s}).Get(ctx, "odd", []byte(key))
	}
	for _, tc := range []struct {
		key string
		rec backend.Record
	}{
		{"no-ttl", backend.Record{Value: []byte(`"a"`), TTLAt: backend.Forever, Live: true}},
		{"int-ttl", backend.Record{Value: []byte(`"b"`), TTLAt: backend.Forever, Live: true}},
		{"past-forever", backend.Record{Value: []byte(`1`), TTLAt: backend.Forever, Live: true}},
	} {
		rec, ok, err := get(tc.key)
		require.NoError(t, err, tc.key)
		require.True(t, ok, tc.key)
		require.Equal(t, tc.rec, rec, tc.key)
	}
	// A date at or before 1970 is long expired (and here past retention).
	_, ok, err := get("epoch")
	require.NoError(t, err)
	require.False(t, ok)
	epoch, err := bson.Marshal(bson.D{{Key: "ttlAt", Value: bson.DateTime(-5)}})
	require.NoError(t, err)
	require.Equal(t, int64(1), wowTTLAt(epoch), "0 and below mean forever on the wire")

	for key, why := range map[string]string{
		"oid":         "ERR stored value is not JSON (layout=wow): a BSON objectID at value.id",
		"oid-expired": "ERR stored value is not JSON (layout=wow): a BSON objectID at value",
		"no-value":    "ERR stored value is not JSON (layout=wow): the record has no value",
	} {
		_, _, err := get(key)
		var r *backend.Refusal
		require.ErrorAs(t, err, &r, key)
		require.Equal(t, why, r.Text, key)
	}

	// Held forever: neither a prepare nor a key change takes them.
	for _, key := range []string{"no-ttl", "int-ttl", "oid", "no-value"} {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "odd", []byte(key), []byte(`"mine"`), backend.Expiry{})
		require.NoError(t, err)
		require.False(t, ok, key)
		res, err := (backend.Calls{Runner: s}).MPrepare(ctx, []backend.Entry{{NS: "odd", Key: []byte("zz"), Value: []byte(`1`)}, {NS: "odd", Key: []byte(key), Value: []byte(`1`)}}, backend.Expiry{})
		require.NoError(t, err)
		require.False(t, res, key)
	}
	// A live record whose value cannot be read is not overwritten.
	for _, key := range []string{"oid", "no-value"} {
		before := wowDoc(t, s, "odd", key)
		_, err := (backend.Calls{Runner: s}).Reprepare(ctx, "odd", []byte(key), []byte(`"mine"`), backend.Cond{}, backend.Expiry{})
		var r *backend.Refusal
		require.ErrorAs(t, err, &r, key)
		require.True(t, strings.HasSuffix(r.Text, "; not replaced"), r.Text)
		require.Equal(t, before, wowDoc(t, s, "odd", key))
	}
	// An expired one is taken over, whatever its value.
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "odd", []byte("oid-expired"), []byte(`"mine"`), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	// A readable record without a Date ttlAt is live: it can be replaced,
	// and released.
	ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "odd", []byte("no-ttl"), []byte(`"a2"`), backend.IfEq([]byte(`"a"`)), backend.Expiry{Kind: backend.KeepTTL})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, bson.D{{Key: "_id", Value: "no-ttl"}, {Key: "value", Value: "a2"}}, wowDoc(t, s, "odd", "no-ttl"))
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "odd", []byte("int-ttl"), backend.Cond{})
	require.NoError(t, err)
	require.True(t, ok)

	// SCAN lists every string key, odd values as Extended JSON.
	var keys []string
	values := map[string]string{}
	page, err := s.Scan(ctx, "odd", nil, 100)
	require.NoError(t, err)
	require.True(t, page.Done)
	for _, r := range page.Records {
		keys = append(keys, string(r.Key))
		values[string(r.Key)] = string(r.Value)
	}
	require.Equal(t, []string{"no-ttl", "no-value", "oid", "oid-expired", "past-forever"}, keys)
	require.Equal(t, `{"id":{"$oid":"`+oid.Hex()+`"}}`, values["oid"])
	require.Equal(t, `null`, values["no-value"])
	require.Equal(t, `"mine"`, values["oid-expired"])
	require.False(t, slices.Contains(keys, "7"))
}

// TestWowIndexesAndSweep: a collection the store creates gets Wow's two
// indexes where the server has them; one that exists is left as it is; the
// sweeper deletes only records past their retention, and makes no index.
func TestWowIndexesAndSweep(t *testing.T) {
	var logs bytes.Buffer
	s, clock := openWow(t, time.Minute, &logs)
	ctx := t.Context()
	// A collection a Wow service made, without indexes.
	require.NoError(t, s.db.CreateCollection(ctx, "prepare_theirs"))

	for _, ns := range []string{"mine", "theirs"} {
		for _, key := range []string{"gone", "retained", "forever"} {
			exp := backend.Expiry{}
			switch key {
			case "gone":
				exp = backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000}
			case "retained":
				exp = backend.Expiry{Kind: backend.ExpireAfter, Millis: 60_000}
			}
			ok, err := (backend.Calls{Runner: s}).Prepare(ctx, ns, []byte(key), []byte(`"v"`), exp)
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	indexes := func(coll string) []string {
		specs, err := s.db.Collection(coll).Indexes().ListSpecifications(ctx)
		require.NoError(t, err)
		var names []string
		for _, sp := range specs {
			names = append(names, sp.Name)
		}
		slices.Sort(names)
		return names
	}
	require.Equal(t, []string{"_id_"}, indexes("prepare_theirs"))
	want := []string{"_id_"}
	if !s.hashedMissing {
		want = append(want, "_id_hashed")
	}
	if !s.ttlMissing {
		want = append(want, "ttlAt_1")
	}
	slices.Sort(want)
	require.Equal(t, want, indexes("prepare_mine"))
	require.Contains(t, logs.String(), `msg="mongo: layout=wow: created collection" collection=prepare_mine`)
	require.NotContains(t, logs.String(), "collection=prepare_theirs")
	if ferretDB(t, s) {
		require.True(t, s.ttlMissing, "FerretDB has no TTL indexes")
		require.Contains(t, logs.String(), "the server cannot create a TTL index on ttlAt")
	} else {
		// MongoDB, and FerretDB v2 on DocumentDB, build Wow's indexes.
		require.False(t, s.ttlMissing, "TTL index on ttlAt")
		require.False(t, s.hashedMissing, "hashed index on _id")
	}

	// Scan secret: in prepare_prepkey:meta, untouched by the sweep.
	_, err := s.Secret(ctx)
	require.NoError(t, err)
	clock.Advance(time.Second + time.Minute)
	require.NoError(t, s.Sweep(ctx))
	for _, ns := range []string{"mine", "theirs"} {
		var left []string
		cur, err := s.collection(ns).Find(ctx, bson.D{})
		require.NoError(t, err)
		for cur.Next(ctx) {
			left = append(left, cur.Current.Lookup("_id").StringValue())
		}
		slices.Sort(left)
		require.Equal(t, []string{"forever", "retained"}, left, ns)
	}
	require.Equal(t, []string{"_id_"}, indexes("prepare_theirs"), "the sweep makes no index")
	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	require.NoError(t, err)
	slices.Sort(names)
	require.Equal(t, []string{"prepare_mine", "prepare_prepkey:meta", "prepare_theirs"}, names)
	t.Log(logs.String())
}

// TestWowArgCheck: the parse-time checks refuse exactly what the store
// refuses, with the same replies; the default layout has none.
func TestWowArgCheck(t *testing.T) {
	def := openTest(t, serverURL(t), Config{SweepInterval: -1})
	require.Nil(t, def.ArgCheck())
	s, _ := openWow(t, 0, nil)
	check := s.ArgCheck()
	require.NotNil(t, check)
	const notJSON, badKey = "ERR value is not valid JSON (layout=wow)", "ERR key is not valid UTF-8 (layout=wow)"
	for _, tc := range []struct {
		op    backend.Op
		reply string
	}{
		{backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k"), Value: []byte(`{"a":1}`)}, ""},
		{backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k"), Value: []byte(`a`)}, notJSON},
		{backend.Op{Kind: backend.OpPrepare, NS: "ns", Key: []byte("k\xff"), Value: []byte(`1`)}, badKey},
		{backend.Op{Kind: backend.OpGet, NS: "ns", Key: []byte("\xff")}, badKey},
		{backend.Op{Kind: backend.OpRollback, NS: "ns", Key: []byte("k")}, ""},
		{backend.Op{Kind: backend.OpRollback, NS: "ns", Key: []byte("k"), Cond: backend.IfEq([]byte("x"))}, notJSON},
		{backend.Op{Kind: backend.OpReprepare, NS: "ns", Key: []byte("k"), Value: []byte(`1`), Cond: backend.IfEq([]byte(`{"$a":1}`))}, `ERR value cannot be stored in MongoDB (layout=wow): field name "$a" starts with '$'`},
		{backend.Op{Kind: backend.OpMove, NS: "ns", Key: []byte("n"), Value: []byte(`1`), OldKey: []byte("o\xff"), OldValue: []byte(`1`)}, badKey},
		{backend.Op{Kind: backend.OpMove, NS: "ns", Key: []byte("n"), Value: []byte(`1`), OldKey: []byte("o"), OldValue: []byte(`x`)}, notJSON},
		{backend.Op{Kind: backend.OpMPrepare, Entries: []backend.Entry{{NS: "a", Key: []byte("k"), Value: []byte(`1`)}, {NS: "b", Key: []byte("k"), Value: []byte(``)}}}, notJSON},
		{backend.Op{Kind: backend.OpScan, NS: "ns", Key: []byte("\xff")}, ""},
	} {
		err := check(&tc.op)
		if tc.reply == "" {
			require.NoError(t, err, "%+v", tc.op)
			continue
		}
		require.EqualError(t, err, tc.reply, "%+v", tc.op)
	}
}
