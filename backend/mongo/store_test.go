package mongo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// skipRacesOnFerretDB is why the races on existing records are skipped on
// FerretDB.
const skipRacesOnFerretDB = "FerretDB v1 updates an existing document by reading, " +
	"filtering and writing it without re-checking the filter, so races on an " +
	"existing record have several winners there; set MONGO_URI to a real MongoDB to run them"

func TestConformance(t *testing.T) {
	raw := serverURL(t)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newFakeClock()
		opts.Now = clock.Now
		// FerretDB on SQLite serializes writes, and the test machines are
		// small and shared: the races there need more than the default.
		s := openTest(t, raw, Config{Options: opts, Timeout: 15 * time.Second, SweepInterval: -1})
		h := storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance,
			Isolates: func(string, [][]byte) bool { return false }, Fault: func(f backend.Fault) { s.fault = f }}
		if ferretDB(t, s) {
			h.SkipRaces = skipRacesOnFerretDB
		}
		return h
	})
}

// TestConformanceWow runs the suite in layout=wow. Its values are any
// bytes and layout=wow takes JSON, so each is stored as a JSON text
// standing for it (storetest.JSONValues); its keys that are not UTF-8 are
// left out, since a Wow key is a string.
func TestConformanceWow(t *testing.T) {
	raw := withLayout(t, serverURL(t), "wow")
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		clock := newFakeClock()
		opts.Now = clock.Now
		s := openTest(t, raw, Config{Options: opts, Timeout: 15 * time.Second, SweepInterval: -1})
		require.Equal(t, LayoutWow, s.layout)
		h := storetest.Harness{Store: s, Now: clock.Now, Advance: clock.Advance,
			Isolates: func(string, [][]byte) bool { return false }, Fault: func(f backend.Fault) { s.fault = f },
			Values: &storetest.JSONValues, TextKeys: "a key in layout=wow is a string, so it must be UTF-8"}
		if ferretDB(t, s) {
			h.SkipRaces = skipRacesOnFerretDB
		}
		return h
	})
}

// withLayout adds the layout option to a MongoDB URL.
func withLayout(t testing.TB, raw, layout string) string {
	t.Helper()
	p := splitURL(t, raw)
	if p.query != "" {
		p.query += "&"
	}
	p.query += "layout=" + layout
	return p.String()
}

// rawRecord reads the document of key as stored.
func rawRecord(t *testing.T, s *Store, ns, key string) bson.Raw {
	t.Helper()
	raw, err := s.collection(ns).FindOne(t.Context(), bson.D{{Key: "_id", Value: binary([]byte(key))}}).Raw()
	require.NoError(t, err)
	return raw
}

func recordMap(t *testing.T, s *Store, ns, key string) bson.M {
	t.Helper()
	var m bson.M
	require.NoError(t, bson.Unmarshal(rawRecord(t, s, ns, key), &m))
	return m
}

func countRecords(t *testing.T, s *Store, ns string) int64 {
	t.Helper()
	n, err := s.collection(ns).CountDocuments(t.Context(), bson.D{})
	require.NoError(t, err)
	return n
}

// TestDocumentShape pins the document shape that docs/mongo.md describes,
// since operators query it directly.
func TestDocumentShape(t *testing.T) {
	clock := newFakeClock()
	const retention = time.Hour
	s := openTest(t, serverURL(t), Config{Options: backend.Options{Retention: retention, Now: clock.Now}, SweepInterval: -1})
	ctx := t.Context()
	now := clock.Now().UnixMilli()

	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "users", []byte("k\xff"), []byte("v\x00"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 5000})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "users", []byte("f"), []byte{}, backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)

	names, err := s.db.ListCollectionNames(ctx, bson.D{})
	require.NoError(t, err)
	require.Equal(t, []string{"prepkey_users"}, names)

	// Compared as maps: MongoDB orders the fields of an upsert by name.
	require.Equal(t, bson.M{
		"_id":      bson.Binary{Data: []byte("k\xff")},
		"v":        bson.Binary{Data: []byte("v\x00")},
		"ttlAt":    now + 5000,
		"expireAt": bson.DateTime(now + 5000 + retention.Milliseconds()),
	}, recordMap(t, s, "users", "k\xff"))
	require.Equal(t, bson.M{
		"_id":   bson.Binary{Data: []byte("f")},
		"v":     bson.Binary{Data: []byte{}},
		"ttlAt": backend.Forever,
	}, recordMap(t, s, "users", "f"))

	// A reprepare to forever drops expireAt, so cleanup never touches it.
	ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "users", []byte("k\xff"), []byte("w"), backend.Cond{}, backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = rawRecord(t, s, "users", "k\xff").LookupErr("expireAt")
	require.Error(t, err, "expireAt of a forever record")
}

