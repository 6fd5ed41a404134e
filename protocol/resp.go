package protocol

import (
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/commands"
)

// writer builds one connection's replies in RESP2, or RESP3 after HELLO 3.
// redcon writes RESP2 only; the few frames that differ in RESP3 (null, map)
// are written here and nowhere else.
type writer struct {
	b     []byte
	resp3 bool
	// errs counts the error replies written and lastErr is the last one's
	// code: the metrics take a command's error from them (outcomeSince),
	// never from the bytes written.
	errs    uint32
	lastErr commands.ErrCode
}

func (w *writer) int(n int64)         { w.b = redcon.AppendInt(w.b, n) }
func (w *writer) bulk(b []byte)       { w.b = redcon.AppendBulk(w.b, b) }
func (w *writer) bulkString(s string) { w.b = redcon.AppendBulkString(w.b, s) }
func (w *writer) simple(s string)     { w.b = redcon.AppendString(w.b, s) }
func (w *writer) array(n int)         { w.b = redcon.AppendArray(w.b, n) }

// fail writes the error reply of code, which takes no arguments.
func (w *writer) fail(code commands.ErrCode) { w.errLine(code, code.Line()) }

// failf writes the error reply of code with its arguments.
func (w *writer) failf(code commands.ErrCode, args ...any) { w.errLine(code, code.Linef(args...)) }

// errLine writes an error reply: its line, without the '-', and its code.
func (w *writer) errLine(code commands.ErrCode, line string) {
	w.errs++
	w.lastErr = code
	w.b = redcon.AppendError(w.b, line)
}

// null is the nil bulk string: $-1 in RESP2, _ in RESP3.
func (w *writer) null() {
	if w.resp3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "$-1\r\n"...)
}

// nullArray is the nil reply of an array-typed command: *-1 in RESP2.
func (w *writer) nullArray() {
	if w.resp3 {
		w.b = append(w.b, "_\r\n"...)
		return
	}
	w.b = append(w.b, "*-1\r\n"...)
}

// mapHeader starts a map of n pairs: %n in RESP3, a flat array of 2n in RESP2.
func (w *writer) mapHeader(n int) {
	if w.resp3 {
		w.b = append(strconv.AppendInt(append(w.b, '%'), int64(n), 10), '\r', '\n')
		return
	}
	w.array(2 * n)
}

func (w *writer) reply(r commands.Reply) {
	switch r.Kind {
	case commands.Int:
		w.int(r.Int)
	case commands.Bulk:
		w.bulk(r.Bytes)
	case commands.Nil:
		w.null()
	case commands.NilArray:
		w.nullArray()
	case commands.Record:
		w.array(2)
		w.bulk(r.Bytes)
		w.int(r.Int)
	case commands.Error:
		w.errLine(r.Err, r.Text)
	case commands.ScanPage:
		w.array(2)
		w.bulk(r.Bytes)
		w.array(len(r.Records))
		for _, rec := range r.Records {
			w.array(3)
			w.bulk(rec.Key)
			w.bulk(rec.Value)
			if rec.TTLAt == 0 { // backend.Forever
				w.int(-1)
			} else {
				w.int(rec.TTLAt)
			}
		}
	}
}

// statusSet writes simple strings as a set: ~n in RESP3, an array in RESP2
// (Redis's command and argument flags).
func (w *writer) statusSet(items []string) {
	w.setHeader(len(items))
	for _, s := range items {
		w.simple(s)
	}
}

// verbatim writes text as RESP3's verbatim string of format txt, or a bulk
// string in RESP2 (Redis's CLIENT LIST and CLIENT INFO).
func (w *writer) verbatim(text string) {
	if !w.resp3 {
		w.bulkString(text)
		return
	}
	w.b = append(strconv.AppendInt(append(w.b, '='), int64(len(text)+4), 10), "\r\ntxt:"...)
	w.b = append(append(w.b, text...), '\r', '\n')
}

// setHeader starts a set of n items: ~n in RESP3, an array in RESP2.
func (w *writer) setHeader(n int) {
	if !w.resp3 {
		w.array(n)
		return
	}
	w.b = append(strconv.AppendInt(append(w.b, '~'), int64(n), 10), '\r', '\n')
}
