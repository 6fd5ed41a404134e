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
	mode, n := expiryMode(exp)
	return mode, strconv.FormatInt(n, 10)
}

// expiryMode is exp as the script's mode and milliseconds, the number left
// for the encoder to write: the loop's Redis connection appends it to its
// buffer, where formatting it as a string first cost two allocations per
// PK.PREPARE (callgrind: about 630 of its instructions at pipeline 16).
func expiryMode(exp backend.Expiry) (mode string, ms int64) {
	switch exp.Kind {
	case backend.ExpireAfter:
		return "a", min(exp.Millis, maxAfterMillis)
	case backend.ExpireAt:
		return "t", exp.Millis
	case backend.KeepTTL:
		return "k", 0
	default:
		return "n", 0
	}
}

// condArgs encodes an IFEQ condition as the (set, value) script arguments.
func condArgs(c backend.Cond) (set string, value []byte) {
	if !c.Set {
		return "0", nil
	}
	return "1", c.Value
}

// call is one script run. Building it copies keys and values out of the
// caller's buffers.
type call struct {
	op     string // names the command in errors
	sc     *script
	keys   []string
	args   []string
	writes bool // it may change records (WAIT follows it with ?wait=N)
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
	var a answer
	a.readMsg(&m)
	return a.code(valid)
}

func decodeFlag(res rueidis.RedisResult) (bool, error) {
	n, err := code(res, 1)
	return n == 1, err
}

// moveResults are block.lua's answers 0, 1 and 2 to a key change.
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

// one runs op alone: a pipeline of one, so block.lua with one operation
// (or, on a Cluster, a composed command across slots).
func (s *Store) one(ctx context.Context, op Op) Result {
	var res [1]Result
	s.pipeline(ctx, []Op{op}, res[:])
	return res[0]
}
