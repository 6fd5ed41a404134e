package mongo

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/prepkey/prepkey/backend"
)

// layout=wow: the store reads and writes Wow's own PrepareKey records, so
// that a Wow service and the sidecar's clients share reservations. The
// facts of Wow's layout, and the choices made where it is silent, are in
// docs/mongo.md ("Wow layout"); each command is still one atomic
// single-document operation (REPREPARE without IFEQ: a read, then one
// conditional write that only takes effect on what was read).

// WowCollectionPrefix starts the name of every collection of layout=wow:
// prepare_ + Wow's PrepareKey name (the namespace).
const WowCollectionPrefix = "prepare_"

// wowForever is Wow's ttlAt for a record that never expires:
// 6666-06-06T00:00:00Z. Any ttlAt at or above it is forever.
const wowForever int64 = 148204944000000

// Field names of a Wow record: {_id: key, value: V, ttlAt: Date}.
const (
	fieldWowValue = "value"
	fieldWowTTLAt = "ttlAt"
)

// wowMetaCollection holds the scan cursors' secret in layout=wow, where the
// store makes no collection outside prepare_*. The ':' keeps it apart from
// every namespace's collection (namespaces are A-Z a-z 0-9 _ . -).
const wowMetaCollection = WowCollectionPrefix + "prepkey:meta"

var (
	replaceUpsert       = options.Replace().SetUpsert(true)
	replaceUpsertBefore = options.FindOneAndReplace().SetUpsert(true).SetReturnDocument(options.Before)
)

// wowID is the _id of key: the key as a string, which must be UTF-8 since
// Wow's keys are Kotlin strings and BSON strings are UTF-8.
func wowID(ns string, key []byte) (string, error) {
	if !utf8.ValidString(ns) {
		return "", backend.ErrNamespaceNotUTF8
	}
	if !utf8.Valid(key) {
		return "", backend.ErrKeyNotUTF8
	}
	return string(key), nil
}

// wowDate is the ttlAt Date of a record that stops being live at ttlAt.
// Forever, and anything at or beyond Wow's forever, is written as exactly
// Wow's forever.
func wowDate(ttlAt int64) bson.DateTime {
	if ttlAt == backend.Forever || ttlAt >= wowForever {
		return bson.DateTime(wowForever)
	}
	return bson.DateTime(ttlAt)
}

// wowTTLAt reads the ttlAt of a stored record. A record whose ttlAt is
// absent or not a Date is held forever: Wow's prepare filter
// (ttlAt < now) never matches it, nor does the sidecar's, and MongoDB's
// TTL index never deletes it. A date at or before 1970 is read as 1 ms,
// expired: 0 and negative numbers mean forever on the wire.
func wowTTLAt(raw bson.Raw) int64 {
	ms, ok := raw.Lookup(fieldWowTTLAt).DateTimeOK()
	switch {
	case !ok || ms >= wowForever:
		return backend.Forever
	case ms <= 0:
		return 1
	}
	return ms
}

// wowExpired matches a record whose ttlAt is a Date at or before now.
func wowExpired(now int64) bson.E {
	return bson.E{Key: fieldWowTTLAt, Value: bson.D{{Key: "$lte", Value: bson.DateTime(now)}}}
}

// wowNotDate matches a record whose ttlAt is absent or not a Date: held
// forever (wowTTLAt).
var wowNotDate = bson.D{{Key: fieldWowTTLAt, Value: bson.D{{Key: "$not", Value: bson.D{{Key: "$type", Value: "date"}}}}}}

// wowAfter matches a record that is still live, or still retained, at
// cutoff: its ttlAt is a Date after cutoff, or not a Date.
func wowAfter(cutoff int64) bson.E {
	return bson.E{Key: "$or", Value: bson.A{
		bson.D{{Key: fieldWowTTLAt, Value: bson.D{{Key: "$gt", Value: bson.DateTime(cutoff)}}}},
		wowNotDate,
	}}
}

// wowLive matches a record live at now.
func wowLive(now int64) bson.E { return wowAfter(now) }

// wowRetained matches a record whose retention is not over at now.
func (s *Store) wowRetained(now int64) bson.E {
	return wowAfter(now - s.opts.Retention.Milliseconds())
}

// wowRecord is the whole document of a record, in Wow's field order.
func wowRecord(id string, value bson.RawValue, ttlAt int64) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: fieldWowValue, Value: value}, {Key: fieldWowTTLAt, Value: wowDate(ttlAt)}}
}

// wowArgs converts a command's key and value, refusing what layout=wow
// cannot store before anything is read or written.
func wowArgs(ns string, key, value []byte) (string, bson.RawValue, error) {
	id, err := wowID(ns, key)
	if err != nil {
		return "", bson.RawValue{}, err
	}
	v, err := jsonToBSON(value)
	return id, v, err
}

