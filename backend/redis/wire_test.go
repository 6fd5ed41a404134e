package redis

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
)

// wireStore is a commands.Store that takes every call over the store's
// Wire, on connections of its own, the way package protocol does from its
// event loops (one request, then its reply). So the conformance suite
// checks the Wire's requests and the decoding of every reply.
type wireStore struct {
	*Store
	w     *Wire
	conns chan net.Conn
}

func newWireStore(t *testing.T, s *Store) *wireStore {
	t.Helper()
	w := s.Wire()
	require.NotNil(t, w)
	ws := &wireStore{Store: s, w: w, conns: make(chan net.Conn, 16)}
	t.Cleanup(func() {
		close(ws.conns)
		for c := range ws.conns {
			_ = c.Close()
		}
	})
	return ws
}

func (ws *wireStore) do(ctx context.Context, op backend.Op) backend.Result {
	var nc net.Conn
	select {
	case nc = <-ws.conns:
	default:
		var err error
		if nc, err = ws.w.Dial(ctx); err != nil {
			return backend.Result{Err: err}
		}
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	ops, res := []backend.Op{op}, make([]backend.Result, 1)
	if _, err := nc.Write(ws.w.Append(nil, ops)); err != nil {
		_ = nc.Close()
		return backend.Result{Err: ws.w.Lost(op, err)}
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, k, again := ws.w.Read(buf, ops, res)
		if n > 0 {
			if k != 1 {
				return backend.Result{Err: fmt.Errorf("read %d ops of 1", k)}
			}
			select {
			case ws.conns <- nc:
			default:
				_ = nc.Close()
			}
			if n != len(buf) {
				return backend.Result{Err: fmt.Errorf("%d bytes after the reply", len(buf)-n)}
			}
			if again {
				ws.Run(ctx, ops, res, backend.Pipelined)
			}
			return res[0]
		}
		k, err := nc.Read(chunk)
		if err != nil {
			_ = nc.Close()
			return backend.Result{Err: ws.w.Lost(op, err)}
		}
		buf = append(buf, chunk[:k]...)
	}
}

func (ws *wireStore) Prepare(ctx context.Context, ns string, key, value []byte, exp backend.Expiry) (bool, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpPrepare, NS: ns, Key: key, Value: value, Exp: exp})
	return r.OK, r.Err
}

func (ws *wireStore) Get(ctx context.Context, ns string, key []byte) (backend.Record, bool, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpGet, NS: ns, Key: key})
	return r.Record, r.Found, r.Err
}

func (ws *wireStore) Rollback(ctx context.Context, ns string, key []byte, ifeq backend.Cond) (bool, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpRollback, NS: ns, Key: key, Cond: ifeq})
	return r.OK, r.Err
}

func (ws *wireStore) Reprepare(ctx context.Context, ns string, key, value []byte, ifeq backend.Cond, exp backend.Expiry) (bool, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpReprepare, NS: ns, Key: key, Value: value, Cond: ifeq, Exp: exp})
	return r.OK, r.Err
}

func (ws *wireStore) Move(ctx context.Context, ns string, newKey, newValue, oldKey, oldValue []byte, exp backend.Expiry) (backend.MoveResult, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpMove, NS: ns, Key: newKey, Value: newValue, OldKey: oldKey, OldValue: oldValue, Exp: exp})
	return r.Move, r.Err
}

func (ws *wireStore) MPrepare(ctx context.Context, entries []backend.Entry, exp backend.Expiry) (bool, error) {
	r := ws.do(ctx, backend.Op{Kind: backend.OpMPrepare, Entries: entries, Exp: exp})
	return r.OK, r.Err
}

// TestWireScanHasNoRequest: a scan is many round trips, never one
// request: the Wire writes none for it (the caller sends it through the
// store's client in its place), and the ops on either side of it are each
// a script call of their own, as Read expects (blockSpan ends a call at a
// scan).
func TestWireScanHasNoRequest(t *testing.T) {
	s := openStore(t, "redis://127.0.0.1:1", Config{})
	w := s.Wire()
	scan := backend.Op{Kind: backend.OpScan, NS: "ns", Count: 10}
	require.Empty(t, w.Append(nil, []backend.Op{scan}))
	get := backend.Op{Kind: backend.OpGet, NS: "ns", Key: []byte("k")}
	one := w.Append(nil, []backend.Op{get})
	require.Equal(t, string(one)+string(one), string(w.Append(nil, []backend.Op{get, scan, get})))
}

