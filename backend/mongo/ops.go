package mongo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
)

// Field names of a record document; see docs/mongo.md.
const (
	fieldValue    = "v"
	fieldTTLAt    = "ttlAt"
	fieldExpireAt = "expireAt"
	fieldMoveID   = "moveId"
)

var (
	upsert       = options.UpdateOne().SetUpsert(true)
	upsertBefore = options.FindOneAndUpdate().SetUpsert(true).SetReturnDocument(options.Before)
	projection   = options.FindOne().SetProjection(bson.D{{Key: fieldValue, Value: 1}, {Key: fieldTTLAt, Value: 1}, {Key: fieldExpireAt, Value: 1}})
)

// opPrepare upserts the record with a filter that matches only an expired
// record, so the server inserts when there is none and fails with a
// duplicate key when a live one holds the key: one atomic step either way.
func (s *Store) opPrepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.layout == LayoutWow {
		return s.wowPrepare(ctx, ns, key, value, exp)
	}
	now := s.nowMs()
	ok, err := s.prepare(ctx, s.collection(ns), key, s.record(value, exp.TTLAt(now, backend.Forever), nil), now)
	if err != nil {
		return false, wrap("prepare", err)
	}
	return ok, nil
}

func (s *Store) prepare(ctx context.Context, c *mongo.Collection, key []byte, update bson.D, now int64) (bool, error) {
	res, err := c.UpdateOne(ctx, expiredFilter(key, now), update, upsert)
	if isDuplicateKey(err) {
		// The filter did not match, so the key has a live record, and the
		// insert that the upsert fell back to collided with it.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if res.MatchedCount+res.UpsertedCount != 1 {
		return false, fmt.Errorf("upsert matched %d and inserted %d documents", res.MatchedCount, res.UpsertedCount)
	}
	return true, nil
}

// opGet reads the record. One whose retention is over is absent even before
// the sweeper or the TTL index deletes it.
func (s *Store) opGet(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.layout == LayoutWow {
		return s.wowGet(ctx, ns, key)
	}
	raw, err := s.collection(ns).FindOne(ctx, bson.D{{Key: "_id", Value: binary(key)}}, projection).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return backend.Record{}, false, nil
	}
	if err != nil {
		return backend.Record{}, false, wrap("get", err)
	}
	value, ttlAt, expireAt, err := decode(raw)
	if err != nil {
		return backend.Record{}, false, wrap("get", err)
	}
	now := s.nowMs()
	if expireAt <= now {
		return backend.Record{}, false, nil
	}
	if err := s.refuseLarge(ns, key, raw, len(value)); err != nil {
		return backend.Record{}, false, err
	}
	return backend.Record{Value: value, TTLAt: ttlAt, Live: backend.LiveAt(ttlAt, now)}, true, nil
}

// opRollback deletes the record, live or retained, if ifeq holds.
func (s *Store) opRollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.layout == LayoutWow {
		return s.wowRollback(ctx, ns, key, ifeq)
	}
	ok, err := s.rollback(ctx, s.collection(ns), key, ifeq, s.nowMs())
	if err != nil {
		return false, wrap("rollback", err)
	}
	return ok, nil
}

func (s *Store) rollback(ctx context.Context, c *mongo.Collection, key []byte, ifeq backend.Cond, now int64) (bool, error) {
	filter := bson.D{{Key: "_id", Value: binary(key)}}
	if ifeq.Set {
		filter = append(filter, bson.E{Key: fieldValue, Value: binary(ifeq.Value)})
	}
	filter = append(filter, retained(now))
	return deleteByID(ctx, c, filter)
}

// deleteByID deletes the one document that filter (which names an _id)
// matches, and reports whether it did: a deleteOne, and when that deletes
// nothing, the same filter once more as a deleteMany, whose answer is the
// one given. On DocumentDB (FerretDB v2) a deleteOne racing an update of
// the same document can delete nothing although the document matched
// before and after (its DELETE … USING (SELECT ctid … FOR UPDATE) locks
// the update's new row version, then looks for it under the statement's
// older snapshot: docs/mongo.md, "deleteOne on DocumentDB"), while
// deleteMany is a plain DELETE … WHERE that PostgreSQL re-checks on the
// newest version. With an _id in the filter both delete at most one
// document, and a deleteOne that deleted nothing had no effect, so the pair
// is one atomic delete: answered by deleteOne when it deletes, by
// deleteMany otherwise. deleteOne goes first because only it is a
// retryable write on MongoDB, where it never misses: there the second
// round trip comes only with an answer of 0.
func deleteByID(ctx context.Context, c *mongo.Collection, filter bson.D) (bool, error) {
	res, err := c.DeleteOne(ctx, filter)
	if err != nil {
		return false, err
	}
	if res.DeletedCount == 1 {
		return true, nil
	}
	res, err = c.DeleteMany(ctx, filter)
	if err != nil {
		return false, err
	}
	return res.DeletedCount == 1, nil
}

