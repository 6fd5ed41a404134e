package resp

import (
	"bytes"
	"errors"

	"github.com/tidwall/redcon"
)

// ErrUnbalancedQuotes is Redis's error for an inline command whose quotes
// sdssplitargs cannot split (processInlineBuffer): an unterminated quote,
// or a closing quote followed by anything but a blank.
var ErrUnbalancedQuotes = errors.New("Protocol error: unbalanced quotes in request")

// ReadCommand reads the request at the front of packet, as redis-server's
// processInputBuffer does: one that begins with '*' is a multibulk request,
// read by redcon's parser in place (its arguments are slices of packet);
// any other is an inline command, a line split by SplitArgs (its arguments
// are a copy, since escapes change them). complete is false while the
// request has not all arrived; rest is what follows it. A line that begins
// with '$' is inline too, as in Redis ("$3" is an unknown command), where
// redcon read Tile38's native framing.
//
// redcon's own inline parser is not Redis's: it split on spaces only, took
// "\x41" for "x41" and knew no \b, \a or hex escapes, and refused a quote
// inside a word (a"b c") that Redis reads as one argument (issue 23, N7).
func ReadCommand(packet []byte, argsbuf [][]byte) (complete bool, args [][]byte, rest []byte, err error) {
	if len(packet) == 0 || packet[0] == '*' {
		complete, args, _, rest, err = redcon.ReadNextCommand(packet, argsbuf)
		return complete, args, rest, err
	}
	nl := bytes.IndexByte(packet, '\n')
	if nl < 0 {
		return false, argsbuf[:0], packet, nil // the guard bounds the line
	}
	line := packet[:nl]
	if nl > 0 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	args, ok := SplitArgs(line, argsbuf[:0])
	if !ok {
		return false, argsbuf[:0], packet, ErrUnbalancedQuotes
	}
	return true, args, packet[nl+1:], nil
}

// SplitArgs splits an inline command's line into arguments as Redis's
// sdssplitargs does (src/sds.c), appending them to args: blanks separate
// arguments; "..." takes the escapes \n \r \t \b \a \xHH (two hex digits)
// and \<c> for any other c; '...' takes \' only; a quote may begin inside
// a word (a"b c" is "ab c") and its closing quote must be followed by a
// blank or the end. ok is false where Redis answers "unbalanced quotes".
//
// As in sdssplitargs, which reads a C string, the line ends at its first
// NUL byte. Where sdssplitargs skips isspace's blanks before an argument
// (space, \t, \n, \v, \f, \r), an unquoted argument ends at space, \t, \n
// or \r only: "a\vb" is one argument, as in Redis. The arguments share one
// new buffer, never longer than line (an escape only shortens).
func SplitArgs(line []byte, args [][]byte) (_ [][]byte, ok bool) {
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	at := func(i int) byte { // *(p+k) in C: the NUL past the end
		if i < len(line) {
			return line[i]
		}
		return 0
	}
	buf := make([]byte, 0, len(line))
	p := 0
	for {
		for p < len(line) && isSpace(line[p]) {
			p++
		}
		if p == len(line) {
			return args, true
		}
		start := len(buf)
		inq, insq := false, false
		for done := false; !done; {
			c := at(p)
			switch {
			case inq:
				switch {
				case c == '\\' && at(p+1) == 'x' && isHex(at(p+2)) && isHex(at(p+3)):
					buf = append(buf, unhex(at(p+2))<<4|unhex(at(p+3)))
					p += 3
				case c == '\\' && at(p+1) != 0:
					p++
					switch e := line[p]; e {
					case 'n':
						buf = append(buf, '\n')
					case 'r':
						buf = append(buf, '\r')
					case 't':
						buf = append(buf, '\t')
					case 'b':
						buf = append(buf, '\b')
					case 'a':
						buf = append(buf, '\a')
					default:
						buf = append(buf, e)
					}
				case c == '"':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false // unterminated
				default:
					buf = append(buf, c)
				}
			case insq:
				switch {
				case c == '\\' && at(p+1) == '\'':
					p++
					buf = append(buf, '\'')
				case c == '\'':
					if n := at(p + 1); n != 0 && !isSpace(n) {
						return nil, false
					}
					done = true
				case c == 0:
					return nil, false // unterminated
				default:
					buf = append(buf, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					buf = append(buf, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, buf[start:len(buf):len(buf)])
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