func TestConformanceWireMiniredis(t *testing.T) {
	if testing.Short() {
		t.Skip("the whole suite again, over the Wire (make test runs it)")
	}
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		f := startFake(t)
		s := openStore(t, f.url(), Config{Options: opts})
		return storetest.Harness{Store: newWireStore(t, s), Now: f.clock, Advance: f.advance}
	})
}

func TestConformanceWireStandalone(t *testing.T) {
	t.Parallel()
	url := serverURL(t, envStandalone)
	storetest.Run(t, func(t *testing.T, opts backend.Options) storetest.Harness {
		return storetest.Harness{Store: newWireStore(t, openStore(t, url, Config{Options: opts}))}
	})
}

// TestWireRead decodes every kind of reply a script gives, and the ones it
// must not take for an answer: a partial reply waits, a Redis error or an
// unexpected reply is a failure, never a false.
func TestWireRead(t *testing.T) {
	s := openStore(t, "redis://127.0.0.1:1", Config{})
	w := s.Wire()
	prepare := backend.Op{Kind: backend.OpPrepare}
	get := backend.Op{Kind: backend.OpGet}
	move := backend.Op{Kind: backend.OpMove}
	rows := []struct {
		name  string
		op    backend.Op
		reply string
		want  backend.Result
		err   string // the failure's message, when there is one
		again bool
	}{
		{"won", prepare, ":1\r\n", backend.Result{OK: true}, "", false},
		{"lost", prepare, ":0\r\n", backend.Result{}, "", false},
		{"absent", get, "$-1\r\n", backend.Result{}, "", false},
		{"live", get, "*3\r\n$1\r\nv\r\n$13\r\n1750000000123\r\n:1\r\n",
			backend.Result{Found: true, Record: backend.Record{Value: []byte("v"), TTLAt: 1750000000123, Live: true}}, "", false},
		{"expired", get, "*3\r\n$0\r\n\r\n$1\r\n5\r\n:0\r\n",
			backend.Result{Found: true, Record: backend.Record{Value: []byte{}, TTLAt: 5}}, "", false},
		{"moved", move, ":1\r\n", backend.Result{Move: backend.Moved}, "", false},
		{"new key taken", move, ":0\r\n", backend.Result{Move: backend.NewKeyTaken}, "", false},
		{"old key mismatch", move, ":2\r\n", backend.Result{Move: backend.OldKeyMismatch}, "", false},
		{"script flushed", prepare, "-NOSCRIPT No matching script. Please use EVAL.\r\n", backend.Result{}, "", true},
		{"read-only replica", prepare, "-READONLY You can't write against a read only replica.\r\n", backend.Result{},
			"redis: prepare: READONLY You can't write against a read only replica.", false},
		{"loading", get, "-LOADING Redis is loading the dataset in memory\r\n", backend.Result{},
			"redis: get: LOADING Redis is loading the dataset in memory", false},
		{"code out of range", prepare, ":2\r\n", backend.Result{}, `redis: prepare: unexpected reply ":2\r\n"`, false},
		{"move code out of range", move, ":3\r\n", backend.Result{}, `redis: move: unexpected reply ":3\r\n"`, false},
		{"status for a flag", prepare, "+OK\r\n", backend.Result{}, `redis: prepare: unexpected reply "+OK\r\n"`, false},
		{"nil for a flag", prepare, "$-1\r\n", backend.Result{}, `redis: prepare: unexpected reply "$-1\r\n"`, false},
		{"short record", get, "*2\r\n$1\r\nv\r\n$1\r\n0\r\n", backend.Result{}, `redis: get: unexpected reply "*2\r\n$1\r\nv\r\n$1\r\n0\r\n"`, false},
		{"ttlAt not a number", get, "*3\r\n$1\r\nv\r\n$1\r\nx\r\n:1\r\n", backend.Result{}, `redis: get: unexpected reply "*3\r\n$1\r\nv\r\n$1\r\nx\r\n:1\r\n"`, false},
		{"the op's own error", prepare, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", backend.Result{},
			"redis: prepare: WRONGTYPE Operation against a key holding the wrong kind of value", false},
	}
	// Each row's reply is the op's answer in block.lua's array of one,
	// except Redis's own errors, which answer the whole call.
	whole := map[string]bool{"script flushed": true, "read-only replica": true, "loading": true}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			reply := r.reply
			if !whole[r.name] {
				reply = "*1\r\n" + reply
			}
			ops, res := []backend.Op{r.op}, make([]backend.Result, 1)
			for cut := range len(reply) {
				n, _, _ := w.Read([]byte(reply[:cut]), ops, res)
				require.Zero(t, n, "a reply cut at %d bytes is not complete", cut)
			}
			n, k, again := w.Read([]byte(reply+":1\r\n"), ops, res)
			require.Equal(t, len(reply), n)
			require.Equal(t, 1, k)
			require.Equal(t, r.again, again)
			if r.err != "" {
				require.EqualError(t, res[0].Err, r.err)
				return
			}
			require.NoError(t, res[0].Err)
			require.Equal(t, r.want, res[0])
		})
	}
	// NOSCRIPT answers the whole call: every op of it goes again (none ran),
	// and a Redis error fails each of them; the ops after the call's are
	// left to the next reply.
	three := []backend.Op{prepare, get, prepare}
	res := make([]backend.Result, 3)
	n, k, again := w.Read([]byte("-NOSCRIPT No matching script.\r\n"), three, res)
	require.Equal(t, 31, n)
	require.Equal(t, 3, k)
	require.True(t, again)
	n, k, again = w.Read([]byte("-LOADING Redis is loading\r\n"), three, res)
	require.Equal(t, 27, n)
	require.Equal(t, 3, k)
	require.False(t, again)
	require.EqualError(t, res[0].Err, "redis: prepare: LOADING Redis is loading")
	require.EqualError(t, res[1].Err, "redis: get: LOADING Redis is loading")
	require.EqualError(t, res[2].Err, "redis: prepare: LOADING Redis is loading")
	scanAfter := []backend.Op{prepare, get, {Kind: backend.OpScan}, prepare}
	n, k, again = w.Read([]byte("*2\r\n:1\r\n$-1\r\n+PONG\r\n"), scanAfter, make([]backend.Result, 4))
	require.Equal(t, 13, n)
	require.Equal(t, 2, k, "the call ends before the scan")
	require.False(t, again)

	// A reply that is not an array of one answer per op fails each op.
	for _, reply := range []string{":1\r\n", "*2\r\n:1\r\n:1\r\n", "*0\r\n"} {
		res := make([]backend.Result, 1)
		n, k, again := w.Read([]byte(reply), []backend.Op{prepare}, res)
		require.Equal(t, len(reply), n)
		require.Equal(t, 1, k)
		require.False(t, again)
		require.EqualError(t, res[0].Err, fmt.Sprintf("redis: prepare: unexpected reply %q", reply))
	}
}