// TestSweep: the sweeper deletes exactly the records past their retention,
// and creates the TTL index where the server has them.
func TestSweep(t *testing.T) {
	clock := newFakeClock()
	const retention = time.Minute
	s := openTest(t, serverURL(t), Config{Options: backend.Options{Retention: retention, Now: clock.Now}, SweepInterval: -1})
	ctx := t.Context()
	after := func(d time.Duration) backend.Expiry {
		return backend.Expiry{Kind: backend.ExpireAfter, Millis: d.Milliseconds()}
	}
	for _, r := range []struct {
		ns, key string
		exp     backend.Expiry
	}{
		{"a", "gone", after(time.Second)},
		{"a", "retained", after(time.Minute)},
		{"a", "live", after(time.Hour)},
		{"a", "forever", backend.Expiry{}},
		{"b.c-d", "gone", after(time.Second)},
	} {
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, r.ns, []byte(r.key), []byte("v"), r.exp)
		require.NoError(t, err)
		require.True(t, ok, "prepare %s %s", r.ns, r.key)
	}
	// A collection that is not a namespace is never swept.
	_, err := s.db.Collection("app").InsertOne(ctx, bson.D{{Key: "expireAt", Value: bson.DateTime(0)}})
	require.NoError(t, err)

	clock.Advance(time.Second + retention)
	require.NoError(t, s.Sweep(ctx))

	for _, key := range []string{"retained", "live", "forever"} {
		rawRecord(t, s, "a", key)
	}
	require.Equal(t, int64(3), countRecords(t, s, "a"))
	require.Equal(t, int64(0), countRecords(t, s, "b.c-d"))
	n, err := s.db.Collection("app").CountDocuments(ctx, bson.D{})
	require.NoError(t, err)
	require.Equal(t, int64(1), n)

	if ferretDB(t, s) {
		require.True(t, s.ttlMissing, "FerretDB answers a TTL index with NotImplemented")
		return
	}
	specs, err := s.collection("a").Indexes().ListSpecifications(ctx)
	require.NoError(t, err)
	var ttl *mongo.IndexSpecification
	for _, spec := range specs {
		if spec.Name == ttlIndexName {
			ttl = &spec
		}
	}
	require.NotNil(t, ttl, "TTL index on %v", specs)
	require.NotNil(t, ttl.ExpireAfterSeconds)
	require.Equal(t, int32(0), *ttl.ExpireAfterSeconds)
}

// TestSweeperRuns: the background sweeper runs at start without being asked.
func TestSweeperRuns(t *testing.T) {
	clock := newFakeClock()
	raw := serverURL(t)
	s := openTest(t, raw, Config{Options: backend.Options{Now: clock.Now}, SweepInterval: -1})
	ok, err := (backend.Calls{Runner: s}).Prepare(t.Context(), "ns", []byte("k"), []byte("v"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1})
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(time.Millisecond)

	// A second store on the same database, with its sweeper on, as a
	// second sidecar would be.
	u, err := WithDatabase(raw, s.db.Name())
	require.NoError(t, err)
	s2, err := Open(t.Context(), u, Config{Options: backend.Options{Now: clock.Now}, SweepInterval: time.Hour})
	require.NoError(t, err)
	defer func() { require.NoError(t, s2.Close()) }()
	require.Eventually(t, func() bool { return countRecords(t, s, "ns") == 0 }, 10*time.Second, 20*time.Millisecond)
}

