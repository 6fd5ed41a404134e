package protocol

import (
	"strings"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/commands"
)

// Transactions (MULTI/EXEC/DISCARD), as Redis answers them: after MULTI
// each command is checked as it would be on its own and answered +QUEUED,
// or with its error, which makes EXEC answer -EXECABORT. EXEC submits the PK
// commands of the block to the store as one isolated unit (runBlock:
// backend.Isolated), and answers one array: each PK command's reply, and the connection
// commands of the block run in their place, as Redis runs them.
//
// WATCH and UNWATCH are refused: a reservation is guarded by IFEQ
// conditions, checked in the same atomic step as the write, which is what
// WATCH emulates. Inside MULTI they are answered at once, not queued, and
// leave the transaction open and unharmed, as WATCH inside MULTI in Redis.

// A queue is bounded so that a client cannot grow the sidecar by opening a
// transaction and never ending it. Past either bound the command is refused
// (so EXEC answers -EXECABORT) and the queue is dropped at once. A block of
// 1024 commands is far above what clients use transactions for, and one
// isolated unit that size still holds its keys (locks, or the Redis
// server) for well under a millisecond or one fsync.
//
// Those bound one connection; Config.MaxTxMemory bounds all of them
// together (300 connections at 8 MiB each grew it to 4-6 GB), counted in
// Server.txBytes as queuedSize: past it the command is refused with -OOM,
// the same way.
const (
	maxQueuedCommands = 1024
	maxQueuedBytes    = 8 << 20 // of arguments, over the whole queue
)

// argOverhead is what a queued argument holds beyond its bytes: its slice
// header (24 bytes) and its copy's smallest allocation (8). Empty and
// one-byte arguments cost that much each, and a queue may hold a million
// of them (1024 commands of 1024 arguments), so the server-wide bound
// counts it.
const argOverhead = 32

// queuedSize is what queuing args holds, as Config.MaxTxMemory counts it.
func queuedSize(args [][]byte) int64 {
	n := int64(0)
	for _, a := range args {
		n += int64(len(a)) + argOverhead
	}
	return n
}

// tx is a connection's transaction, between MULTI and EXEC or DISCARD.
type tx struct {
	on      bool
	refused bool // a command was refused while queued: EXEC aborts
	cmds    [][][]byte
	bytes   int
	held    int64 // reserved in Server.txBytes for cmds (queuedSize)
}

// endTx ends the connection's transaction and releases what its queue
// held from the server-wide count: at DISCARD, QUIT, a refusal, and when
// the connection closes (Closed). EXEC takes the queue instead (exec).
func (c *conn) endTx() {
	c.srv.txBytes.Add(-c.tx.held)
	c.tx = tx{}
}

// The transaction commands outside MULTI; inside it, queue answers them.
func (c *conn) multi([][]byte) {
	c.endTx() // nothing is queued outside MULTI: this only starts afresh
	c.tx.on = true
	c.out.Simple("OK")
}

func (c *conn) execCmd([][]byte)    { c.out.Fail(commands.ErrExecWithoutMulti) }
func (c *conn) discardCmd([][]byte) { c.out.Fail(commands.ErrDiscardWithoutMulti) }

// watch answers WATCH and UNWATCH, anywhere.
func (c *conn) watch(args [][]byte) {
	c.out.Failf(commands.ErrNoWatch, strings.ToUpper(string(args[0])))
}

// queue answers a command read inside MULTI.
func (c *conn) queue(args [][]byte) {
	c.srv.processed.Add(1)
	name := strings.ToLower(string(args[0]))
	switch name {
	case "multi", "exec", "discard":
		if len(args) != 1 {
			c.refuse(commands.ErrArity.Replyf(name))
			return
		}
	}
	switch name {
	case "multi":
		c.out.Fail(commands.ErrNestedMulti) // the transaction stays open, as in Redis
		return
	case "discard":
		c.endTx()
		c.out.Simple("OK")
		return
	case "exec":
		c.exec()
		return
	case "watch", "unwatch":
		c.watch(args)
		return
	case "quit": // Redis does not queue QUIT either
		c.endTx()
		c.runConnCmd(args)
		return
	}
	if c.srv.handler.IsPK(args[0]) {
		if r, ok := c.srv.handler.Check(args); !ok {
			c.refuse(r)
			return
		}
	} else if _, refusal, found := c.srv.connCmds.Lookup(args); !found {
		c.refuse(commands.UnknownCommand(args))
		return
	} else if refusal.Err != commands.NoError {
		c.refuse(refusal)
		return
	}
	if c.tx.refused {
		// The block will not run: what it holds is dropped already.
		c.out.Simple("QUEUED")
		return
	}
	size := 0
	for _, a := range args {
		size += len(a)
	}
	if len(c.tx.cmds) >= maxQueuedCommands || c.tx.bytes+size > maxQueuedBytes {
		c.refuse(commands.ErrQueueFull.Replyf(maxQueuedCommands, maxQueuedBytes))
		return
	}
	held := queuedSize(args)
	if !c.srv.reserveTx(held) {
		c.refuse(commands.ErrTxMemory.Replyf(c.srv.cfg.MaxTxMemory))
		return
	}
	c.tx.cmds = append(c.tx.cmds, cloneArgs(args)) // args point into gnet's buffer
	c.tx.bytes += size
	c.tx.held += held
	c.out.Simple("QUEUED")
}