// TestWireDial logs in and selects the URL's database, and reports a
// refused login or a Redis that does not answer.
func TestWireDial(t *testing.T) {
	f := startFake(t)
	f.RequireAuth("secret")
	s := openStore(t, "redis://:secret@"+f.Addr()+"/3", Config{KeyPrefix: "pk:"})
	ws := newWireStore(t, s)
	ok, err := ws.Prepare(context.Background(), "ns", []byte("k"), []byte("v"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, f.DB(3).Exists("pk:{ns:k}"), "the record is in database 3")
	require.False(t, f.DB(0).Exists("pk:{ns:k}"))

	bad := openStore(t, "redis://:wrong@"+f.Addr(), Config{})
	_, err = bad.Wire().Dial(context.Background())
	require.ErrorContains(t, err, "connect to "+f.Addr()+": WRONGPASS")

	down := openStore(t, "redis://127.0.0.1:1", Config{})
	_, err = down.Wire().Dial(context.Background())
	require.ErrorContains(t, err, "connect to 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused")

	hung := openStore(t, "redis://"+silentServer(t), Config{Timeout: 100 * time.Millisecond})
	began := time.Now()
	_, err = hung.Wire().Dial(context.Background())
	require.ErrorContains(t, err, "no answer within 100ms")
	require.Less(t, time.Since(began), 2*time.Second)
}

// TestWireOnlyStandalone: Sentinel, Cluster and TLS stay with the client,
// which follows failovers and slots.
func TestWireOnlyStandalone(t *testing.T) {
	for url, wired := range map[string]bool{
		"redis://127.0.0.1:6379":                    true,
		"rediss://127.0.0.1:6379":                   false,
		"redis+sentinel://127.0.0.1:26379/mymaster": false,
		"redis+cluster://127.0.0.1:7000":            false,
	} {
		s := openStore(t, url, Config{})
		require.Equal(t, wired, s.Wire() != nil, url)
	}
}

// TestWireUnknownOp: an op kind the Wire does not know still gets exactly
// one reply from Redis, a failure, so the replies after it stay in step.
func TestWireUnknownOp(t *testing.T) {
	f := startFake(t)
	ws := newWireStore(t, openStore(t, f.url(), Config{}))
	res := ws.do(context.Background(), backend.Op{Kind: 99, NS: "ns", Key: []byte("k")})
	require.ErrorContains(t, res.Err, "redis: batch: ERR wrong number of arguments")
	ok, err := ws.Prepare(context.Background(), "ns", []byte("k"), []byte("v"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
}

// wireRun sends ops over the Wire as package protocol does and reads the
// replies; none may be answered "again".
func wireRun(t *testing.T, w *Wire, ops []backend.Op) []backend.Result {
	t.Helper()
	res := make([]backend.Result, len(ops))
	wireExchange(t, context.Background(), w, ops, res, func([]backend.Op, []backend.Result) {
		t.Fatal("an op answered again")
	})
	return res
}

// wireExchange writes ops' requests at once on a connection of its own, as
// an event loop does, and reads the replies into res as they come; each
// run of ops that Read answers "again" goes to again.
func wireExchange(t *testing.T, ctx context.Context, w *Wire, ops []backend.Op, res []backend.Result,
	again func([]backend.Op, []backend.Result)) {
	t.Helper()
	nc, err := w.Dial(ctx)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Write(w.Append(nil, ops))
	require.NoError(t, err)
	var buf []byte
	chunk := make([]byte, 64<<10)
	for i := 0; i < len(ops); {
		n, k, answeredAgain := w.Read(buf, ops[i:], res[i:])
		if n == 0 {
			m, err := nc.Read(chunk)
			require.NoError(t, err)
			buf = append(buf, chunk[:m]...)
			continue
		}
		require.Positive(t, k)
		if answeredAgain {
			again(ops[i:i+k], res[i:i+k])
		}
		buf, i = buf[n:], i+k
	}
	require.Empty(t, buf, "bytes after the replies")
}

// TestWireAppendAsBatch: the Wire writes, straight from the ops' buffers,
// the very EVALSHA that the store's client sends (blockArgs), for every
// kind of op, keys that need escaping included.
func TestWireAppendAsBatch(t *testing.T) {
	s := openStore(t, "redis://127.0.0.1:1", Config{KeyPrefix: "p%x:", Options: backend.Options{Retention: time.Hour}})
	b := func(s string) []byte { return []byte(s) }
	ops := []backend.Op{
		{Kind: backend.OpPrepare, NS: "ns", Key: b("a}b%c"), Value: b("v\r\n"), Exp: backend.Expiry{Kind: backend.ExpireAfter, Millis: 1500}},
		{Kind: backend.OpGet, NS: "ns", Key: b("k")},
		{Kind: backend.OpRollback, NS: "ns", Key: b("k"), Cond: backend.IfEq(b("x"))},
		{Kind: backend.OpRollback, NS: "ns", Key: b("k")},
		{Kind: backend.OpReprepare, NS: "ns", Key: b("k"), Value: b(""), Cond: backend.IfEq(b("")), Exp: backend.Expiry{Kind: backend.KeepTTL}},
		{Kind: backend.OpMove, NS: "ns", Key: b("n"), Value: b("nv"), OldKey: b("o"), OldValue: b("ov"), Exp: backend.Expiry{Kind: backend.ExpireAt, Millis: 1 << 50}},
		{Kind: backend.OpMPrepare, Entries: []backend.Entry{{NS: "a", Key: b("1"), Value: b("x")}, {NS: "b", Key: b("2"), Value: b("y")}}},
	}
	keys, args, err := s.blockArgs(ops)
	require.NoError(t, err)
	want := redcon.AppendArray(nil, 3+len(keys)+len(args))
	for _, a := range append([]string{"EVALSHA", s.scripts.block.sha, strconv.Itoa(len(keys))}, append(keys, args...)...) {
		want = redcon.AppendBulkString(want, a)
	}
	require.Equal(t, string(want), string(s.Wire().Append(nil, ops)))
	require.Contains(t, keys, "p%x:{ns:a%7Db%25c}")
}