// wowCond converts an IFEQ value; the zero RawValue when there is none.
func wowCond(c backend.Cond) (bson.RawValue, error) {
	if !c.Set {
		return bson.RawValue{}, nil
	}
	return jsonToBSON(c.Value)
}

// wowDecode reads a stored record: its value as compact JSON (an
// *unreadable error when it has none; with extJSON, the odd parts as
// Extended JSON instead) and its ttlAt.
func wowDecode(raw bson.Raw, extJSON bool) ([]byte, int64, error) {
	v, err := raw.LookupErr(fieldWowValue)
	if err != nil {
		if !extJSON {
			return nil, 0, &unreadable{"the record has no value"}
		}
		return []byte("null"), wowTTLAt(raw), nil
	}
	js, err := bsonToJSON(nil, bsoncore.Value{Type: bsoncore.Type(v.Type), Data: v.Value}, extJSON)
	if err != nil {
		return nil, 0, err
	}
	return js, wowTTLAt(raw), nil
}

// storedNotJSON is the reply to a read of a record whose value has no JSON
// form: the client's request was fine, but no answer can carry the value.
func storedNotJSON(err error) error {
	return &backend.Refusal{Text: errWowStored + err.Error()}
}

func (s *Store) wowPrepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	id, v, err := wowArgs(ns, key, value)
	if err != nil {
		return false, err
	}
	if err := s.ensureWowCollection(ctx, ns); err != nil {
		return false, wrap("prepare", err)
	}
	now := s.nowMs()
	c := s.collection(ns)
	// Wow's own prepare: replace a record whose ttlAt has passed, else
	// insert; a live record makes the insert collide on _id.
	res, err := c.ReplaceOne(ctx, bson.D{{Key: "_id", Value: id}, wowExpired(now)}, wowRecord(id, v, exp.TTLAt(now, backend.Forever)), replaceUpsert)
	if isDuplicateKey(err) {
		return false, nil
	}
	if err != nil {
		return false, wrap("prepare", err)
	}
	if res.MatchedCount+res.UpsertedCount != 1 {
		return false, wrap("prepare", fmt.Errorf("upsert matched %d and inserted %d documents", res.MatchedCount, res.UpsertedCount))
	}
	return true, nil
}

func (s *Store) wowGet(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	id, err := wowID(ns, key)
	if err != nil {
		return backend.Record{}, false, err
	}
	raw, err := s.collection(ns).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return backend.Record{}, false, nil
	}
	if err != nil {
		return backend.Record{}, false, wrap("get", err)
	}
	now := s.nowMs()
	if ttlAt := wowTTLAt(raw); s.opts.Gone(ttlAt, now) {
		return backend.Record{}, false, nil
	}
	if len(raw) > wowRawBound(s.opts.ReadBound(), id) {
		return backend.Record{}, false, s.refuseLarge(ns, key, raw, len(raw))
	}
	value, ttlAt, err := wowDecode(raw, false)
	if err != nil {
		return backend.Record{}, false, storedNotJSON(err)
	}
	if err := s.refuseLarge(ns, key, raw, len(value)); err != nil {
		return backend.Record{}, false, err
	}
	return backend.Record{Value: value, TTLAt: ttlAt, Live: backend.LiveAt(ttlAt, now)}, true, nil
}

func (s *Store) wowRollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	id, err := wowID(ns, key)
	if err != nil {
		return false, err
	}
	cond, err := wowCond(ifeq)
	if err != nil {
		return false, err
	}
	ok, err := s.wowDelete(ctx, s.collection(ns), id, ifeq.Set, cond, s.nowMs())
	if err != nil {
		return false, wrap("rollback", err)
	}
	return ok, nil
}

// wowDelete deletes the record of id, live or retained, if it holds cond
// (when ifeq).
func (s *Store) wowDelete(ctx context.Context, c *mongo.Collection, id string, ifeq bool, cond bson.RawValue, now int64) (bool, error) {
	filter := bson.D{{Key: "_id", Value: id}}
	if ifeq {
		filter = append(filter, bson.E{Key: fieldWowValue, Value: cond})
	}
	filter = append(filter, s.wowRetained(now))
	return deleteByID(ctx, c, filter)
}

// wowReplaceAttempts bounds REPREPARE without IFEQ's read-then-write when
// other clients keep changing the record in between.
const wowReplaceAttempts = 16

