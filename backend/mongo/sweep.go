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
		if !strings.HasPrefix(name, CollectionPrefix) {
			continue
		}
		if err := s.sweepCollection(ctx, s.db.Collection(name)); err != nil {
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
