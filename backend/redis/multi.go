package redis

import (
	"context"
	"fmt"

	"github.com/prepkey/prepkey/backend"
)

// entryKeys returns the Redis keys of entries and whether one script can
// take them all: not a Cluster, or all in one slot.
func (s *Store) entryKeys(entries []backend.Entry) ([]string, bool) {
	rkeys := make([]string, len(entries))
	oneSlot := true
	for i, e := range entries {
		rkeys[i] = s.keys.recordKey(e.NS, e.Key)
		if s.composed && slot(rkeys[i]) != slot(rkeys[0]) {
			oneSlot = false
		}
	}
	return rkeys, oneSlot
}

// mprepareAcross composes PK.MPREPARE over several Cluster slots. EX/PX
// are resolved first on one node's clock (TIME), so that every key gets
// the same ttlAt although each step runs on its own node.
func (s *Store) mprepareAcross(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	if exp.Kind == backend.ExpireAfter {
		now, err := s.serverTime(ctx)
		if err != nil {
			return false, err
		}
		exp = backend.Expiry{Kind: backend.ExpireAt, Millis: now + min(exp.Millis, maxAfterMillis)}
	}
	ok, err := backend.ComposeMPrepare(ctx, steps{s}, s.fault, entries, exp)
	if err != nil {
		return false, s.composedError("mprepare", err)
	}
	return ok, nil
}

// serverTime is a Redis node's clock in Unix milliseconds.
func (s *Store) serverTime(ctx context.Context) (int64, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	c, err := s.conn(ctx)
	if err != nil {
		return 0, s.fail(ctx, "mprepare", err)
	}
	tm, err := c.Do(ctx, c.B().Time().Build()).AsIntSlice()
	if err != nil || len(tm) != 2 {
		return 0, s.fail(ctx, "mprepare", fmt.Errorf("TIME: %v %w", tm, err))
	}
	return tm[0]*1000 + tm[1]/1000, nil
}
