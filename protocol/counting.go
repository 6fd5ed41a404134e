package protocol

import (
	"bytes"
	"math"
	"time"

	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/stats"
)

// How the connections count into package stats: what each command's reply
// was, when it was written.

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() stats.Snapshot {
	snap := s.stats.Snapshot()
	snap.ConnectedClients = s.clients.Load()
	snap.MaxClients = s.cfg.MaxClients
	snap.TxQueuedBytes = s.txBytes.Load()
	snap.MaxTxMemory = s.cfg.MaxTxMemory
	snap.ClientsMemory = s.mem.held.Load()
	snap.MaxClientsMemory = s.mem.limit
	snap.EvictedClients = s.mem.evicted.Load()
	snap.CommandsProcessed = s.processed.Load()
	snap.Uptime = time.Since(s.started)
	snap.Backend = s.cfg.Backend
	snap.Version = s.cfg.Version
	return snap
}

// pendingNote is n commands of one kind and one outcome answered, one
// after the other, in the current read, waiting for the time their replies
// are written: the commands of a read share their latency and are counted
// together, so a pipeline of 16 PK.PREPAREs costs three atomic adds for
// its counts and latencies, not two per command.
type pendingNote struct {
	idx int32
	o   stats.Outcome
	n   uint32
}

// note counts the reply that the command named name wrote to out from at,
// when out had written errs error replies; it is counted when the replies
// are written (see flushNotes). A command that went off the loop is
// counted where its work ends.
func (c *conn) note(name []byte, at int, errs uint32) {
	if c.st.atStore() || at >= len(c.out.B) {
		return
	}
	// outcomeSince, written out: one call on the way of every command
	// answered on the loop.
	o := stats.FrameOutcome(c.out.B[at:])
	idx := int32(c.statIndex(name))
	if c.out.Errs != errs {
		var code commands.ErrCode
		o, code = stats.ErrorOutcome(c.out.LastErr)
		c.stats.CountError(code) // rare: at once
	}
	if k := len(c.notes) - 1; k >= 0 && c.notes[k].idx == idx && c.notes[k].o == o && c.notes[k].n < math.MaxUint32 {
		c.notes[k].n++
		return
	}
	c.notes = append(c.notes, pendingNote{idx: idx, o: o, n: 1})
}

// outcomeSince tells the outcome of the reply written to out from at, when
// out had written errs error replies: an error by its code (writer.errLine),
// any other reply by its frame's type.
func (c *conn) outcomeSince(at int, errs uint32) (stats.Outcome, commands.ErrCode) {
	if c.out.Errs != errs {
		return stats.ErrorOutcome(c.out.LastErr)
	}
	return stats.FrameOutcome(c.out.B[at:]), commands.NoError
}

// flushNotes counts the commands noted since the read began, and their
// latency, now that their replies are written; and the commands the loop
// answered (total_commands_processed). INFO runs off the loop, after
// goBusy has called it: it counts every command before it.
func (c *conn) flushNotes() {
	if c.answered > 0 {
		c.srv.processed.Add(c.answered)
		c.answered = 0
	}
	if len(c.notes) == 0 {
		return
	}
	took := uint64(max(time.Since(c.began), 0))
	for _, n := range c.notes {
		c.stats.RecordN(int(n.idx), n.o, uint64(n.n), took)
	}
	c.notes = c.notes[:0]
}

// statIndex is the counter index of name; a connection mostly sends the
// same command again, so the last one is remembered.
func (c *conn) statIndex(name []byte) int {
	if c.lastIdx >= 0 && bytes.Equal(name, c.lastName) {
		return c.lastIdx
	}
	i := c.srv.stats.Table.Index(name)
	if len(name) <= 32 {
		c.lastName = append(c.lastName[:0], name...)
		c.lastIdx = i
	}
	return i
}

// recordRun counts the replies of the connection's run, written at now
// (the batch's: one clock read for all its runs). As note does on the
// loop, a run's commands of one kind and one outcome, one after the
// other, are counted together (they share their latency): one Record per
// command was 3 atomic adds and 130 of a PK.PREPARE's 10,000 instructions
// on redis:// at pipeline 16 (callgrind; docs/benchmarks.md, "Instruction
// counts").
func (c *conn) recordRun(replies []commands.Reply, now time.Time) {
	took := uint64(max(now.Sub(c.began), 0))
	var run pendingNote
	for i, args := range c.runArgs {
		idx := int32(c.statIndex(args[0]))
		o, code := stats.Classify(&replies[i])
		if code != commands.NoError {
			c.stats.CountError(code)
		}
		if run.n > 0 && run.idx == idx && run.o == o {
			run.n++
			continue
		}
		if run.n > 0 {
			c.stats.RecordN(int(run.idx), run.o, uint64(run.n), took)
		}
		run = pendingNote{idx: idx, o: o, n: 1}
	}
	if run.n > 0 {
		c.stats.RecordN(int(run.idx), run.o, uint64(run.n), took)
	}
}

// noteQueued counts a command read inside MULTI: EXEC, DISCARD and the
// other commands answered at once (an error, or the transaction's end) are
// counted as such; a command answered +QUEUED is counted when EXEC runs it
// (recordBlock), as Redis counts it.
func (c *conn) noteQueued(name []byte, at int, errs uint32) {
	if c.st.atStore() || at >= len(c.out.B) || bytes.HasPrefix(c.out.B[at:], []byte("+QUEUED\r\n")) {
		return
	}
	c.note(name, at, errs)
}

// recordBlock counts EXEC and the PK commands of its block, run now; when
// the block did not run (ran false), EXEC is counted with abort's outcome
// and its commands are not counted.
func (c *conn) recordBlock(pk [][][]byte, replies []commands.Reply, abort commands.Reply, ran bool) {
	took := time.Since(c.began)
	table := &c.srv.stats.Table
	o, code := stats.OutcomeOK, commands.NoError
	if !ran {
		o, code = stats.Classify(&abort)
	}
	c.stats.Record(table.Index([]byte("exec")), o, code, took)
	if !ran {
		return
	}
	for i, args := range pk {
		o, code := stats.Classify(&replies[i])
		c.stats.Record(table.Index(args[0]), o, code, took)
	}
}
