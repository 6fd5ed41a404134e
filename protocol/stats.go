package protocol

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// The server counts what INFO and the metrics endpoint show. Counting is on
// the hot path, so it costs a few atomic adds per command on counters that
// belong to one event loop (no lock, no allocation, no contention between
// loops), plus two clock reads per read of a connection's input, shared by
// the commands that read brings. A scrape or INFO sums the loops' counters.

// Outcome is what a reply says, for the commands-by-outcome counter.
type Outcome uint8

const (
	// OutcomeOK is any other reply: a value, +OK, PONG, an array.
	OutcomeOK Outcome = iota
	Outcome1
	Outcome0
	OutcomeNil
	OutcomeMismatch
	// OutcomeError is an error reply other than MISMATCH and UNAVAILABLE:
	// arity, syntax, limits, NOAUTH (rejected_calls in INFO).
	OutcomeError
	// OutcomeUnavailable is -UNAVAILABLE: the backend failed (failed_calls).
	OutcomeUnavailable
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "1", "0", "nil", "mismatch", "error", "unavailable"}

func (o Outcome) String() string { return outcomeNames[o] }

// LatencyBounds are the upper bounds of the latency histograms'
// buckets, in nanoseconds: from a memory store's microseconds to a backend
// timeout's seconds.
var LatencyBounds = []uint64{
	1e3, 2.5e3, 5e3, 10e3, 25e3, 50e3, 100e3, 250e3, 500e3,
	1e6, 2.5e6, 5e6, 10e6, 25e6, 50e6, 100e6, 250e6, 500e6,
	1e9, 2.5e9, 5e9, 10e9,
}

// BatchBounds are the upper bounds of the batch-size histogram's buckets.
var BatchBounds = []uint64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}

// hist is a histogram of atomic counters: counts[i] counts observations
// at most bounds[i] and above bounds[i-1]; the last one, above every bound.
type hist struct {
	counts []atomic.Uint64
	sum    atomic.Uint64
}

func newHist(bounds []uint64) hist { return hist{counts: make([]atomic.Uint64, len(bounds)+1)} }

func (h *hist) observe(v uint64, bounds []uint64) { h.observeN(v, 1, bounds) }

// observeN counts n observations of v.
func (h *hist) observeN(v, n uint64, bounds []uint64) {
	i := 0
	for i < len(bounds) && v > bounds[i] {
		i++
	}
	h.counts[i].Add(n)
	h.sum.Add(v * n)
}

// Hist is a histogram's snapshot: Counts are per bucket (not cumulative),
// the last one above every bound.
type Hist struct {
	Counts []uint64
	Sum    uint64
}

// Count is the number of observations.
func (h Hist) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

func (h *hist) addTo(dst *Hist) {
	if dst.Counts == nil {
		dst.Counts = make([]uint64, len(h.counts))
	}
	for i := range h.counts {
		dst.Counts[i] += h.counts[i].Load()
	}
	dst.Sum += h.sum.Load()
}

// cmdCounters are one command's counters on one loop.
type cmdCounters struct {
	outcomes [numOutcomes]atomic.Uint64
	latency  hist // nanoseconds
}

// loopStats are the counters of one event loop.
type loopStats struct {
	cmds    []cmdCounters                       // by statTable index
	errs    [commands.NumPrefixes]atomic.Uint64 // by prefix (Errorstats)
	backend hist                                // one store call for a batch, nanoseconds
	batch   hist                                // commands per store call
}

// statTable maps command names to counter indexes: every PK command and
// connection command, then "unknown" for names nobody knows (one label
// value, so that a client cannot grow the metrics).
type statTable struct {
	names  []string
	byName map[string]int
}

func newStatTable(connCmds map[string]connCmd) statTable {
	var names []string
	for _, s := range commands.Specs() {
		names = append(names, s.Name)
	}
	for name := range connCmds {
		names = append(names, name)
	}
	slices.Sort(names)
	names = append(names, "unknown")
	t := statTable{names: names, byName: make(map[string]int, len(names))}
	for i, n := range names {
		t.byName[n] = i
	}
	return t
}

func (t *statTable) unknown() int { return len(t.names) - 1 }

// index finds name's index without allocating.
func (t *statTable) index(name []byte) int {
	var buf [32]byte
	if len(name) > len(buf) {
		return t.unknown()
	}
	lower := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	if i, ok := t.byName[string(lower)]; ok {
		return i
	}
	return t.unknown()
}

// stats are the server's counters.
type stats struct {
	table    statTable
	received atomic.Int64 // connections accepted or refused
	rejected atomic.Int64 // refused at max-clients
	// The event loops' own backend connections (upstream): how many were
	// made, to name them, and how many are up.
	upstreamSeq atomic.Int64
	upstreamsUp atomic.Int64

	mu    sync.Mutex
	loops map[connLoop]*loopStats
}

func newStats(connCmds map[string]connCmd) *stats {
	return &stats{table: newStatTable(connCmds), loops: make(map[connLoop]*loopStats)}
}

