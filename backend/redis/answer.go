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
// buffer (readResp) and the store's client gets a rueidis.RedisMessage
// (readMsg); blockResult is the one decoder of both, so the two paths
// cannot disagree on what an answer means. A plain struct rather than an
// interface over the two types: it stays on the stack (no allocation per
// answer on the loop's path).
type answer struct {
	shape shape
	n     int64  // an integer; a record's live flag
	value []byte // a record's value, the answer's own copy
	ttlAt []byte // a record's ttlAt, as sent
	err   error  // an error reply: the op's own (WRONGTYPE…), as its client words it

	// What was read, for an unexpected answer's error: one of the two.
	raw []byte
	msg *rueidis.RedisMessage
}

// shape is which of the script's answers an answer is.
type shape uint8

const (
	shapeOther  shape = iota // none the script gives
	shapeError               // an error reply, err
	shapeNil                 // nil
	shapeInt                 // an integer, n
	shapeRecord              // {value, ttlAt, live}: bulk, bulk, integer
)

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
	if a.shape != shapeInt || a.n < 0 || a.n > valid {
		return 0, a.unexpected()
	}
	return a.n, nil
}

// blockResult decodes one op's answer in block.lua's array: a get's record
// (nil: not found), a move's outcome (0, 1, 2), any other op's flag (0, 1).
// An error answer is the op's own failure, returned as is (the others in
// the array ran); the caller words it (Store.opError).
func blockResult(kind backend.OpKind, a *answer) (res backend.Result, err error) {
	if a.shape == shapeError {
		return res, a.err
	}
	switch kind {
	case backend.OpGet:
		if a.shape == shapeNil {
			return res, nil
		}
		if a.shape != shapeRecord {
			return res, a.unexpected()
		}
		ttlAt, err := strconv.ParseInt(string(a.ttlAt), 10, 64)
		if err != nil {
			return res, a.unexpected()
		}
		res.Found = true
		res.Record = backend.Record{Value: a.value, TTLAt: ttlAt, Live: a.n == 1}
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

// readResp reads one element of block.lua's array as the Wire parsed it
// (RESP2: nil is a nil bulk string). It fills a in place (a is the
// caller's, on its stack): the Wire reads one per op, on the loop.
func (a *answer) readResp(r *redcon.RESP) {
	a.raw = r.Raw
	switch r.Type {
	case redcon.Error:
		a.shape, a.err = shapeError, errors.New(string(r.Data))
	case redcon.Integer:
		a.shape, a.n = shapeInt, r.Int()
	case redcon.Bulk:
		if r.Data == nil {
			a.shape = shapeNil
		}
	case redcon.Array:
		if r.Count != 3 {
			break
		}
		var items [3]redcon.RESP
		i := 0
		r.ForEach(func(e redcon.RESP) bool { items[i] = e; i++; return i < 3 })
		if items[0].Type == redcon.Bulk && items[1].Type == redcon.Bulk && items[2].Type == redcon.Integer {
			a.shape, a.n = shapeRecord, items[2].Int()
			a.value = append([]byte{}, items[0].Data...)
			a.ttlAt = items[1].Data
		}
	}
}

// readMsg reads one element of block.lua's array as rueidis gave it (RESP2
// or RESP3); m must outlive a (it is kept for an error's wording). A Redis
// error stays rueidis's *RedisError, which callers look into
// (rueidis.IsRedisErr).
func (a *answer) readMsg(m *rueidis.RedisMessage) {
	a.msg = m
	if err := m.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			a.shape = shapeNil
		} else {
			a.shape, a.err = shapeError, err
		}
		return
	}
	if m.IsInt64() {
		a.shape = shapeInt
		a.n, _ = m.ToInt64()
		return
	}
	arr, err := m.ToArray()
	if err != nil || len(arr) != 3 {
		return
	}
	v, err1 := arr[0].ToString()
	ts, err2 := arr[1].ToString()
	live, err3 := arr[2].ToInt64()
	if err1 == nil && err2 == nil && err3 == nil {
		a.shape, a.n, a.value, a.ttlAt = shapeRecord, live, []byte(v), []byte(ts)
	}
}
