package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/prepkey/prepkey/backend"
)

// maxAfterMillis caps EX/PX so that now+ms stays exact in Lua's doubles
// (2^52 ms is about 142,000 years: such a record never expires in practice).
const maxAfterMillis = 1 << 52

// expiryArgs encodes exp as the (mode, ms) script arguments.
func expiryArgs(exp backend.Expiry) (mode, ms string) {
	switch exp.Kind {
	case backend.ExpireAfter:
		return "a", strconv.FormatInt(min(exp.Millis, maxAfterMillis), 10)
	case backend.ExpireAt:
		return "t", strconv.FormatInt(exp.Millis, 10)
	case backend.KeepTTL:
		return "k", "0"
	default:
		return "n", "0"
	}
}

// condArgs encodes an IFEQ condition as the (set, value) script arguments.
func condArgs(c backend.Cond) (set, value string) {
	if !c.Set {
		return "0", ""
	}
	return "1", string(c.Value)
}

// run runs one script within ctx, which carries the deadline.
func (s *Store) run(ctx context.Context, op string, sc *rueidis.Lua, keys, args []string) (rueidis.RedisResult, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return rueidis.RedisResult{}, s.fail(ctx, op, err)
	}
	res := sc.Exec(ctx, c, keys, args)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		return res, s.fail(ctx, op, err)
	}
	return res, nil
}

// code reads a script's integer answer and checks it is one of valid; any
// other reply is an error, never a false.
func (s *Store) code(ctx context.Context, op string, res rueidis.RedisResult, valid int64) (int64, error) {
	n, err := res.AsInt64()
	if err != nil || n < 0 || n > valid {
		return 0, s.fail(ctx, op, fmt.Errorf("unexpected reply %v", res))
	}
	return n, nil
}

// Prepare implements commands.Store.
func (s *Store) Prepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.prepare(ctx, s.keys.recordKey(ns, key), value, exp)
}

func (s *Store) prepare(ctx context.Context, rkey string, value []byte, exp backend.Expiry) (bool, error) {
	mode, ms := expiryArgs(exp)
	res, err := s.run(ctx, "prepare", s.scripts.prepare,
		[]string{rkey}, []string{string(value), mode, ms, s.retention})
	if err != nil {
		return false, err
	}
	n, err := s.code(ctx, "prepare", res, 1)
	return n == 1, err
}

// Get implements commands.Store.
func (s *Store) Get(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.get(ctx, s.keys.recordKey(ns, key))
}

func (s *Store) get(ctx context.Context, rkey string) (backend.Record, bool, error) {
	res, err := s.run(ctx, "get", s.scripts.get, []string{rkey}, []string{s.retention})
	if err != nil {
		return backend.Record{}, false, err
	}
	if rueidis.IsRedisNil(res.Error()) {
		return backend.Record{}, false, nil
	}
	rec, err := decodeRecord(res)
	if err != nil {
		return backend.Record{}, false, s.fail(ctx, "get", err)
	}
	return rec, true, nil
}

// decodeRecord reads get.lua's {value, ttlAt, live}.
func decodeRecord(res rueidis.RedisResult) (backend.Record, error) {
	arr, err := res.ToArray()
	if err != nil || len(arr) != 3 {
		return backend.Record{}, fmt.Errorf("unexpected reply %v", res)
	}
	v, err1 := arr[0].ToString()
	ts, err2 := arr[1].ToString()
	live, err3 := arr[2].AsInt64()
	ttlAt, err4 := strconv.ParseInt(ts, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return backend.Record{}, fmt.Errorf("unexpected reply %v", res)
	}
	return backend.Record{Value: []byte(v), TTLAt: ttlAt, Live: live == 1}, nil
}

// Rollback implements commands.Store.
func (s *Store) Rollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	return s.rollback(ctx, s.keys.recordKey(ns, key), ifeq)
}

func (s *Store) rollback(ctx context.Context, rkey string, ifeq backend.Cond) (bool, error) {
	set, v := condArgs(ifeq)
	res, err := s.run(ctx, "rollback", s.scripts.rollback,
		[]string{rkey}, []string{set, v, s.retention})
	if err != nil {
		return false, err
	}
	n, err := s.code(ctx, "rollback", res, 1)
	return n == 1, err
}

// Reprepare implements commands.Store.
func (s *Store) Reprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	set, v := condArgs(ifeq)
	mode, ms := expiryArgs(exp)
	res, err := s.run(ctx, "reprepare", s.scripts.reprepare,
		[]string{s.keys.recordKey(ns, key)},
		[]string{string(value), set, v, mode, ms, s.retention})
	if err != nil {
		return false, err
	}
	n, err := s.code(ctx, "reprepare", res, 1)
	return n == 1, err
}
