package backend

// OpKind names the PK command an Op stands for.
type OpKind uint8

const (
	OpPrepare OpKind = iota + 1
	OpGet
	OpRollback
	OpReprepare
	OpMove
)

// Op is one PK command's store step as data: what Runner.Run takes, a list
// of them at once (a client pipeline, the runs of several clients, a
// transaction block). Fields its kind does not take are ignored: Prepare
// takes NS, Key, Value, Exp; Get NS, Key; Rollback NS, Key, Cond;
// Reprepare NS, Key, Value, Cond, Exp; Move NS, Key (new), Value (new),
// OldKey, OldValue, Exp; MPrepare Entries, Exp.
type Op struct {
	Kind             OpKind
	NS               string
	Key, Value       []byte
	Cond             Cond
	Exp              Expiry
	OldKey, OldValue []byte
	// Entries are the (namespace, key, value) triples of an MPrepare.
	Entries []Entry
	// Count is a Scan's hint for the records to read.
	Count int
	// Keep filters a Scan's records (MATCH, LIVE, EXPIRED) after they are
	// read; nil keeps all.
	Keep func(ScanRecord) bool
}

// Result is the outcome of one Op: OK for Prepare, Rollback, Reprepare and
// MPrepare; Record and Found for Get; Move for Move; Err when the store
// failed (the op may or may not have taken effect) or refused the op's
// arguments (Refusal).
//
// A Result is returned by value through every layer of a command alone
// (the store, Handler.Do, the reply), so it is kept small: a scan's page,
// rare, is behind a pointer, and the flags share a word. At 128 bytes,
// with the page inline, its copies were a fifth of the 200 instructions
// the one store contract added to a PK.PREPARE on memory: (callgrind,
// docs/benchmarks.md "The architecture step").
type Result struct {
	Record Record
	Err    error
	// Page is a Scan's answer.
	Page  *Page
	OK    bool
	Found bool
	Move  MoveResult
}

// Clear zeroes r field by field. On WebAssembly `*r = Result{}` is Go's
// memory.fill of its 80 bytes, which wazero runs as seven calls of memmove
// (a fill copies what it has filled so far, doubling): a store that reuses
// the caller's results clears each this way (issue 34, docs/wasm.md).
func (r *Result) Clear() {
	r.Record.Value, r.Record.TTLAt, r.Record.Live = nil, 0, false
	r.Err, r.Page = nil, nil
	r.OK, r.Found, r.Move = false, false, 0
}

// OpMPrepare is PK.MPREPARE: Entries all reserved, or none, with Exp.
// OpScan is one page of PK.SCAN: NS, Key (the store's position, nil at the
// start) and Count. It is package commands' own: a store's Run never gets
// one (a scan is its own method, Scan), so stores need not know it.
const (
	OpMPrepare OpKind = OpMove + 1 + iota
	OpScan
)

// Runs reports whether k is a kind a store's Run takes (all but OpScan).
func (k OpKind) Runs() bool { return k >= OpPrepare && k <= OpMPrepare }
