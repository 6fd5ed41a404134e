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

// call is one script run. Building it copies keys and values out of the
// caller's buffers.
type call struct {
	op   string // names the command in errors
	sc   *script
	keys []string
	args []string
}

func (s *Store) prepareCall(rkey string, value []byte, exp backend.Expiry) call {
	mode, ms := expiryArgs(exp)
	return call{"prepare", s.scripts.prepare, []string{rkey}, []string{string(value), mode, ms, s.retention}}
}

func (s *Store) getCall(rkey string) call {
	return call{"get", s.scripts.get, []string{rkey}, []string{s.retention}}
}

func (s *Store) rollbackCall(rkey string, ifeq backend.Cond) call {
	set, v := condArgs(ifeq)
	return call{"rollback", s.scripts.rollback, []string{rkey}, []string{set, v, s.retention}}
}

func (s *Store) reprepareCall(rkey string, value []byte, ifeq backend.Cond, exp backend.Expiry) call {
	set, v := condArgs(ifeq)
	mode, ms := expiryArgs(exp)
	return call{"reprepare", s.scripts.reprepare, []string{rkey},
		[]string{string(value), set, v, mode, ms, s.retention}}
}

func (s *Store) moveCall(newKey string, newValue []byte, oldKey string, oldValue []byte, exp backend.Expiry) call {
	mode, ms := expiryArgs(exp)
	return call{"move", s.scripts.move, []string{newKey, oldKey},
		[]string{string(newValue), string(oldValue), mode, ms, s.retention}}
}

// run runs one call within ctx, which carries the deadline.
func (s *Store) run(ctx context.Context, cl call) (rueidis.RedisResult, error) {
	c, err := s.conn(ctx)
	if err != nil {
		return rueidis.RedisResult{}, s.fail(ctx, cl.op, err)
	}
	rs, repl := s.exec(ctx, c, []call{cl})
	res := rs[0]
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		return res, s.fail(ctx, cl.op, err)
	}
	if repl != nil {
		return res, repl
	}
	return res, nil
}

// code reads a script's integer answer and checks it is at most valid; any
// other reply is an error, never a false.
func code(res rueidis.RedisResult, valid int64) (int64, error) {
	m, err := res.ToMessage()
	if err != nil {
		return 0, fmt.Errorf("unexpected reply %v", res)
	}
	return codeMsg(m, valid)
}

func decodeFlag(res rueidis.RedisResult) (bool, error) {
	n, err := code(res, 1)
	return n == 1, err
}

// decodeGet reads get.lua's nil or {value, ttlAt, live}.
func decodeGet(res rueidis.RedisResult) (backend.Record, bool, error) {
	if rueidis.IsRedisNil(res.Error()) {
		return backend.Record{}, false, nil
	}
	m, err := res.ToMessage()
	if err != nil {
		return backend.Record{}, false, fmt.Errorf("unexpected reply %v", res)
	}
	return decodeGetMsg(m)
}

// decodeMove reads move.lua's 1 moved, 0 new key taken, 2 old key mismatch.
func decodeMove(res rueidis.RedisResult) (backend.MoveResult, error) {
	n, err := code(res, 2)
	if err != nil {
		return 0, err
	}
	return moveResults[n], nil
}

// moveResults are move.lua's answers 0, 1 and 2.
var moveResults = [...]backend.MoveResult{backend.NewKeyTaken, backend.Moved, backend.OldKeyMismatch}

// flag runs a call answering 1 or 0.
func (s *Store) flag(ctx context.Context, cl call) (bool, error) {
	res, err := s.run(ctx, cl)
	if err != nil {
		return false, err
	}
	ok, err := decodeFlag(res)
	return ok, s.fail(ctx, cl.op, err)
}

// Prepare implements commands.Store.
func (s *Store) Prepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	return s.flag(ctx, s.prepareCall(s.keys.recordKey(ns, key), value, exp))
}

// Get implements commands.Store.
func (s *Store) Get(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	return s.get(ctx, s.keys.recordKey(ns, key))
}

func (s *Store) get(ctx context.Context, rkey string) (backend.Record, bool, error) {
	res, err := s.run(ctx, s.getCall(rkey))
	if err != nil {
		return backend.Record{}, false, err
	}
	rec, found, err := decodeGet(res)
	return rec, found, s.fail(ctx, "get", err)
}

// Rollback implements commands.Store.
func (s *Store) Rollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	return s.flag(ctx, s.rollbackCall(s.keys.recordKey(ns, key), ifeq))
}

// Reprepare implements commands.Store.
func (s *Store) Reprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	ctx, cancel := s.deadlines.bound(ctx)
	defer cancel()
	return s.flag(ctx, s.reprepareCall(s.keys.recordKey(ns, key), value, ifeq, exp))
}