// opReprepare updates the record with a filter that requires it to be live
// (and to hold the IFEQ value), so the check and the write are one step.
func (s *Store) opReprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.layout == LayoutWow {
		return s.wowReprepare(ctx, ns, key, value, ifeq, exp)
	}
	now := s.nowMs()
	filter := bson.D{{Key: "_id", Value: binary(key)}}
	if ifeq.Set {
		filter = append(filter, bson.E{Key: fieldValue, Value: binary(ifeq.Value)})
	}
	filter = append(filter, live(now))

	// KEEPTTL changes the value alone, and drops moveId with it: the record
	// is this client's now, and a composed command that wrote it must not
	// undo it (undoMove deletes by moveId).
	update := bson.D{
		{Key: "$set", Value: bson.D{{Key: fieldValue, Value: binary(value)}}},
		{Key: "$unset", Value: bson.D{{Key: fieldMoveID, Value: ""}}},
	}
	if exp.Kind != backend.KeepTTL {
		update = s.record(value, exp.TTLAt(now, backend.Forever), nil)
	}
	res, err := s.collection(ns).UpdateOne(ctx, filter, update)
	if err != nil {
		return false, wrap("reprepare", err)
	}
	return res.MatchedCount == 1, nil
}

// opMove composes the key change from a reservation of newKey and a
// conditional release of oldKey (backend.ComposeMove, with its undo that
// looks first), since MongoDB has no single-document operation over two
// keys and FerretDB has no transactions.
func (s *Store) opMove(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	if s.layout == LayoutWow {
		return s.wowMove(ctx, ns, newKey, newValue, oldKey, oldValue, exp)
	}
	r, err := backend.ComposeMove(ctx, s.steps(), s.fault, ns, newKey, newValue, oldKey, oldValue, exp)
	if err != nil {
		return 0, wrap("move", err)
	}
	return r, nil
}

// opMPrepare composes PK.MPREPARE from one reservation per key
// (backend.ComposeMPrepare): not atomic, see docs/mongo.md. EX/PX are
// resolved once, so every key gets the same ttlAt.
func (s *Store) opMPrepare(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	if s.layout == LayoutWow {
		return s.wowMPrepare(ctx, entries, exp)
	}
	if exp.Kind == backend.ExpireAfter {
		exp = backend.Expiry{Kind: backend.ExpireAt, Millis: exp.TTLAt(s.nowMs(), backend.Forever)}
	}
	ok, err := backend.ComposeMPrepare(ctx, s.steps(), s.fault, entries, exp)
	if err != nil {
		return false, wrap("mprepare", err)
	}
	return ok, nil
}

// steps are the one-document operations of one composed command. Every
// record it writes carries its fresh moveId, so that an undo touches
// exactly a record this command wrote, never one another client wrote
// meanwhile (even with the same value), and can do so when the reply of
// the reservation was lost.
type steps struct {
	s  *Store
	id bson.ObjectID
}

func (s *Store) steps() steps { return steps{s: s, id: bson.NewObjectID()} }

func (st steps) Reserve(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bson.Raw, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	now := st.s.nowMs()
	return st.s.reserveForMove(ctx, st.s.collection(ns), key, st.s.record(value, exp.TTLAt(now, backend.Forever), &st.id), now)
}

func (st steps) Release(ctx context.Context, ns string, key, value []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	return st.s.rollback(ctx, st.s.collection(ns), key, backend.IfEq(value), st.s.nowMs())
}

func (st steps) Look(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	return st.s.opGet(ctx, ns, key)
}

// Unreserve puts back prev, the record the reservation replaced, or
// deletes the one it inserted; with the reply lost (prev unknown) it
// deletes the record if the command wrote it.
func (st steps) Unreserve(ctx context.Context, ns string, key, _ []byte, prev bson.Raw, known bool) error {
	if !known {
		prev = nil
	}
	return st.s.undoMove(ctx, st.s.collection(ns), key, st.id, prev)
}

// reserveForMove is prepare that also returns the expired record it
// replaced, if any, so that the reservation can be undone exactly.
func (s *Store) reserveForMove(ctx context.Context, c *mongo.Collection, key []byte, update bson.D, now int64) (bson.Raw, bool, error) {
	prev, err := c.FindOneAndUpdate(ctx, expiredFilter(key, now), update, upsertBefore).Raw()
	switch {
	case errors.Is(err, mongo.ErrNoDocuments):
		return nil, true, nil // inserted
	case isDuplicateKey(err):
		return nil, false, nil // a live record holds the key
	case err != nil:
		return nil, false, err
	}
	return prev, true, nil
}

