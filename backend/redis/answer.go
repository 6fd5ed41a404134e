package redis

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
)

// answer is one op's answer in block.lua's array, read off either client's
// reply into the few shapes the script gives: an error, nil, an integer, or
// a get's {value, ttlAt, live}. The Wire reads redcon.RESP off its own
// buffer (respAnswer) and the store's client gets a rueidis.RedisMessage
// (msgAnswer); blockResult is the one decoder of both, so the two paths
// cannot disagree on what an answer means. A plain struct rather than an
// interface over the two types: it stays on the stack (no allocation per
// answer on the loop's path).
type answer struct {
	err    error // an error reply: the op's own (WRONGTYPE…), as its client words it
	null   bool  // nil
	isInt  bool  // an integer, n
	n      int64
	triple bool   // {value, ttlAt, live} with bulk, bulk, integer
	value  []byte // the answer's own copy
	ttlAt  []byte
	live   int64

	// What was read, for an unexpected answer's error: one of the two.
	raw []byte
	msg *rueidis.RedisMessage
}

// unexpected is the failure of an answer of no shape the op's script
// gives: never taken for a false.
func (a *answer) unexpected() error {
	if a.msg != nil {
		return fmt.Errorf("unexpected reply %v", *a.msg)
	}
	return fmt.Errorf("unexpected reply %q", a.raw)
}

// code reads a script's integer answer, at most valid.
func (a *answer) code(valid int64) (int64, error) {
	if !a.isInt || a.n < 0 || a.n > valid {
		return 0, a.unexpected()
	}
	return a.n, nil
}

// blockResult decodes one op's answer in block.lua's array: a get's record
// (nil: not found), a move's outcome (0, 1, 2), any other op's flag (0, 1).
// An error answer is the op's own failure, returned as is (the others in
// the array ran); the caller words it (Store.opError).
func blockResult(kind backend.OpKind, a *answer) (res backend.Result, err error) {
	if a.err != nil {
		return res, a.err
	}
	switch kind {
	case backend.OpGet:
		if a.null {
			return res, nil
		}
		if !a.triple {
			return res, a.unexpected()
		}
		ttlAt, err := strconv.ParseInt(string(a.ttlAt), 10, 64)
		if err != nil {
			return res, a.unexpected()
		}
		res.Found = true
		res.Record = backend.Record{Value: a.value, TTLAt: ttlAt, Live: a.live == 1}
	case backend.OpMove:
		var c int64
		if c, err = a.code(2); err == nil {
			res.Move = moveResults[c]
		}
	default:
		var c int64
		c, err = a.code(1)
		res.OK = c == 1
	}
	return res, err
}

// respAnswer reads one element of block.lua's array as the Wire parsed it
// (RESP2: nil is a nil bulk string).
func respAnswer(r redcon.RESP) (a answer) {
	a.raw = r.Raw
	switch r.Type {
	case redcon.Error:
		a.err = errors.New(string(r.Data))
	case redcon.Integer:
		a.isInt, a.n = true, r.Int()
	case redcon.Bulk:
		a.null = r.Data == nil
	case redcon.Array:
		if r.Count != 3 {
			break
		}
		var items [3]redcon.RESP
		i := 0
		r.ForEach(func(e redcon.RESP) bool { items[i] = e; i++; return i < 3 })
		if items[0].Type == redcon.Bulk && items[1].Type == redcon.Bulk && items[2].Type == redcon.Integer {
			a.triple = true
			a.value = append([]byte{}, items[0].Data...)
			a.ttlAt, a.live = items[1].Data, items[2].Int()
		}
	}
	return a
}

// msgAnswer reads one element of block.lua's array as rueidis gave it
// (RESP2 or RESP3); m must outlive the answer (it is kept for an error's
// wording). A Redis error stays rueidis's *RedisError, which callers look
// into (rueidis.IsRedisErr).
func msgAnswer(m *rueidis.RedisMessage) (a answer) {
	a.msg = m
	if err := m.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			a.null = true
		} else {
			a.err = err
		}
		return a
	}
	if m.IsInt64() {
		a.isInt = true
		a.n, _ = m.ToInt64()
		return a
	}
	arr, err := m.ToArray()
	if err != nil || len(arr) != 3 {
		return a
	}
	v, err1 := arr[0].ToString()
	ts, err2 := arr[1].ToString()
	live, err3 := arr[2].ToInt64()
	if err1 == nil && err2 == nil && err3 == nil {
		a.triple, a.value, a.ttlAt, a.live = true, []byte(v), []byte(ts), live
	}
	return a
}
