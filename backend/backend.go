// Package backend holds what every reservation store shares: the record it
// keeps, the expiry and condition options of the PK commands, and the results
// callers must tell apart, and the contract every store satisfies (Store,
// store.go: Run, RunOne, Scan, Secret, Ping, Info), declared here once for
// the commands, the server and the conformance suite (storetest). The
// stores themselves live in the sub-packages.
//
// A PK command reaches a store as data, an Op (batch.go), in a list that
// one call runs (Runner.Run, run.go), each op atomic on its own (Pipelined:
// a command alone, a pipeline, the runs of several clients) or all of them
// as one isolated unit (Isolated: EXEC). Each store switches over the kinds
// of ops in one place (its Run, or the function its Run calls for an op);
// Calls is the one adapter that turns Run back into per-command calls
// (Prepare, Get, ...), for tests and tools. How the server takes commands
// to a store (Drive, drive.go) is said by the store's opener, not by the
// store.
package backend

import (
	"bytes"
	"time"
)

// Forever is the TTLAt of a record that never expires. Zero is free for it
// because the contract only accepts positive absolute times.
const Forever int64 = 0

// Record is what a store keeps for one (namespace, key).
type Record struct {
	Value []byte
	// TTLAt is the Unix time in milliseconds at which the record stops being
	// live, or Forever.
	TTLAt int64
	// Live reports whether the record was live on the store's clock when read.
	// An expired record is still returned while it is retained, as evidence
	// for reconciliation.
	Live bool
}

// LiveAt reports whether a record with this ttlAt is live at nowMs.
func LiveAt(ttlAt, nowMs int64) bool { return ttlAt == Forever || nowMs < ttlAt }

// ExpiryKind says how an Expiry's Millis is read.
type ExpiryKind uint8

const (
	// NoExpiry makes the record live forever. It is the zero value.
	NoExpiry ExpiryKind = iota
	// ExpireAfter counts Millis from the store's clock at the time of the
	// command (EX, PX).
	ExpireAfter
	// ExpireAt is an absolute Unix time in milliseconds (EXAT, PXAT).
	ExpireAt
	// KeepTTL keeps the ttlAt of the record being replaced (REPREPARE only).
	KeepTTL
)

// Expiry is the TTL option of a command, resolved against the store's clock
// by the store itself so that EX/PX count from the store's notion of now
// (on Redis, the server's TIME).
type Expiry struct {
	Kind   ExpiryKind
	Millis int64
}

// TTLAt resolves e at nowMs. For KeepTTL it returns current.
func (e Expiry) TTLAt(nowMs, current int64) int64 {
	switch e.Kind {
	case ExpireAfter:
		return nowMs + e.Millis
	case ExpireAt:
		return e.Millis
	case KeepTTL:
		return current
	default:
		return Forever
	}
}

// Cond is the optional IFEQ condition of ROLLBACK and REPREPARE. The zero
// Cond holds for any value; an empty Value with Set is a real condition
// (values may be empty).
type Cond struct {
	Value []byte
	Set   bool
}

// IfEq returns the condition "the stored value equals v".
func IfEq(v []byte) Cond { return Cond{Value: v, Set: true} }

// Holds reports whether the condition holds for the stored value v.
func (c Cond) Holds(v []byte) bool { return !c.Set || bytes.Equal(c.Value, v) }

// MoveResult is the outcome of a key change (PK.REPREPARE ... FROM ...).
type MoveResult uint8

const (
	// Moved: newKey is reserved and oldKey released (:1).
	Moved MoveResult = iota + 1
	// NewKeyTaken: a live record holds newKey; nothing changed (:0).
	NewKeyTaken
	// OldKeyMismatch: oldKey has no record or another value; nothing changed
	// (-MISMATCH).
	OldKeyMismatch
)

// Options are the settings every store takes.
type Options struct {
	// Retention is how long an expired record is kept before the store
	// deletes it by itself (--expired-retention). Zero removes it at expiry.
	Retention time.Duration
	// Now is the store's clock. Nil means time.Now. Stores whose clock is a
	// server's (Redis) ignore it.
	Now func() time.Time
	// MaxValueBytes bounds the values a shared store (Redis, MongoDB)
	// returns: a record holding a larger one, which only another writer
	// can have stored (a Wow service, anyone with access to the backend),
	// is refused with RecordTooLarge instead of being read whole into the
	// sidecar's memory. The sidecar passes --max-value-bytes, the bound its
	// own writes have; zero means DefaultMaxValueBytes. The embedded
	// stores hold only what the sidecar wrote and ignore it.
	MaxValueBytes int
}

// DefaultMaxValueBytes is --max-value-bytes' default, and the read bound
// of a store whose Options leave MaxValueBytes zero.
const DefaultMaxValueBytes = 64 << 10

// ReadBound is the largest value a shared store returns (MaxValueBytes).
func (o Options) ReadBound() int {
	if o.MaxValueBytes <= 0 {
		return DefaultMaxValueBytes
	}
	return o.MaxValueBytes
}

// Clock returns the store's clock, defaulting to time.Now.
func (o Options) Clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

// Gone reports whether a record with this ttlAt has outlived its retention at
// nowMs, so that a store must treat it as absent even before its sweep runs.
func (o Options) Gone(ttlAt, nowMs int64) bool {
	return ttlAt != Forever && nowMs >= ttlAt+o.Retention.Milliseconds()
}

// Entry is one reservation of a PK.MPREPARE.
type Entry struct {
	NS         string
	Key, Value []byte
}

// ScanRecord is one record of a scan page.
type ScanRecord struct {
	Key []byte
	Record
}

// Page is one step of a scan of a namespace. Next is the store's position
// after it, opaque to everyone but the store that made it; Done reports
// that the scan is over (Next is then empty). A page may be empty while
// the scan is not done.
type Page struct {
	Records []ScanRecord
	Next    []byte
	Done    bool
}

// Scan bounds: COUNT's default and its largest value.
const (
	DefaultScanCount = 10
	MaxScanCount     = 1000
)

// SecretBytes is the size of a store's secret (see Store.Secret).
const SecretBytes = 32
