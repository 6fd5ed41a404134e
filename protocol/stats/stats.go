// Package stats holds the server's counters, what INFO and the metrics
// endpoint show: commands by name and outcome, their latency, errors by
// prefix, store calls and batch sizes, connections.
//
// It owns the counters and their snapshot, and how a reply's outcome is
// told (from a commands.Reply, an error code, or a frame's type). It may
// not touch connections, the event loops or the store: package protocol
// counts into it, and reads it back for INFO.
//
// Counting is on the hot path, so it costs a few atomic adds per command on
// counters that belong to one event loop (no lock, no allocation, no
// contention between loops), plus two clock reads per read of a
// connection's input, shared by the commands that read brings. A scrape or
// INFO sums the loops' counters.
package stats

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/commands"
)

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
	// NumOutcomes is how many outcomes there are.
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{"ok", "1", "0", "nil", "mismatch", "error", "unavailable"}

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
	outcomes [NumOutcomes]atomic.Uint64
	latency  hist // nanoseconds
}

// Loop is the counters of one event loop; only that loop adds to them.
type Loop struct {
	cmds    []cmdCounters                       // by Table index
	errs    [commands.NumPrefixes]atomic.Uint64 // by prefix (Errorstats)
	backend []hist                              // one store call for a batch, nanoseconds, by op (opOf)
	batch   hist                                // commands per store call
	table   *Table
}

// Record counts one command's reply: idx is its Table index, code its
// error's (NoError for none).
func (l *Loop) Record(idx int, o Outcome, code commands.ErrCode, took time.Duration) {
	l.cmds[idx].outcomes[o].Add(1)
	if code != commands.NoError {
		l.CountError(code)
	}
	l.cmds[idx].latency.observe(uint64(max(took, 0)), LatencyBounds)
}

// RecordN counts n replies of one command and one outcome that took took
// nanoseconds each (the commands of one read share their latency); their
// errors are counted apart (CountError).
func (l *Loop) RecordN(idx int, o Outcome, n, took uint64) {
	cc := &l.cmds[idx]
	cc.outcomes[o].Add(n)
	cc.latency.observeN(took, n, LatencyBounds)
}

// CountError counts an error reply by its prefix (Errorstats).
func (l *Loop) CountError(code commands.ErrCode) { l.errs[code.Prefix()].Add(1) }

// StoreCall counts one store call for a batch of n commands, cmds (n may
// be fewer: those that validation refused never reach the store). Its
// latency is counted under the op its commands share (pk.get: get), or
// "mixed" when they are of several kinds.
func (l *Loop) StoreCall(cmds [][][]byte, n int, took time.Duration) {
	l.backend[l.table.opOf(cmds)].observe(uint64(max(took, 0)), LatencyBounds)
	l.batch.observe(uint64(n), BatchBounds)
}

// opOf is the op index of a store call's commands: their command's Table
// index when they all have the same name, else mixed. It costs one lookup
// and a comparison of each command's name with the first's.
func (t *Table) opOf(cmds [][][]byte) int {
	if len(cmds) == 0 || len(cmds[0]) == 0 {
		return t.mixed()
	}
	first := cmds[0][0]
	for _, c := range cmds[1:] {
		if len(c) == 0 || !bytes.Equal(c[0], first) && !bytes.EqualFold(c[0], first) {
			return t.mixed()
		}
	}
	return t.Index(first)
}

// mixed is the op index of a store call whose commands are of several
// kinds, after the Table's names.
func (t *Table) mixed() int { return len(t.names) }

// opNames are the op label values, by op index: the command names without
// "pk.", then "mixed".
func (t *Table) opNames() []string {
	ops := make([]string, 0, len(t.names)+1)
	for _, n := range t.names {
		ops = append(ops, strings.TrimPrefix(n, "pk."))
	}
	return append(ops, "mixed")
}

// Table maps command names to counter indexes: every PK command and
// connection command, then "unknown" for names nobody knows (one label
// value, so that a client cannot grow the metrics).
type Table struct {
	names  []string
	byName map[string]int
}

// NewTable is the table of the PK commands and of connNames, the
// connection commands.
func NewTable(connNames []string) Table {
	var names []string
	for _, s := range commands.Specs() {
		names = append(names, s.Name)
	}
	names = append(names, connNames...)
	slices.Sort(names)
	names = append(names, "unknown")
	t := Table{names: names, byName: make(map[string]int, len(names))}
	for i, n := range names {
		t.byName[n] = i
	}
	return t
}

func (t *Table) unknown() int { return len(t.names) - 1 }

