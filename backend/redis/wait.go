package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/backend"
)

// Replication safety (?wait=N on the URL). Redis replicates
// asynchronously: a master that answers a write and dies before a replica
// has it loses the write in the failover. With wait set, a batch's write
// scripts are followed by one WAIT N timeout on the same connection, and
// its writes are answered only when at least N replicas acknowledged them;
// otherwise each write fails with a ReplicationError (-UNAVAILABLE: it
// may or may not survive). WAIT covers every write the connection sent
// before it, so one per batch is enough; reads need none.

// ReplicationError is a write that fewer replicas than wait acknowledged
// within wait-timeout. The master ran it; whether it survives a failover
// is not known.
type ReplicationError struct {
	Acked, Want int
	After       time.Duration
	Err         error // WAIT itself failed (nil: it answered too few)
}

func (e *ReplicationError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("replication: WAIT %d failed: %v", e.Want, e.Err)
	}
	return fmt.Sprintf("replication: %d of %d replicas acknowledged the write within %s", e.Acked, e.Want, e.After)
}

func (e *ReplicationError) Unwrap() error { return e.Err }

// waitFor reports whether calls need a WAIT after them.
func (s *Store) waitFor(calls []call) bool {
	if s.target.wait == 0 {
		return false
	}
	for _, cl := range calls {
		if cl.writes {
			return true
		}
	}
	return false
}

// waitCmd is the WAIT of a batch. rueidis sends a command list with WAIT
// in it on one dedicated connection, in order, so the WAIT follows the
// scripts on the connection that sent them.
func (s *Store) waitCmd(c rueidis.Client) rueidis.Completed {
	return c.B().Wait().Numreplicas(int64(s.target.wait)).Timeout(s.waitTimeout.Milliseconds()).Build()
}

// waited reads WAIT's reply: nil when enough replicas acknowledged.
func (s *Store) waited(r rueidis.RedisResult) error {
	n, err := r.AsInt64()
	if err != nil {
		return &ReplicationError{Want: s.target.wait, After: s.waitTimeout, Err: s.noAnswer(err)}
	}
	if n < int64(s.target.wait) {
		return &ReplicationError{Acked: int(n), Want: s.target.wait, After: s.waitTimeout}
	}
	return nil
}

// exec runs calls as one pipeline (EVALSHA; EVAL again for those answered
// NOSCRIPT) and returns their replies. With wait set and writes among
// them, it follows them with WAIT on the same connection; repl is then the
// failure of every write when too few replicas acknowledged.
func (s *Store) exec(ctx context.Context, c rueidis.Client, calls []call) (rs []rueidis.RedisResult, repl error) {
	wait := s.waitFor(calls)
	cmds := make(rueidis.Commands, len(calls), len(calls)+1)
	for k, cl := range calls {
		cmds[k] = c.B().Evalsha().Sha1(cl.sc.sha).Numkeys(int64(len(cl.keys))).Key(cl.keys...).Arg(cl.args...).Build()
	}
	if wait {
		cmds = append(cmds, s.waitCmd(c))
	}
	rs = c.DoMulti(ctx, cmds...)
	if wait {
		repl = s.waited(rs[len(calls)])
		rs = rs[:len(calls)]
	}
	// NOSCRIPT: the script did not run (Redis restarted or flushed its
	// cache). Run those again with EVAL, which caches them; with wait, in
	// one list with a WAIT of their own, since they were not written
	// before the first one.
	var again []int
	for k, r := range rs {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			s.noscript.Add(1)
			again = append(again, k)
		}
	}
	if len(again) == 0 {
		return rs, repl
	}
	retry := make([]call, len(again))
	cmds = cmds[:0]
	for j, k := range again {
		cl := calls[k]
		retry[j] = cl
		cmds = append(cmds, c.B().Eval().Script(cl.sc.src).Numkeys(int64(len(cl.keys))).Key(cl.keys...).Arg(cl.args...).Build())
	}
	waitAgain := s.waitFor(retry)
	if waitAgain {
		cmds = append(cmds, s.waitCmd(c))
	}
	rs2 := c.DoMulti(ctx, cmds...)
	if waitAgain && repl == nil {
		repl = s.waited(rs2[len(again)])
	}
	for j, k := range again {
		rs[k] = rs2[j]
	}
	return rs, repl
}

// The Wire's side: the same WAIT after a batch's requests on the event
// loop's own connection (loopconn.Wire's AppendSync, ReadSync, FailSync).

// AppendSync appends WAIT after ops' requests when wait is set and ops
// has a write.
func (w *Wire) AppendSync(dst []byte, ops []backend.Op) ([]byte, bool) {
	if w.s.target.wait == 0 {
		return dst, false
	}
	for _, op := range ops {
		if op.Kind != backend.OpGet {
			dst = redcon.AppendArray(dst, 3)
			dst = redcon.AppendBulkString(dst, "WAIT")
			dst = redcon.AppendBulkInt(dst, int64(w.s.target.wait))
			dst = redcon.AppendBulkInt(dst, w.s.waitTimeout.Milliseconds())
			return dst, true
		}
	}
	return dst, false
}

// ReadSync reads WAIT's reply at the start of b (n is 0 until it is
// complete); when too few replicas acknowledged, every write of ops that
// had succeeded fails with a ReplicationError.
func (w *Wire) ReadSync(b []byte, ops []backend.Op, res []backend.Result) int {
	n, r := redcon.ReadNextRESP(b)
	if n == 0 {
		return 0
	}
	var err error
	switch {
	case r.Type != redcon.Integer:
		err = &ReplicationError{Want: w.s.target.wait, After: w.s.waitTimeout, Err: fmt.Errorf("unexpected reply %q", r.Raw)}
	case r.Int() < int64(w.s.target.wait):
		err = &ReplicationError{Acked: int(r.Int()), Want: w.s.target.wait, After: w.s.waitTimeout}
	}
	if err != nil {
		failWrites(ops, res, err)
	}
	return n
}

// FailSync fails the writes of ops when the connection went before WAIT's
// reply: they ran, but no replica is known to have them.
func (w *Wire) FailSync(ops []backend.Op, res []backend.Result, cause error) {
	failWrites(ops, res, &ReplicationError{Want: w.s.target.wait, After: w.s.waitTimeout,
		Err: fmt.Errorf("connection to %s lost: %w", w.s.target.describe(), cause)})
}

func failWrites(ops []backend.Op, res []backend.Result, err error) {
	for k, op := range ops {
		if op.Kind != backend.OpGet && res[k].Err == nil {
			res[k] = backend.Result{Err: err}
		}
	}
}
