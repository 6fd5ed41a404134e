package backend

// Refusal is a store's refusal of a command's arguments that only the store
// can judge, because they depend on how it lays out records (layout=wow: a
// key that is not valid UTF-8, a value that is not JSON). Nothing changed.
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
