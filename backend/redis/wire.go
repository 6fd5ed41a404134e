package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
)

// Wire is the store's requests and replies in RESP, for a caller that
// drives its own connection to Redis: each event loop of package protocol
// writes the EVALSHA of a batch on a connection of its own (package
// backend/redis/loopconn) and reads the replies there when they arrive, so no
// goroutine waits on Redis and the loop serves other clients
// meanwhile. The scripts, keys and error wording are the Store's; only the
// transport differs from Batch.
type Wire struct{ s *Store }

// Wire returns the store's Wire, or nil when the caller must use Batch: a
// Sentinel or Cluster topology (the client follows failovers and slots)
// and TLS are the rueidis client's to handle.
func (s *Store) Wire() *Wire {
	if s.target.topology != Standalone || s.target.tls != nil {
		return nil
	}
	return &Wire{s}
}

// Dial opens a connection to Redis ready for Append's requests: logged in,
// on the URL's database, with the scripts loaded so that its first
// requests find them.
func (w *Wire) Dial(ctx context.Context) (net.Conn, error) {
	t := w.s.target
	dial := w.s.dialFn
	if dial == nil {
		d := net.Dialer{Timeout: w.s.timeout}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	nc, err := dial(ctx, t.addrs[0])
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.describe(), err)
	}
	if err := w.handshake(ctx, nc); err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("connect to %s: %w", t.describe(), err)
	}
	return nc, nil
}