// wowReprepare replaces the live record's value. With IFEQ it is one
// conditional update (MongoDB compares the stored BSON with the converted
// IFEQ value). Without IFEQ the record is read first, since a live record
// whose value has no JSON form must not be overwritten and no filter can
// say "every part of the value is plain JSON"; the write then carries the
// value read as its condition, so it takes effect only on that record,
// and is retried if the record changed in between.
func (s *Store) wowReprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	id, v, err := wowArgs(ns, key, value)
	if err != nil {
		return false, err
	}
	cond, err := wowCond(ifeq)
	if err != nil {
		return false, err
	}
	c := s.collection(ns)
	set := bson.D{{Key: fieldWowValue, Value: v}}
	now := s.nowMs()
	if exp.Kind != backend.KeepTTL {
		set = append(set, bson.E{Key: fieldWowTTLAt, Value: wowDate(exp.TTLAt(now, backend.Forever))})
	}
	update := bson.D{{Key: "$set", Value: set}}
	if ifeq.Set {
		res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: fieldWowValue, Value: cond}, wowLive(now)}, update)
		if err != nil {
			return false, wrap("reprepare", err)
		}
		return res.MatchedCount == 1, nil
	}
	for range wowReplaceAttempts {
		raw, err := c.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Raw()
		if errors.Is(err, mongo.ErrNoDocuments) {
			return false, nil
		}
		if err != nil {
			return false, wrap("reprepare", err)
		}
		if !backend.LiveAt(wowTTLAt(raw), now) {
			return false, nil
		}
		if _, _, err := wowDecode(raw, false); err != nil {
			return false, &backend.Refusal{Text: errWowStored + err.Error() + "; not replaced"}
		}
		res, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: fieldWowValue, Value: raw.Lookup(fieldWowValue)}, wowLive(now)}, update)
		if err != nil {
			return false, wrap("reprepare", err)
		}
		if res.MatchedCount == 1 {
			return true, nil
		}
		now = s.nowMs()
	}
	return false, wrap("reprepare", fmt.Errorf("the record changed between read and write %d times", wowReplaceAttempts))
}

// wowCheckEntries refuses a composed command whose arguments layout=wow
// cannot store, before any step runs.
func wowCheckEntries(entries []backend.Entry) error {
	for _, e := range entries {
		if _, _, err := wowArgs(e.NS, e.Key, e.Value); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) wowMove(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	if err := wowCheckEntries([]backend.Entry{{NS: ns, Key: newKey, Value: newValue}, {NS: ns, Key: oldKey, Value: oldValue}}); err != nil {
		return 0, err
	}
	st := wowSteps{s: s, exp: s.absolute(exp)}
	r, err := backend.ComposeMove(ctx, st, s.fault, ns, newKey, newValue, oldKey, oldValue, st.exp)
	if err != nil {
		return 0, wrap("move", err)
	}
	return r, nil
}

func (s *Store) wowMPrepare(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	if err := wowCheckEntries(entries); err != nil {
		return false, err
	}
	st := wowSteps{s: s, exp: s.absolute(exp)}
	ok, err := backend.ComposeMPrepare(ctx, st, s.fault, entries, st.exp)
	if err != nil {
		return false, wrap("mprepare", err)
	}
	return ok, nil
}

// absolute resolves EX/PX on the store's clock now, so that every step of
// a composed command writes the same ttlAt, and its undo can name it.
func (s *Store) absolute(exp backend.Expiry) backend.Expiry {
	if exp.Kind == backend.ExpireAfter {
		return backend.Expiry{Kind: backend.ExpireAt, Millis: exp.TTLAt(s.nowMs(), backend.Forever)}
	}
	return exp
}

// wowSteps are the one-document operations of a composed command in
// layout=wow. A Wow record has no room for the default layout's moveId, so
// an undo recognises the record its command wrote by its value and its
// ttlAt (exp is absolute): it never touches a record another client wrote
// with another value or ttlAt.
type wowSteps struct {
	s   *Store
	exp backend.Expiry
}

func (st wowSteps) Reserve(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bson.Raw, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	id, v, err := wowArgs(ns, key, value)
	if err != nil {
		return nil, false, err
	}
	if err := st.s.ensureWowCollection(ctx, ns); err != nil {
		return nil, false, err
	}
	now := st.s.nowMs()
	prev, err := st.s.collection(ns).FindOneAndReplace(ctx, bson.D{{Key: "_id", Value: id}, wowExpired(now)},
		wowRecord(id, v, exp.TTLAt(now, backend.Forever)), replaceUpsertBefore).Raw()
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

func (st wowSteps) Release(ctx context.Context, ns string, key, value []byte) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	id, v, err := wowArgs(ns, key, value)
	if err != nil {
		return false, err
	}
	return st.s.wowDelete(ctx, st.s.collection(ns), id, true, v, st.s.nowMs())
}

func (st wowSteps) Look(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, st.s.timeout)
	defer cancel()
	return st.s.wowGet(ctx, ns, key)
}