// reserveTx counts n more bytes queued in transactions, unless that passes
// MaxTxMemory. Several event loops queue at once: the bound is checked in
// the same step as the count moves, so they never pass it together.
func (s *Server) reserveTx(n int64) bool {
	for {
		cur := s.txBytes.Load()
		if s.cfg.MaxTxMemory > 0 && cur+n > s.cfg.MaxTxMemory {
			return false
		}
		if s.txBytes.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

// refuse answers a command refused while queued; EXEC will abort, so the
// queue is dropped now.
func (c *conn) refuse(r commands.Reply) {
	c.out.Reply(&r)
	c.endTx()
	c.tx.on, c.tx.refused = true, true
}

// exec ends the transaction: -EXECABORT after a refused command, else the
// block runs off the loop (it waits on the store) and the connection's
// later input waits for its reply, so replies keep their order.
func (c *conn) exec() {
	t := c.tx
	c.tx = tx{}
	if t.refused {
		r := commands.ExecAbortQueued()
		c.out.Reply(&r)
		return
	}
	c.goBusy(0)
	c.runBlock(t)
}

// runBlock submits a transaction's PK commands to the store as one
// submission, Isolated, on the loop (exec): the same call as every PK
// command's, under the same deadline (its watch, unless the store
// finishes at once). When the store has been silent that long, EXEC
// answers -UNAVAILABLE for the whole block (it may or may not take
// effect, as for any command), whatever the store does; a store that
// cannot stop (a hung fsync) keeps only the block, which is the
// transaction's own copy, counted (MaxTxMemory) until EXEC's reply is
// written. A block without PK commands, or one EXEC refuses (a scan),
// does not reach the store.
//
// EXEC's reply interleaves the block's connection commands, in their
// place, and one may wait on the backend (INFO pings it): so answerBlock
// always runs off the loop, on a goroutine of its own when the store
// finished on the loop (at once, or on the loop's own connection).
func (c *conn) runBlock(t tx) {
	var pk [][][]byte
	for _, args := range t.cmds {
		if c.srv.handler.IsPK(args[0]) {
			pk = append(pk, args)
		}
	}
	replies := make([]commands.Reply, len(pk))
	parsed := c.srv.handler.ParseBatch(pk, replies)
	if len(parsed.Ops) == 0 {
		go c.answerBlock(t, pk, replies, commands.Reply{}, true)
		return
	}
	if abort, ok := parsed.ExecCheck(); !ok {
		go c.answerBlock(t, pk, replies, abort, false)
		return
	}
	s := &backend.Submission{Ops: parsed.Ops, Res: make([]backend.Result, len(parsed.Ops)),
		Isolation: backend.Isolated, Timeout: c.srv.deadline}
	if c.loop != nil {
		s.Loop = c.loop
	}
	s.Done = func(s *backend.Submission, how backend.Completion) {
		var abort commands.Reply
		ok := false
		switch how {
		case backend.Dropped:
			return
		case backend.Late:
			abort = commands.Unavailable(s.LateErr)
		default:
			abort, ok = parsed.ExecAnswer(s.Res, s.Err, replies)
		}
		if how == backend.AtOnce || how == backend.OnLoop {
			go c.answerBlock(t, pk, replies, abort, ok)
			return
		}
		c.answerBlock(t, pk, replies, abort, ok)
	}
	if c.srv.info.Watched() {
		s.Watch()
	}
	c.srv.handler.Submit(s)
}

// answerBlock writes EXEC's reply, releases what the block held queued and
// resumes the connection. It runs off the loop, on a connection at the
// store: the loop leaves it alone meanwhile. ok is false when the block
// did not run: abort is EXEC's reply.
func (c *conn) answerBlock(t tx, pk [][][]byte, replies []commands.Reply, abort commands.Reply, ok bool) {
	c.recordBlock(pk, replies, abort, ok)
	if !ok {
		c.out.Reply(&abort)
	} else {
		c.out.Array(len(t.cmds))
		j := 0
		for _, args := range t.cmds {
			if c.srv.handler.IsPK(args[0]) {
				c.out.Reply(&replies[j])
				j++
				continue
			}
			// Already off the loop: even a command that waits on the
			// backend (INFO) runs here, in its place in the reply.
			c.runConnCmd(args)
		}
	}
	c.srv.txBytes.Add(-t.held)
	c.resumeLater()
}