// undoMove puts back prev, the record that Move id replaced for newKey, or
// deletes the one it inserted, if Move's record is still there. It has its
// own deadline, and survives the caller's cancellation, because leaving
// newKey reserved is the half-done state it exists to prevent.
func (s *Store) undoMove(ctx context.Context, c *mongo.Collection, newKey []byte, id bson.ObjectID, prev bson.Raw) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	filter := bson.D{{Key: "_id", Value: binary(newKey)}, {Key: fieldMoveID, Value: id}}
	var err error
	if prev != nil {
		_, err = c.ReplaceOne(ctx, filter, prev)
	} else {
		_, err = deleteByID(ctx, c, filter)
	}
	if err != nil {
		return fmt.Errorf("undo the reservation of new key: %w", err)
	}
	return nil
}

// record is the update that writes a whole record. expireAt is absent for a
// forever record, so the TTL index and the sweeper never touch it; moveId is
// unset unless Move writes the record.
func (s *Store) record(value []byte, ttlAt int64, moveID *bson.ObjectID) bson.D {
	set := bson.D{{Key: fieldValue, Value: binary(value)}, {Key: fieldTTLAt, Value: ttlAt}}
	var unset bson.D
	if ttlAt == backend.Forever {
		unset = append(unset, bson.E{Key: fieldExpireAt, Value: ""})
	} else {
		set = append(set, bson.E{Key: fieldExpireAt, Value: bson.DateTime(s.expireAt(ttlAt))})
	}
	if moveID != nil {
		set = append(set, bson.E{Key: fieldMoveID, Value: *moveID})
	} else {
		unset = append(unset, bson.E{Key: fieldMoveID, Value: ""})
	}
	update := bson.D{{Key: "$set", Value: set}}
	if len(unset) > 0 {
		update = append(update, bson.E{Key: "$unset", Value: unset})
	}
	return update
}

// expireAt is when a record with this ttlAt has outlived its retention.
func (s *Store) expireAt(ttlAt int64) int64 {
	r := s.opts.Retention.Milliseconds()
	if ttlAt > math.MaxInt64-r {
		return math.MaxInt64
	}
	return ttlAt + r
}

func (s *Store) nowMs() int64 { return s.now().UnixMilli() }

// expiredFilter matches the record of key if it is expired at now; with an
// upsert, the insert it falls back to fails with a duplicate key exactly when
// a live record holds key.
func expiredFilter(key []byte, now int64) bson.D {
	return bson.D{
		{Key: "_id", Value: binary(key)},
		{Key: fieldTTLAt, Value: bson.D{{Key: "$gt", Value: backend.Forever}, {Key: "$lte", Value: now}}},
	}
}

// live matches a record that is forever or not yet expired at now.
func live(now int64) bson.E {
	return bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldTTLAt, Value: backend.Forever}},
		bson.D{{Key: fieldTTLAt, Value: bson.D{{Key: "$gt", Value: now}}}},
	}}
}

// retained matches a record whose retention is not over at now.
func retained(now int64) bson.E {
	return bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldExpireAt, Value: bson.D{{Key: "$exists", Value: false}}}},
		bson.D{{Key: fieldExpireAt, Value: bson.D{{Key: "$gt", Value: bson.DateTime(now)}}}},
	}}
}

// binary stores keys and values as BSON binary (subtype 0), so that any
// bytes, valid UTF-8 or not, round-trip and compare byte for byte.
func binary(b []byte) bson.Binary {
	if b == nil {
		b = []byte{}
	}
	return bson.Binary{Subtype: bson.TypeBinaryGeneric, Data: b}
}

// decode reads a record document. expireAt is math.MaxInt64 for a forever
// record.
func decode(raw bson.Raw) (value []byte, ttlAt, expireAt int64, err error) {
	_, value, ok := raw.Lookup(fieldValue).BinaryOK()
	if !ok {
		return nil, 0, 0, fmt.Errorf("record %s: %q is not binary", raw.Lookup("_id"), fieldValue)
	}
	ttlAt, ok = raw.Lookup(fieldTTLAt).AsInt64OK()
	if !ok {
		return nil, 0, 0, fmt.Errorf("record %s: %q is not an integer", raw.Lookup("_id"), fieldTTLAt)
	}
	expireAt = math.MaxInt64
	if v, err := raw.LookupErr(fieldExpireAt); err == nil {
		dt, ok := v.DateTimeOK()
		if !ok {
			return nil, 0, 0, fmt.Errorf("record %s: %q is not a date", raw.Lookup("_id"), fieldExpireAt)
		}
		expireAt = dt
	}
	return value, ttlAt, expireAt, nil
}

// isDuplicateKey reports whether err is the server's duplicate-key error:
// MongoDB's code 11000, or the InternalError carrying PostgreSQL's
// unique-violation text that FerretDB v2 on DocumentDB answers for a
// findAndModify upsert that collides (its insert and update paths answer
// 11000). Both mean the same thing here: a live record holds the key.
func isDuplicateKey(err error) bool {
	if mongo.IsDuplicateKeyError(err) {
		return true
	}
	var ce mongo.CommandError
	return errors.As(err, &ce) && ce.Code == 1 &&
		strings.Contains(ce.Message, "duplicate key value violates unique constraint")
}