// forLoop returns loop's counters, made on first use. A nil loop (tests
// that drive a conn by hand) gets counters of its own too.
func (s *stats) forLoop(loop connLoop) *loopStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.loops[loop]
	if ls == nil {
		ls = &loopStats{
			cmds:    make([]cmdCounters, len(s.table.names)),
			backend: newHist(LatencyBounds),
			batch:   newHist(BatchBounds),
		}
		for i := range ls.cmds {
			ls.cmds[i].latency = newHist(LatencyBounds)
		}
		s.loops[loop] = ls
	}
	return ls
}

// record counts one command's reply.
func (s *stats) record(ls *loopStats, idx int, o Outcome, code commands.ErrCode, took time.Duration) {
	ls.cmds[idx].outcomes[o].Add(1)
	if code != commands.NoError {
		countError(ls, code)
	}
	ls.cmds[idx].latency.observe(uint64(max(took, 0)), LatencyBounds)
}

// countError counts an error reply by its prefix (Errorstats).
func countError(ls *loopStats, code commands.ErrCode) { ls.errs[code.Prefix()].Add(1) }

// classify tells a Reply's outcome and, for an error, its code.
func classify(r *commands.Reply) (Outcome, commands.ErrCode) {
	switch r.Kind {
	case commands.Int:
		switch r.Int {
		case 1:
			return Outcome1, commands.NoError
		case 0:
			return Outcome0, commands.NoError
		}
	case commands.Nil, commands.NilArray:
		return OutcomeNil, commands.NoError
	case commands.Error:
		return errorOutcome(r.Err)
	}
	return OutcomeOK, commands.NoError
}

// errorOutcome tells an error reply's outcome from its code. A reply of
// kind Error without a code (none is made so) counts as an ERR.
func errorOutcome(code commands.ErrCode) (Outcome, commands.ErrCode) {
	if code == commands.NoError {
		code = commands.ErrSyntax // any code of prefix ERR
	}
	switch code.Prefix() {
	case commands.PrefixUNAVAILABLE:
		return OutcomeUnavailable, code
	case commands.PrefixMISMATCH:
		return OutcomeMismatch, code
	}
	return OutcomeError, code
}

// CommandStats are one command's counters, summed over the loops.
type CommandStats struct {
	Name     string
	Outcomes [numOutcomes]uint64
	Latency  Hist // nanoseconds
}

// Calls is how many times the command was answered.
func (c CommandStats) Calls() uint64 {
	var n uint64
	for _, v := range c.Outcomes {
		n += v
	}
	return n
}