// Unreserve puts back prev, the expired record the reservation replaced,
// or deletes the record it inserted, while key still holds what it wrote.
// It survives the caller's cancellation, as undoMove does.
func (st wowSteps) Unreserve(ctx context.Context, ns string, key, value []byte, prev bson.Raw, known bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), st.s.timeout)
	defer cancel()
	id, v, err := wowArgs(ns, key, value)
	if err != nil {
		return err
	}
	filter := bson.D{{Key: "_id", Value: id}, {Key: fieldWowValue, Value: v}, {Key: fieldWowTTLAt, Value: wowDate(st.exp.TTLAt(0, backend.Forever))}}
	c := st.s.collection(ns)
	if known && prev != nil {
		_, err = c.ReplaceOne(ctx, filter, prev)
	} else {
		_, err = deleteByID(ctx, c, filter)
	}
	if err != nil {
		return fmt.Errorf("undo the reservation: %w", err)
	}
	return nil
}

func (s *Store) wowScan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	now := s.nowMs()
	// Keys are strings; a record under any other _id type is not one the
	// sidecar (or Wow) can name, and would break the order of the pages.
	id := bson.D{{Key: "$type", Value: "string"}}
	if pos != nil {
		id = append(id, bson.E{Key: "$gt", Value: string(pos)})
	}
	filter := bson.D{{Key: "_id", Value: id}, s.wowRetained(now)}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(count))
	cur, err := s.collection(ns).Find(ctx, filter, opts)
	if err != nil {
		return backend.Page{}, wrap("scan", err)
	}
	defer cur.Close(context.WithoutCancel(ctx))
	page := backend.Page{Records: make([]backend.ScanRecord, 0, count)}
	// read and last count the documents read, kept or left out: the page
	// ends where the reading did.
	read, last := 0, []byte(nil)
	for cur.Next(ctx) {
		key, ok := cur.Current.Lookup("_id").StringValueOK()
		if !ok {
			return backend.Page{}, wrap("scan", fmt.Errorf("record %s: _id is not a string", cur.Current.Lookup("_id")))
		}
		read, last = read+1, []byte(key)
		var value []byte
		var ttlAt int64
		var err error
		if n := len(cur.Current); n > wowRawBound(s.opts.ReadBound(), key) {
			err = s.refuseLarge(ns, []byte(key), cur.Current, n)
		} else {
			if value, ttlAt, err = wowDecode(cur.Current, true); err != nil {
				return backend.Page{}, wrap("scan", fmt.Errorf("record %q: %w", key, err))
			}
			err = s.refuseLarge(ns, []byte(key), cur.Current, len(value))
		}
		if err != nil {
			// Larger than the store returns (another writer's): left out,
			// so that the scan goes on past it; PK.GET answers the refusal.
			s.log.Warn("scan: record left out", "err", err)
			continue
		}
		page.Records = append(page.Records, backend.ScanRecord{
			Key:    []byte(key),
			Record: backend.Record{Value: value, TTLAt: ttlAt, Live: backend.LiveAt(ttlAt, now)},
		})
	}
	if err := cur.Err(); err != nil {
		return backend.Page{}, wrap("scan", err)
	}
	if read < count {
		page.Done = true
	} else {
		page.Next = last
	}
	return page, nil
}

// ArgCheck gives the command layer (through Info().ArgCheck) the
// checks of layout=wow to run when a command is parsed, so that a refused
// command is refused alone, pipelined or queued in MULTI alike, before it
// reaches the store: keys and the namespace UTF-8, values and IFEQ values
// JSON that MongoDB can store. Its error's text is the whole reply. The
// store makes the same checks itself (opPrepare … opMPrepare), for callers
// that reach it directly. Nil in the default layout: nothing to check.
func (s *Store) ArgCheck() func(op *backend.Op) error {
	if s.layout != LayoutWow {
		return nil
	}
	return checkWowOp
}

func checkWowOp(op *backend.Op) error {
	switch op.Kind {
	case backend.OpMPrepare:
		return wowCheckEntries(op.Entries)
	case backend.OpPrepare:
		_, _, err := wowArgs(op.NS, op.Key, op.Value)
		return err
	case backend.OpReprepare:
		if _, _, err := wowArgs(op.NS, op.Key, op.Value); err != nil {
			return err
		}
		_, err := wowCond(op.Cond)
		return err
	case backend.OpRollback:
		if _, err := wowID(op.NS, op.Key); err != nil {
			return err
		}
		_, err := wowCond(op.Cond)
		return err
	case backend.OpMove:
		return wowCheckEntries([]backend.Entry{{NS: op.NS, Key: op.Key, Value: op.Value}, {NS: op.NS, Key: op.OldKey, Value: op.OldValue}})
	case backend.OpGet:
		_, err := wowID(op.NS, op.Key)
		return err
	}
	return nil // a scan's position is the store's own
}
