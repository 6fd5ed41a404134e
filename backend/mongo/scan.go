package mongo

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/prepkey/prepkey/backend"
)

// Scan reads the namespace's collection in _id order from just after pos
// (the last _id of the previous page), count documents at most, leaving
// out those past their retention. The order is BSON's for binary _ids
// (length first, then bytes), the same for the sort and for $gt, so a
// record present for the whole scan is returned exactly once.
func (s *Store) Scan(ctx context.Context, ns string, pos []byte, count int) (backend.Page, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if s.layout == LayoutWow {
		return s.wowScan(ctx, ns, pos, count)
	}
	now := s.nowMs()
	filter := bson.D{retained(now)}
	if pos != nil {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: binary(pos)}}})
	}
	opts := options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(count)).
		SetProjection(bson.D{{Key: fieldValue, Value: 1}, {Key: fieldTTLAt, Value: 1}, {Key: fieldExpireAt, Value: 1}})
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
		_, key, ok := cur.Current.Lookup("_id").BinaryOK()
		if !ok {
			return backend.Page{}, wrap("scan", fmt.Errorf("record %s: _id is not binary", cur.Current.Lookup("_id")))
		}
		read, last = read+1, bytes.Clone(key)
		value, ttlAt, _, err := decode(cur.Current)
		if err != nil {
			return backend.Page{}, wrap("scan", err)
		}
		if err := s.refuseLarge(ns, key, cur.Current, len(value)); err != nil {
			// Larger than the store returns (another writer's): left out,
			// so that the scan goes on past it; PK.GET answers the refusal.
			s.log.Warn("scan: record left out", "err", err)
			continue
		}
		page.Records = append(page.Records, backend.ScanRecord{
			Key:    last,
			Record: backend.Record{Value: bytes.Clone(value), TTLAt: ttlAt, Live: backend.LiveAt(ttlAt, now)},
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

// metaCollection holds the store's own documents. Its name is outside the
// namespaces' collections (CollectionPrefix, an underscore, then the name).
const metaCollection = "prepkey-meta"

// Secret returns the store's secret, a document written once (upsert with
// $setOnInsert) by whichever sidecar comes first, so that every sidecar on
// this database shares it, across restarts. In layout=wow it lives in
// wowMetaCollection, since the store makes no collection outside prepare_*
// there.
func (s *Store) Secret(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	c := s.db.Collection(metaCollection)
	if s.layout == LayoutWow {
		c = s.db.Collection(wowMetaCollection)
	}
	id := bson.D{{Key: "_id", Value: "scan-secret"}}
	fresh := make([]byte, backend.SecretBytes)
	_, _ = rand.Read(fresh) // crypto/rand.Read never fails (Go 1.24)
	_, err := c.UpdateOne(ctx, id, bson.D{{Key: "$setOnInsert", Value: bson.D{{Key: fieldValue, Value: binary(fresh)}}}}, upsert)
	if err != nil && !isDuplicateKey(err) { // a racing upsert inserted it
		return nil, wrap("secret", err)
	}
	raw, err := c.FindOne(ctx, id).Raw()
	if err != nil {
		return nil, wrap("secret", err)
	}
	_, v, ok := raw.Lookup(fieldValue).BinaryOK()
	if !ok || len(v) != backend.SecretBytes {
		return nil, wrap("secret", errors.New("the stored secret is not 32 bytes"))
	}
	return bytes.Clone(v), nil
}