func (w *Wire) handshake(ctx context.Context, nc net.Conn) error {
	t := w.s.target
	deadline := time.Now().Add(w.s.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := nc.SetDeadline(deadline); err != nil {
		return err
	}
	var req []byte
	n := 0
	cmd := func(args ...string) {
		req = redcon.AppendArray(req, len(args))
		for _, a := range args {
			req = redcon.AppendBulkString(req, a)
		}
		n++
	}
	switch {
	case t.username != "":
		cmd("AUTH", t.username, t.password)
	case t.password != "":
		cmd("AUTH", t.password)
	}
	if t.db != 0 {
		cmd("SELECT", strconv.Itoa(t.db))
	}
	cmd("CLIENT", "SETNAME", "prepkey-loop")
	for _, sc := range w.s.scripts.all() {
		cmd("SCRIPT", "LOAD", sc.src)
	}
	if _, err := nc.Write(req); err != nil {
		return err
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for n > 0 {
		m, r := redcon.ReadNextRESP(buf)
		if m == 0 {
			k, err := nc.Read(chunk)
			if err != nil {
				if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
					return &noAnswerError{after: w.s.timeout, err: err}
				}
				return err
			}
			buf = append(buf, chunk[:k]...)
			continue
		}
		if r.Type == redcon.Error {
			return errors.New(string(r.Data))
		}
		buf, n = buf[m:], n-1
	}
	return nc.SetDeadline(time.Time{})
}

// Append appends the requests of ops: EVALSHA of block.lua for each run of
// them that blockSpan bounds (so one per batch unless the batch is long),
// which Redis runs as one script each. A scan takes round trips of its
// own (SCAN, then the reads): it has no request here (loopconn.Wire), and
// the caller sends it through the store's client in its place.
//
// Each op is encoded twice (encodeBlockOp): its keys, counted with its
// arguments, then its arguments; the request's head, which holds the
// counts, goes in before the keys once they are written. A pass only to
// count, before, was 3 passes, each formatting the op's expiry in a new
// string.
func (w *Wire) Append(dst []byte, ops []backend.Op) []byte {
	for len(ops) > 0 {
		k := blockSpan(ops)
		if k == 0 { // a scan: no request
			ops = ops[1:]
			continue
		}
		block := ops[:k]
		ops = ops[k:]
		start := len(dst)
		keys := respSink{ks: w.s.keys, dst: dst, keys: true}
		known := true
		for i := range block {
			if encodeBlockOp(&keys, &block[i]) != nil {
				known = false
				break
			}
		}
		if !known {
			// Not an op of package backend. Send a request Redis refuses,
			// so that a reply still comes for it and Read reports a
			// failure.
			dst = redcon.AppendArray(keys.dst[:start], 1)
			dst = redcon.AppendBulkString(dst, "EVALSHA")
			continue
		}
		var buf [128]byte
		head := redcon.AppendArray(buf[:0], 4+keys.nkeys+keys.nargs)
		head = redcon.AppendBulkString(head, "EVALSHA")
		head = redcon.AppendBulkString(head, w.s.scripts.block.sha)
		head = redcon.AppendBulkInt(head, int64(keys.nkeys))
		dst = slices.Insert(keys.dst, start, head...)
		args := respSink{dst: redcon.AppendBulkString(dst, w.s.retention)}
		for i := range block {
			_ = encodeBlockOp(&args, &block[i])
		}
		dst = args.dst
	}
	return dst
}

// respSink appends a block's keys (keys set), counting them and the
// arguments, or its arguments, as RESP bulk strings, straight from the
// ops' buffers.
type respSink struct {
	ks           keyCodec
	dst          []byte
	keys         bool
	nkeys, nargs int
}

func (t *respSink) key(ns string, key []byte) {
	if t.keys {
		t.dst = t.ks.appendBulkRecordKey(t.dst, ns, key)
		t.nkeys++
	}
}

func (t *respSink) arg(a string) {
	if t.keys {
		t.nargs++
	} else {
		t.dst = redcon.AppendBulkString(t.dst, a)
	}
}

func (t *respSink) argInt(n int64) {
	if t.keys {
		t.nargs++
	} else {
		t.dst = redcon.AppendBulkInt(t.dst, n)
	}
}

func (t *respSink) argBytes(a []byte) {
	if t.keys {
		t.nargs++
	} else {
		t.dst = redcon.AppendBulk(t.dst, a)
	}
}

// Read decodes, at the start of b, the reply to the first request that
// Append wrote for ops, into res: it covers ops[:k]. ops[0] is not a scan
// (it has no request). n is 0 while b holds no complete reply. again
// reports that ops[:k] are to go through Batch: NOSCRIPT (the script did
// not run: Redis restarted or its cache was flushed; Batch loads it
// again). A Redis error reply
// (LOADING, READONLY, OOM…) is a failure in each res.Err, and an error in
// the script's array (WRONGTYPE at one key) that op's failure, worded as
// Batch words them.
func (w *Wire) Read(b []byte, ops []backend.Op, res []backend.Result) (n, k int, again bool) {
	n, r := redcon.ReadNextRESP(b)
	if n == 0 {
		return 0, 0, false
	}
	k = blockSpan(ops)
	if r.Type == redcon.Error {
		msg := string(r.Data)
		if strings.HasPrefix(msg, "NOSCRIPT") {
			return n, k, true
		}
		for i := range ops[:k] {
			res[i] = backend.Result{Err: w.s.fail(context.Background(), opName(ops[i].Kind), errors.New(msg))}
		}
		return n, k, false
	}
	if r.Type != redcon.Array || r.Count != k {
		err := fmt.Errorf("unexpected reply %q", r.Raw)
		for i := range ops[:k] {
			res[i] = backend.Result{Err: w.s.fail(context.Background(), opName(ops[i].Kind), err)}
		}
		return n, k, false
	}
	i := 0
	r.ForEach(func(e redcon.RESP) bool {
		var a answer
		a.readResp(&e)
		var err error
		if res[i], err = blockResult(ops[i].Kind, &a); err != nil {
			res[i] = backend.Result{Err: w.s.opError(context.Background(), &ops[i], err)}
		}
		i++
		return true
	})
	return n, k, false
}

// MaxReply is loopconn.Wire's bound on one reply: the largest reply of one
// block.lua call, maxBlockOps gets of a value of maxValue (the scripts
// refuse a larger one), each with its array, ttlAt and flag, and room for
// an error line. A longer reply, which the scripts never send, closes the
// connection rather than being buffered whole.
func (w *Wire) MaxReply() int { return maxBlockOps*(w.s.maxValue+64) + 64<<10 }

// Lost is the failure of op when the connection went before its reply
// came: the op may or may not have run.
func (w *Wire) Lost(op backend.Op, cause error) error {
	return w.s.fail(context.Background(), opName(op.Kind), fmt.Errorf("connection to %s lost: %w", w.s.target.describe(), cause))
}

// Late is the cause Lost reports when Redis did not answer within the
// timeout.
func (w *Wire) Late() error { return &noAnswerError{after: w.s.timeout, err: context.DeadlineExceeded} }

func opName(k backend.OpKind) string {
	switch k {
	case backend.OpPrepare:
		return "prepare"
	case backend.OpGet:
		return "get"
	case backend.OpRollback:
		return "rollback"
	case backend.OpReprepare:
		return "reprepare"
	case backend.OpMove:
		return "move"
	case backend.OpMPrepare:
		return "mprepare"
	default:
		return "batch"
	}
}