// TestMoveCompensates: when the release of oldKey fails after newKey was
// reserved, the reservation is undone before Move answers with an error:
// newKey gets back the expired record it had, or none.
func TestMoveCompensates(t *testing.T) {
	raw := serverURL(t)
	for _, tc := range []struct {
		name    string
		seedNew bool
	}{
		{"new key absent", false},
		{"new key expired but retained", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			s := openTest(t, raw, Config{Options: backend.Options{Retention: time.Hour, Now: clock.Now}, SweepInterval: -1})
			ok, err := (backend.Calls{Runner: s}).Prepare(t.Context(), "ns", []byte("old"), []byte("v"), backend.Expiry{})
			require.NoError(t, err)
			require.True(t, ok)
			var before bson.M
			if tc.seedNew {
				ok, err = (backend.Calls{Runner: s}).Prepare(t.Context(), "ns", []byte("new"), []byte("stale"), backend.Expiry{Kind: backend.ExpireAfter, Millis: 1000})
				require.NoError(t, err)
				require.True(t, ok)
				clock.Advance(time.Second)
				before = recordMap(t, s, "ns", "new")
			}

			// The client goes away between the two steps.
			ctx, cancel := context.WithCancel(t.Context())
			s.fault = func(st backend.Step) error {
				if st == (backend.Step{Name: "release"}) {
					cancel()
				}
				return nil
			}
			res, err := (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("new"), []byte("w"), []byte("old"), []byte("v"), backend.Expiry{})
			require.ErrorIs(t, err, context.Canceled)
			require.Zero(t, res)
			require.Regexp(t, `^mongo: move: release old key: `, err.Error())

			if tc.seedNew {
				require.Equal(t, before, recordMap(t, s, "ns", "new"))
			} else {
				_, ok, err = (backend.Calls{Runner: s}).Get(t.Context(), "ns", []byte("new"))
				require.NoError(t, err)
				require.False(t, ok, "new key left reserved")
			}
			rec, ok, err := (backend.Calls{Runner: s}).Get(t.Context(), "ns", []byte("old"))
			require.NoError(t, err)
			require.True(t, ok, "old key released")
			require.Equal(t, []byte("v"), rec.Value)
		})
	}
}

// TestUndoMoveDeletesOnlyItsRecord: the compensation of a key change never
// deletes a record another client wrote for newKey in the meantime, even
// with the same value and ttlAt.
func TestUndoMoveDeletesOnlyItsRecord(t *testing.T) {
	clock := newFakeClock()
	s := openTest(t, serverURL(t), Config{Options: backend.Options{Now: clock.Now}, SweepInterval: -1})
	ctx, c := t.Context(), s.collection("ns")
	id := bson.NewObjectID()
	now := s.nowMs()
	prev, ok, err := s.reserveForMove(ctx, c, []byte("new"), s.record([]byte("w"), backend.Forever, &id), now)
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, prev)
	// Another client releases it and reserves it again with the same value.
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "ns", []byte("new"), backend.Cond{})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte("new"), []byte("w"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)

	require.NoError(t, s.undoMove(ctx, c, []byte("new"), id, nil))
	_, err = rawRecord(t, s, "ns", "new").LookupErr(fieldMoveID)
	require.Error(t, err, "moveId of a record written by PREPARE")
	require.Equal(t, int64(1), countRecords(t, s, "ns"))

	// Its own record it does delete.
	ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "ns", []byte("new"), backend.Cond{})
	require.NoError(t, err)
	require.True(t, ok)
	prev, ok, err = s.reserveForMove(ctx, c, []byte("new"), s.record([]byte("w"), backend.Forever, &id), now)
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, prev)
	require.NoError(t, s.undoMove(ctx, c, []byte("new"), id, nil))
	require.Equal(t, int64(0), countRecords(t, s, "ns"))
}
