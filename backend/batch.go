package backend

// OpKind names the store method an Op stands for.
type OpKind uint8

const (
	OpPrepare OpKind = iota + 1
	OpGet
	OpRollback
	OpReprepare
	OpMove
)

// Op is one store call as data, so that the PK commands of one client
// pipeline can be handed to a store at once. Fields its method does not
// take are ignored: Prepare takes NS, Key, Value, Exp; Get NS, Key;
// Rollback NS, Key, Cond; Reprepare NS, Key, Value, Cond, Exp; Move NS, Key
// (new), Value (new), OldKey, OldValue, Exp.
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

// Result is the outcome of one Op: OK for Prepare, Rollback and Reprepare;
// Record and Found for Get; Move for Move; Err when the store failed (the op
// may or may not have taken effect).
type Result struct {
	OK     bool
	Record Record
	Found  bool
	Move   MoveResult
	// Page is a Scan's answer.
	Page Page
	Err  error
}

// OpMPrepare is PK.MPREPARE: Entries all reserved, or none, with Exp.
// OpScan is one page of PK.SCAN: NS, Key (the store's position, nil at the
// start) and Count. A batch runs a scan on its own (commands.Handler does),
// so Batchers need not know it.
const (
	OpMPrepare OpKind = OpMove + 1 + iota
	OpScan
)
