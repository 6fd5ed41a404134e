package mongo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// codeNotImplemented is what FerretDB answers to a TTL index. It only means
// that the sweeper is the sole cleanup there.
const codeNotImplemented = 238

// ttlIndexName names the TTL index on expireAt that the store creates.
const ttlIndexName = "prepkey_expireAt_ttl"

// sweepEvery runs Sweep until ctx is done. The first sweep runs at once so
// that indexes exist soon after start.
func (s *Store) sweepEvery(ctx context.Context, interval time.Duration) {
	defer close(s.sweeperDone)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("mongo: sweep failed; retrying at the next interval", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sweep makes sure every namespace collection has its TTL index, where the
// server has them, and deletes the records whose retention is over. The
// deletion is needed only on servers without TTL indexes (FerretDB), and
// costs one indexed query per collection on the others. It finds the
// collections by listing them, so namespaces written by other sidecars or
// earlier runs are swept too.
func (s *Store) Sweep(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	names, err := s.db.ListCollectionNames(lctx, bson.D{})
	cancel()
	if err != nil {
		return wrap("sweep", err)
	}
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, s.prefix) || name == wowMetaCollection {
			continue
		}
		sweep := s.sweepCollection
		if s.layout == LayoutWow {
			sweep = s.sweepWowCollection
		}
		if err := sweep(ctx, s.db.Collection(name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return wrap("sweep", err)
	}
	return nil
}

func (s *Store) sweepCollection(ctx context.Context, c *mongo.Collection) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	indexErr := s.ensureTTLIndex(ctx, c)
	res, err := c.DeleteMany(ctx, bson.D{{Key: fieldExpireAt, Value: bson.D{{Key: "$lte", Value: bson.DateTime(s.nowMs())}}}})
	if res != nil {
		s.swept.Add(res.DeletedCount)
	}
	if err != nil {
		err = fmt.Errorf("delete expired: %w", err)
	}
	return errors.Join(indexErr, err)
}

// ensureTTLIndex creates the TTL index on expireAt once per collection and
// process. MongoDB then deletes records past their retention by itself (its
// TTL monitor runs about once a minute).
func (s *Store) ensureTTLIndex(ctx context.Context, c *mongo.Collection) error {
	s.mu.Lock()
	skip := s.ttlMissing || s.indexed[c.Name()]
	s.mu.Unlock()
	if skip {
		return nil
	}
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: fieldExpireAt, Value: 1}},
		Options: options.Index().SetName(ttlIndexName).SetExpireAfterSeconds(0),
	})
	var se mongo.ServerError
	switch {
	case errors.As(err, &se) && se.HasErrorCode(codeNotImplemented):
		s.mu.Lock()
		s.ttlMissing = true
		s.mu.Unlock()
		s.log.Info("mongo: the server has no TTL indexes; expired records are deleted by the sweeper only", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("create TTL index: %w", err)
	}
	s.mu.Lock()
	s.indexed[c.Name()] = true
	s.mu.Unlock()
	return nil
}

// sweepWowCollection deletes the Wow records whose retention is over (ttlAt
// a Date at or before now - retention). It creates no index: in
// layout=wow the indexes are made only with a collection the store
// creates (ensureWowCollection), never added to one a Wow service made.
// Where MongoDB's TTL index on ttlAt exists it has deleted these records
// already, at their ttlAt.
func (s *Store) sweepWowCollection(ctx context.Context, c *mongo.Collection) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cutoff := s.nowMs() - s.opts.Retention.Milliseconds()
	res, err := c.DeleteMany(ctx, bson.D{{Key: fieldWowTTLAt, Value: bson.D{{Key: "$lte", Value: bson.DateTime(cutoff)}}}})
	if res != nil {
		s.swept.Add(res.DeletedCount)
	}
	if err != nil {
		return fmt.Errorf("delete expired: %w", err)
	}
	return nil
}

// Index names of layout=wow: MongoDB's default names for these keys, which
// a Wow service that creates the same indexes gets too.
const (
	wowTTLIndexName    = "ttlAt_1"
	wowHashedIndexName = "_id_hashed"
)

// Server error codes of an index that already exists under another name
// or with other options; in layout=wow that index is someone's own
// choice, and the store leaves it.
const (
	codeIndexOptionsConflict  = 85
	codeIndexKeySpecsConflict = 86
)

// Server error codes of an index kind the server does not have.
const (
	codeIndexNotFound     = 27
	codeCannotCreateIndex = 67
)

// ensureWowCollection makes sure the namespace's collection exists before
// the first write of this process to it. When it does not, the store
// creates it with Wow's two indexes, as a Wow service does when it creates
// one: a TTL index on ttlAt (expireAfterSeconds 0: MongoDB deletes a
// record at its ttlAt) and a hashed index on _id (a shard key). A
// collection that exists is left as it is. A server without TTL or hashed
// indexes (FerretDB) is not an error: the collection is made without that
// index, and a log line says so.
func (s *Store) ensureWowCollection(ctx context.Context, ns string) error {
	if _, ok := s.made.Load(ns); ok {
		return nil
	}
	c := s.collection(ns)
	names, err := s.db.ListCollectionNames(ctx, bson.D{{Key: "name", Value: c.Name()}})
	if err != nil {
		return fmt.Errorf("look for collection %s: %w", c.Name(), err)
	}
	if len(names) > 0 {
		s.made.Store(ns, true)
		return nil
	}
	made := []string{}
	for _, idx := range []struct {
		model   mongo.IndexModel
		what    string
		missing *bool
	}{
		{mongo.IndexModel{Keys: bson.D{{Key: fieldWowTTLAt, Value: 1}}, Options: options.Index().SetName(wowTTLIndexName).SetExpireAfterSeconds(0)},
			"TTL index on ttlAt", &s.ttlMissing},
		{mongo.IndexModel{Keys: bson.D{{Key: "_id", Value: "hashed"}}, Options: options.Index().SetName(wowHashedIndexName)},
			"hashed index on _id", &s.hashedMissing},
	} {
		s.mu.Lock()
		skip := *idx.missing
		s.mu.Unlock()
		if skip {
			continue
		}
		// createIndexes creates the collection too, if it is still absent.
		_, err := c.Indexes().CreateOne(ctx, idx.model)
		var se mongo.ServerError
		switch {
		case err == nil:
			made = append(made, idx.what)
		case errors.As(err, &se) && (se.HasErrorCode(codeIndexOptionsConflict) || se.HasErrorCode(codeIndexKeySpecsConflict)):
			// Made meanwhile by someone else, under their own name.
		case errors.As(err, &se) && (se.HasErrorCode(codeNotImplemented) || se.HasErrorCode(codeIndexNotFound) || se.HasErrorCode(codeCannotCreateIndex)):
			// The server cannot make this kind of index (FerretDB v1:
			// NotImplemented for TTL, IndexNotFound for hashed): go on
			// without it.
			s.mu.Lock()
			*idx.missing = true
			s.mu.Unlock()
			s.log.Warn("mongo: layout=wow: the server cannot create a "+idx.what+"; collections are made without it",
				"collection", c.Name(), "err", err)
		default:
			return fmt.Errorf("create %s of %s: %w", idx.what, c.Name(), err)
		}
	}
	if len(made) == 0 {
		made = append(made, "none")
	}
	s.log.Info("mongo: layout=wow: created collection", "collection", c.Name(), "indexes", strings.Join(made, ", "))
	s.made.Store(ns, true)
	return nil
}
