package backend

import "fmt"

// Refusal is a store's refusal of a command's arguments that only the store
// can judge, because they depend on how it lays out records (layout=wow: a
// key that is not valid UTF-8, a value that is not JSON), or of a record it
// will not return (RecordTooLarge). Nothing changed.
// The client gets Text as an error reply (e.g. "ERR value is not valid JSON
// (layout=wow)"), not -UNAVAILABLE: retrying would fail the same way. A
// store may wrap it; commands finds it with errors.As.
type Refusal struct{ Text string }

func (e *Refusal) Error() string { return e.Text }

// The refusals both stores' layout=wow answer alike: Wow's PrepareKey names
// and keys are Kotlin strings, so they must be valid UTF-8; a value is the
// JSON Wow's Jackson reads back into the application's type (getValue
// throws on anything else).
var (
	ErrKeyNotUTF8       = &Refusal{Text: "ERR key is not valid UTF-8 (layout=wow)"}
	ErrNamespaceNotUTF8 = &Refusal{Text: "ERR namespace is not valid UTF-8 (layout=wow)"}
	ErrValueNotJSON     = &Refusal{Text: "ERR value is not valid JSON (layout=wow)"}
)

// RecordTooLarge is a shared store's refusal to return the record at (ns,
// key): it is size bytes (its value and its ttlAt as stored), and its value
// is larger than limit (Options.ReadBound, --max-value-bytes), which only
// another writer can have stored. The store refuses it without reading it
// whole where the backend allows, so that one planted value cannot take
// the sidecar's memory or its backend timeout. It is an ERR, not
// -UNAVAILABLE: reading it again fails the same way, and the client can
// act on it (PK.ROLLBACK deletes the record; --max-value-bytes raised to
// what the other writers store serves it).
func RecordTooLarge(ns string, key []byte, size int64, limit int) *Refusal {
	return &Refusal{Text: fmt.Sprintf("ERR record of key %q in namespace %s is %d bytes, its value larger than max-value-bytes (%d): another writer stored it; PK.ROLLBACK deletes it", key, ns, size, limit)}
}
