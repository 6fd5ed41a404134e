// Package resp is the Redis protocol's framing, both ways: the guard that
// checks a request's framing against the limits as its bytes arrive, the
// reader of one complete request (ReadCommand: redcon's parser in place for
// a multibulk request, Redis's sdssplitargs for an inline one), and the
// writer that builds a connection's replies in RESP2 or RESP3.
//
// It owns bytes and frames only: it may not know connections, commands'
// meanings, the store or the event loops. Error replies come from the
// catalogue in package commands (commands.ErrCode), and the writer keeps
// the code of each error it writes for the counters (package stats).
package resp

import (
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/commands"
)

// Writer builds one connection's replies in RESP2, or RESP3 after HELLO 3.
// redcon writes RESP2 only; the few frames that differ in RESP3 (null, map)
// are written here and nowhere else.
type Writer struct {
	// B is the replies built and not yet written; the connection writes
	// and truncates it.
	B []byte
	// RESP3 is set after HELLO 3.
	RESP3 bool
	// Errs counts the error replies written and LastErr is the last one's
	// code: the counters take a command's error from them (package
	// protocol, conn.outcomeSince), never from the bytes written.
	Errs    uint32
	LastErr commands.ErrCode
}

// Int, Bulk, BulkString, Simple and Array write the frames that RESP2 and
// RESP3 share.
func (w *Writer) Int(n int64)         { w.B = redcon.AppendInt(w.B, n) }
func (w *Writer) Bulk(b []byte)       { w.B = redcon.AppendBulk(w.B, b) }
func (w *Writer) BulkString(s string) { w.B = redcon.AppendBulkString(w.B, s) }
func (w *Writer) Simple(s string)     { w.B = redcon.AppendString(w.B, s) }
func (w *Writer) Array(n int)         { w.B = redcon.AppendArray(w.B, n) }

// Fail writes the error reply of code, which takes no arguments.
func (w *Writer) Fail(code commands.ErrCode) { w.ErrLine(code, code.Line()) }

// Failf writes the error reply of code with its arguments.
func (w *Writer) Failf(code commands.ErrCode, args ...any) { w.ErrLine(code, code.Linef(args...)) }

// ErrLine writes an error reply: its line, without the '-', and its code.
func (w *Writer) ErrLine(code commands.ErrCode, line string) {
	w.Errs++
	w.LastErr = code
	w.B = redcon.AppendError(w.B, line)
}

// Null is the nil bulk string: $-1 in RESP2, _ in RESP3.
func (w *Writer) Null() {
	if w.RESP3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "$-1\r\n"...)
}

// NullArray is the nil reply of an array-typed command: *-1 in RESP2.
func (w *Writer) NullArray() {
	if w.RESP3 {
		w.B = append(w.B, "_\r\n"...)
		return
	}
	w.B = append(w.B, "*-1\r\n"...)
}

// MapHeader starts a map of n pairs: %n in RESP3, a flat array of 2n in RESP2.
func (w *Writer) MapHeader(n int) {
	if w.RESP3 {
		w.B = append(strconv.AppendInt(append(w.B, '%'), int64(n), 10), '\r', '\n')
		return
	}
	w.Array(2 * n)
}

// Reply writes a command's reply. By pointer: a Reply is 88 bytes, and a
// copy of one is a call of memmove on WebAssembly (commands' setOp).
func (w *Writer) Reply(r *commands.Reply) {
	switch r.Kind {
	case commands.Int:
		w.Int(r.Int)
	case commands.Bulk:
		w.Bulk(r.Bytes)
	case commands.Nil:
		w.Null()
	case commands.NilArray:
		w.NullArray()
	case commands.Record:
		w.Array(2)
		w.Bulk(r.Bytes)
		w.Int(r.Int)
	case commands.Error:
		w.ErrLine(r.Err, r.Text)
	case commands.ScanPage:
		w.Array(2)
		w.Bulk(r.Bytes)
		w.Array(len(r.Records))
		for i := range r.Records {
			rec := &r.Records[i]
			w.Array(3)
			w.Bulk(rec.Key)
			w.Bulk(rec.Value)
			if rec.TTLAt == 0 { // backend.Forever
				w.Int(-1)
			} else {
				w.Int(rec.TTLAt)
			}
		}
	}
}

// StatusSet writes simple strings as a set: ~n in RESP3, an array in RESP2
// (Redis's command and argument flags).
func (w *Writer) StatusSet(items []string) {
	w.SetHeader(len(items))
	for _, s := range items {
		w.Simple(s)
	}
}

// Verbatim writes text as RESP3's verbatim string of format txt, or a bulk
// string in RESP2 (Redis's CLIENT LIST and CLIENT INFO).
func (w *Writer) Verbatim(text string) {
	if !w.RESP3 {
		w.BulkString(text)
		return
	}
	w.B = append(strconv.AppendInt(append(w.B, '='), int64(len(text)+4), 10), "\r\ntxt:"...)
	w.B = append(append(w.B, text...), '\r', '\n')
}

// SetHeader starts a set of n items: ~n in RESP3, an array in RESP2.
func (w *Writer) SetHeader(n int) {
	if !w.RESP3 {
		w.Array(n)
		return
	}
	w.B = append(strconv.AppendInt(append(w.B, '~'), int64(n), 10), '\r', '\n')
}