// Index finds name's index, in any case, without allocating.
func (t *Table) Index(name []byte) int {
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

// Counters are the server's counters: per loop, and the server's own.
type Counters struct {
	Table    Table
	Received atomic.Int64 // connections accepted or refused
	Rejected atomic.Int64 // refused at max-clients
	// The event loops' own backend connections (upstream): how many were
	// made, to name them, and how many are up.
	UpstreamSeq atomic.Int64
	UpstreamsUp atomic.Int64

	mu    sync.Mutex
	loops map[any]*Loop
}

// New makes the counters of a server whose connection commands are
// connNames.
func New(connNames []string) *Counters {
	return &Counters{Table: NewTable(connNames), loops: make(map[any]*Loop)}
}

// ForLoop returns the counters of the event loop named by key, made on
// first use. A nil key (tests that drive a connection by hand, the
// portable transport) gets counters of its own too.
func (s *Counters) ForLoop(key any) *Loop {
	s.mu.Lock()
	defer s.mu.Unlock()
	ls := s.loops[key]
	if ls == nil {
		ls = &Loop{
			cmds:    make([]cmdCounters, len(s.Table.names)),
			backend: make([]hist, s.Table.mixed()+1),
			batch:   newHist(BatchBounds),
			table:   &s.Table,
		}
		for i := range ls.cmds {
			ls.cmds[i].latency = newHist(LatencyBounds)
		}
		for i := range ls.backend {
			ls.backend[i] = newHist(LatencyBounds)
		}
		s.loops[key] = ls
	}
	return ls
}

// Classify tells a Reply's outcome and, for an error, its code.
func Classify(r *commands.Reply) (Outcome, commands.ErrCode) {
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
		return ErrorOutcome(r.Err)
	}
	return OutcomeOK, commands.NoError
}

// ErrorOutcome tells an error reply's outcome from its code. A reply of
// kind Error without a code (none is made so) counts as an ERR.
func ErrorOutcome(code commands.ErrCode) (Outcome, commands.ErrCode) {
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

// FrameOutcome tells the outcome of a reply that is not an error from the
// type of the RESP frame at the start of b (the connection commands write
// theirs directly): an integer 1 or 0, a null, or any other.
func FrameOutcome(b []byte) Outcome {
	if len(b) < 3 {
		return OutcomeOK
	}
	switch b[0] {
	case ':':
		switch {
		case b[1] == '1' && b[2] == '\r':
			return Outcome1
		case b[1] == '0' && b[2] == '\r':
			return Outcome0
		}
	case '_':
		return OutcomeNil
	case '$', '*':
		if b[1] == '-' {
			return OutcomeNil
		}
	}
	return OutcomeOK
}

// CommandStats are one command's counters, summed over the loops.
type CommandStats struct {
	Name     string
	Outcomes [NumOutcomes]uint64
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
	TxQueuedBytes      int64 // held by open transactions (INFO's tx_queued_bytes)
	MaxTxMemory        int64 // --max-tx-memory (0: none)
	ClientsMemory      int64 // held by connections' buffers (INFO's mem_clients_normal)
	MaxClientsMemory   int64 // --max-clients-memory (0: none; INFO's maxmemory_clients)
	EvictedClients     int64 // closed for --max-clients-memory (INFO's evicted_clients)
	ConnectionsTotal   int64 // total_connections_received
	RejectedTotal      int64 // rejected_connections (max-clients)
	CommandsProcessed  int64
	Commands           []CommandStats // every command known, used or not
	Errors             map[string]uint64
	BackendLatency     []Hist   // per store call, nanoseconds, by op: BackendOps[i]
	BackendOps         []string // op names: the commands' without "pk.", then "mixed"
	BatchSize          Hist     // commands per store call
	LoopBackendConns   int64    // event loops' own backend connections up (a standalone Redis)
	Uptime             time.Duration
	Backend            string
	Version            string
	OutcomeNames       []string
	LatencyBoundsNanos []uint64
	BatchBounds        []uint64
}

// Snapshot sums the counters; the server adds what is its own (clients,
// commands processed, uptime, names).
func (s *Counters) Snapshot() Snapshot {
	snap := Snapshot{
		ConnectionsTotal:   s.Received.Load(),
		RejectedTotal:      s.Rejected.Load(),
		LoopBackendConns:   s.UpstreamsUp.Load(),
		Commands:           make([]CommandStats, len(s.Table.names)),
		BackendLatency:     make([]Hist, s.Table.mixed()+1),
		BackendOps:         s.Table.opNames(),
		Errors:             map[string]uint64{},
		OutcomeNames:       outcomeNames[:],
		LatencyBoundsNanos: LatencyBounds,
		BatchBounds:        BatchBounds,
	}
	for i, n := range s.Table.names {
		snap.Commands[i].Name = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ls := range s.loops {
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
		for i := range ls.backend {
			ls.backend[i].addTo(&snap.BackendLatency[i])
		}
		ls.batch.addTo(&snap.BatchSize)
	}
	for i := range snap.Commands {
		if snap.Commands[i].Latency.Counts == nil {
			snap.Commands[i].Latency.Counts = make([]uint64, len(LatencyBounds)+1)
		}
	}
	for i := range snap.BackendLatency {
		if snap.BackendLatency[i].Counts == nil {
			snap.BackendLatency[i].Counts = make([]uint64, len(LatencyBounds)+1)
		}
	}
	if snap.BatchSize.Counts == nil {
		snap.BatchSize.Counts = make([]uint64, len(BatchBounds)+1)
	}
	return snap
}