// Snapshot is the server's counters at one time, for INFO and metrics.
type Snapshot struct {
	ConnectedClients   int64
	MaxClients         int
	ConnectionsTotal   int64 // total_connections_received
	RejectedTotal      int64 // rejected_connections (max-clients)
	CommandsProcessed  int64
	Commands           []CommandStats // every command known, used or not
	Errors             map[string]uint64
	BackendLatency     Hist  // per store call, nanoseconds
	BatchSize          Hist  // commands per store call
	LoopBackendConns   int64 // event loops' own backend connections up (a standalone Redis)
	Uptime             time.Duration
	Backend            string
	Version            string
	OutcomeNames       []string
	LatencyBoundsNanos []uint64
	BatchBounds        []uint64
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Snapshot {
	st := s.stats
	snap := Snapshot{
		ConnectedClients:   s.clients.Load(),
		MaxClients:         s.cfg.MaxClients,
		ConnectionsTotal:   st.received.Load(),
		RejectedTotal:      st.rejected.Load(),
		LoopBackendConns:   st.upstreamsUp.Load(),
		CommandsProcessed:  s.processed.Load(),
		Commands:           make([]CommandStats, len(st.table.names)),
		Errors:             map[string]uint64{},
		Uptime:             time.Since(s.started),
		Backend:            s.cfg.Backend,
		Version:            s.cfg.Version,
		OutcomeNames:       outcomeNames[:],
		LatencyBoundsNanos: LatencyBounds,
		BatchBounds:        BatchBounds,
	}
	for i, n := range st.table.names {
		snap.Commands[i].Name = n
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, ls := range st.loops {
		for i := range ls.cmds {
			cs := &snap.Commands[i]
			for o := range ls.cmds[i].outcomes {
				cs.Outcomes[o] += ls.cmds[i].outcomes[o].Load()
			}
			ls.cmds[i].latency.addTo(&cs.Latency)
		}
		for p := range ls.errs {
			if n := ls.errs[p].Load(); n > 0 {
				snap.Errors[commands.Prefix(p).String()] += n
			}
		}
		ls.backend.addTo(&snap.BackendLatency)
		ls.batch.addTo(&snap.BatchSize)
	}
	for i := range snap.Commands {
		if snap.Commands[i].Latency.Counts == nil {
			snap.Commands[i].Latency.Counts = make([]uint64, len(LatencyBounds)+1)
		}
	}
	if snap.BackendLatency.Counts == nil {
		snap.BackendLatency.Counts = make([]uint64, len(LatencyBounds)+1)
	}
	if snap.BatchSize.Counts == nil {
		snap.BatchSize.Counts = make([]uint64, len(BatchBounds)+1)
	}
	return snap
}

// pendingNote is n commands of one kind and one outcome answered, one
// after the other, in the current read, waiting for the time their replies
// are written: the commands of a read share their latency and are counted
// together, so a pipeline of 16 PK.PREPAREs costs three atomic adds for
// its counts and latencies, not two per command.
type pendingNote struct {
	idx int32
	o   Outcome
	n   uint32
}

// note counts the reply that the command named name wrote to out from at,
// when out had written errs error replies; it is counted when the replies
// are written (see flushNotes). A command that went off the loop is
// counted where its work ends.
func (c *conn) note(name []byte, at int, errs uint32) {
	if c.busy || at >= len(c.out.b) {
		return
	}
	o, code := c.out.outcomeSince(at, errs)
	idx := int32(c.statIndex(name))
	if code != commands.NoError {
		countError(c.stats, code) // rare: at once
	}
	if k := len(c.notes) - 1; k >= 0 && c.notes[k].idx == idx && c.notes[k].o == o && c.notes[k].n < math.MaxUint32 {
		c.notes[k].n++
		return
	}
	c.notes = append(c.notes, pendingNote{idx: idx, o: o, n: 1})
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
		cc := &c.stats.cmds[n.idx]
		cc.outcomes[n.o].Add(uint64(n.n))
		cc.latency.observeN(took, uint64(n.n), LatencyBounds)
	}
	c.notes = c.notes[:0]
}

// statIndex is the counter index of name; a connection mostly sends the
// same command again, so the last one is remembered.
func (c *conn) statIndex(name []byte) int {
	if c.lastIdx >= 0 && bytes.Equal(name, c.lastName) {
		return c.lastIdx
	}
	i := c.srv.stats.table.index(name)
	if len(name) <= 32 {
		c.lastName = append(c.lastName[:0], name...)
		c.lastIdx = i
	}
	return i
}

// outcomeSince tells the outcome of the reply written from at, when errs
// error replies had been written: an error by its code (errLine), any other
// reply by its frame's type (an integer 1 or 0, a null).
func (w *writer) outcomeSince(at int, errs uint32) (Outcome, commands.ErrCode) {
	if w.errs != errs {
		return errorOutcome(w.lastErr)
	}
	b := w.b[at:]
	if len(b) < 3 {
		return OutcomeOK, commands.NoError
	}
	switch b[0] {
	case ':':
		switch {
		case b[1] == '1' && b[2] == '\r':
			return Outcome1, commands.NoError
		case b[1] == '0' && b[2] == '\r':
			return Outcome0, commands.NoError
		}
	case '_':
		return OutcomeNil, commands.NoError
	case '$', '*':
		if b[1] == '-' {
			return OutcomeNil, commands.NoError
		}
	}
	return OutcomeOK, commands.NoError
}

// recordRuns counts the replies of conns' runs, written now.
func recordRuns(conns []*conn, replies []commands.Reply) {
	if len(conns) == 0 {
		return
	}
	now := time.Now()
	i := 0
	for _, c := range conns {
		took := now.Sub(c.began)
		for _, args := range c.runArgs {
			o, p := classify(&replies[i])
			c.srv.stats.record(c.stats, c.statIndex(args[0]), o, p, took)
			i++
		}
	}
}

// recordStoreCall counts one store call for a batch of n commands.
func recordStoreCall(ls *loopStats, n int, took time.Duration) {
	ls.backend.observe(uint64(max(took, 0)), LatencyBounds)
	ls.batch.observe(uint64(n), BatchBounds)
}

// newRunID is a random 40-hex-digit id, as Redis's run_id.
func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// noteQueued counts a command read inside MULTI: EXEC, DISCARD and the
// other commands answered at once (an error, or the transaction's end) are
// counted as such; a command answered +QUEUED is counted when EXEC runs it
// (recordBlock), as Redis counts it.
func (c *conn) noteQueued(name []byte, at int, errs uint32) {
	if c.busy || at >= len(c.out.b) || bytes.HasPrefix(c.out.b[at:], []byte("+QUEUED\r\n")) {
		return
	}
	c.note(name, at, errs)
}

// recordBlock counts EXEC and the PK commands of its block, run now; when
// the block did not run (ran false), EXEC is counted with abort's outcome
// and its commands are not counted.
func (c *conn) recordBlock(pk [][][]byte, replies []commands.Reply, abort commands.Reply, ran bool) {
	took := time.Since(c.began)
	st := c.srv.stats
	o, p := OutcomeOK, commands.NoError
	if !ran {
		o, p = classify(&abort)
	}
	st.record(c.stats, st.table.index([]byte("exec")), o, p, took)
	if !ran {
		return
	}
	for i, args := range pk {
		o, p := classify(&replies[i])
		st.record(c.stats, st.table.index(args[0]), o, p, took)
	}
}
