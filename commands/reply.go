package commands

import "github.com/prepkey/prepkey/backend"

// ReplyKind says which RESP frame a Reply becomes. The protocol layer writes
// it in RESP2 or RESP3; commands never see the wire.
type ReplyKind uint8

const (
	// Int is an integer reply (:1, :0).
	Int ReplyKind = iota
	// Bulk is a bulk string holding Bytes.
	Bulk
	// Nil is the nil bulk string ($-1, or _ in RESP3).
	Nil
	// NilArray is the nil reply of an array-typed command (*-1, or _ in RESP3).
	NilArray
	// Record is PK.GETVALUE's array of 2: the value (Bytes) and ttlAt (Int).
	Record
	// Error is an error line (Text without the leading '-').
	Error
	// ScanPage is PK.SCAN's array of 2: the cursor (Bytes) and an array of
	// Records, each [key, value, ttlAt] (ttlAt -1 for forever).
	ScanPage
)

// Reply is a command's answer.
type Reply struct {
	Kind ReplyKind
	// Err is an Error's code (errors.go); Text is its line.
	Err   ErrCode
	Int   int64
	Bytes []byte
	Text  string
	// Records are a ScanPage's records.
	Records []backend.ScanRecord
}

// set makes *r a reply of kind k carrying n and b, its other fields
// cleared, one by one: the connection reuses its reply from command to
// command, and `*r = Reply{...}` zeroes and copies a temporary of 88
// bytes, eight calls of memmove on WebAssembly (setOp).
func (r *Reply) set(k ReplyKind, n int64, b []byte) {
	r.Kind, r.Err, r.Int, r.Bytes = k, NoError, n, b
	r.Text, r.Records = "", nil
}

// setInt makes *r :1 when ok, :0 otherwise.
func (r *Reply) setInt(ok bool) {
	var n int64
	if ok {
		n = 1
	}
	r.set(Int, n, nil)
}
