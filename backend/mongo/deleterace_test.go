package mongo

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/prepkey/prepkey/backend"
)

// The engine's deletes against concurrent updates of the same document:
// see deleteByID (ops.go) and docs/mongo.md, "deleteOne on DocumentDB".

// engineOf names the store's server: "ferretdb1" (FerretDB v1 on SQLite),
// "ferretdb2" (FerretDB v2 on PostgreSQL with DocumentDB), or "mongodb".
func engineOf(t *testing.T, s *Store) string {
	t.Helper()
	raw, err := s.client.Database("admin").RunCommand(t.Context(), bson.D{{Key: "buildInfo", Value: 1}}).Raw()
	require.NoError(t, err)
	if _, err := raw.LookupErr("ferretdbVersion"); err == nil {
		return "ferretdb1"
	}
	if _, err := raw.LookupErr("ferretdb", "version"); err == nil {
		return "ferretdb2"
	}
	return "mongodb"
}

// skipOnFerretDB1 skips a test of atomicity on FerretDB v1, whose updates
// and deletes of an existing document are read, filter, write.
func skipOnFerretDB1(t *testing.T, s *Store) string {
	t.Helper()
	engine := engineOf(t, s)
	if engine == "ferretdb1" {
		t.Skip(skipRacesOnFerretDB)
	}
	return engine
}

// raceDeletes runs rounds of one delete against updaters updates of the same
// document, released together; neither the document's presence nor the
// delete's filter changes before the delete, so every round must delete it.
// It returns how many rounds deleted nothing (stopping at the first when
// untilMiss), and fails if the document is not as the delete answered.
func raceDeletes(t *testing.T, c *mongo.Collection, rounds int, untilMiss bool, del func(id int) (bool, error)) (misses, ran int) {
	t.Helper()
	ctx := t.Context()
	const updaters = 5
	for id := range rounds {
		_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 0}})
		require.NoError(t, err)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			deleted bool
			errs    = make([]error, updaters+1)
		)
		wg.Go(func() { <-start; deleted, errs[updaters] = del(id) })
		for u := range updaters {
			wg.Go(func() {
				<-start
				_, errs[u] = c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: u + 1}}}})
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err, "round %d", id)
		}
		left, err := c.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		require.NoError(t, err)
		if deleted {
			require.Zero(t, left, "round %d: the delete answered 1 but the document is there", id)
		} else {
			require.EqualValues(t, 1, left, "round %d: the delete answered 0 and the document is gone", id)
			misses++
		}
		ran++
		if misses > 0 && untilMiss {
			break
		}
	}
	return misses, ran
}

// deleteCount adapts a driver delete to raceDeletes.
func deleteCount(del func(filter any) (*mongo.DeleteResult, error)) func(id int) (bool, error) {
	return func(id int) (bool, error) {
		res, err := del(bson.D{{Key: "_id", Value: id}, {Key: "n", Value: bson.D{{Key: "$gte", Value: 0}}}})
		if err != nil {
			return false, err
		}
		return res.DeletedCount == 1, nil
	}
}

// TestEngineDeleteOneRacingUpdates pins the engine's behaviour with the
// driver alone. deleteMany by _id never misses a document that matches
// throughout, on any engine. deleteOne does not miss on MongoDB, and does
// on DocumentDB (FerretDB v2): when that stops, an engine upgrade fixed
// it, and deleteByID's fallback and docs/mongo.md are to be revisited.
func TestEngineDeleteOneRacingUpdates(t *testing.T) {
	s := openTest(t, serverURL(t), Config{SweepInterval: -1})
	engine := skipOnFerretDB1(t, s)
	ctx := t.Context()

	c := s.db.Collection("deletemany")
	misses, ran := raceDeletes(t, c, 100, false, deleteCount(func(f any) (*mongo.DeleteResult, error) { return c.DeleteMany(ctx, f) }))
	require.Zero(t, misses, "deleteMany by _id missed a document that matched throughout, in %d of %d rounds", misses, ran)

	c = s.db.Collection("deleteone")
	misses, ran = raceDeletes(t, c, 500, engine == "ferretdb2", deleteCount(func(f any) (*mongo.DeleteResult, error) { return c.DeleteOne(ctx, f) }))
	if engine == "ferretdb2" {
		require.NotZero(t, misses, "deleteOne on DocumentDB no longer misses a document an update races (%d rounds): "+
			"fixed upstream? Then deleteByID's deleteMany fallback (ops.go) and docs/mongo.md are to be revisited", ran)
		t.Logf("DocumentDB: deleteOne deleted nothing in round %d (a document that matched throughout)", ran)
		return
	}
	require.Zero(t, misses, "deleteOne missed a document that matched throughout, in %d of %d rounds", misses, ran)
}

// TestRollbackRacingReprepare: a ROLLBACK of a live record racing
// REPREPAREs of it, which keep it live, always deletes it, in both
// layouts. On DocumentDB a plain deleteOne fails this within a few rounds
// (TestEngineDeleteOneRacingUpdates).
func TestRollbackRacingReprepare(t *testing.T) {
	for _, layout := range []string{"prepkey", "wow"} {
		t.Run(layout, func(t *testing.T) {
			s := openTest(t, withLayout(t, serverURL(t), layout), Config{SweepInterval: -1})
			skipOnFerretDB1(t, s)
			ctx, calls := t.Context(), backend.Calls{Runner: s}
			value := func(i int) []byte { return fmt.Appendf(nil, `"v%d"`, i) }
			const rounds, updaters = 50, 5
			for r := range rounds {
				key := fmt.Appendf(nil, "k%d", r)
				ok, err := calls.Prepare(ctx, "ns", key, value(0), backend.Expiry{})
				require.NoError(t, err)
				require.True(t, ok)
				var (
					wg     sync.WaitGroup
					start  = make(chan struct{})
					gone   bool
					errs   = make([]error, updaters+1)
					ifeq   = r%2 == 1 // ROLLBACK IFEQ of a value no REPREPARE changes
					expiry = backend.Expiry{Kind: backend.KeepTTL}
				)
				wg.Go(func() {
					<-start
					cond := backend.Cond{}
					if ifeq {
						cond = backend.IfEq(value(0))
					}
					gone, errs[updaters] = calls.Rollback(ctx, "ns", key, cond)
				})
				for u := range updaters {
					wg.Go(func() {
						<-start
						v := value(u + 1)
						if ifeq {
							v = value(0) // the same value again: the record still matches IFEQ
						}
						_, errs[u] = calls.Reprepare(ctx, "ns", key, v, backend.Cond{}, expiry)
					})
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					require.NoError(t, err, "round %d", r)
				}
				require.True(t, gone, "round %d: ROLLBACK (IFEQ %t) answered 0 for a record live throughout", r, ifeq)
				_, found, err := calls.Get(ctx, "ns", key)
				require.NoError(t, err)
				require.False(t, found, "round %d: the record is there after ROLLBACK answered 1", r)
			}
		})
	}
}
