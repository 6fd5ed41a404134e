package resp

import (
	"bytes"
	"strconv"
)

// Assembler takes in one multibulk request as its bytes arrive, copying
// each argument once into an allocation of its own, of exactly its size.
//
// The connection hands it a large request (issue 23, N1). redcon's parser
// reads a request only once all of it is in one buffer, and gnet copies
// its whole input buffer into a new slice at every peek once a read is
// appended to it: a PK.MPREPARE of 64 values of 1 MiB, arriving 64 KiB at
// a time, was copied and parsed again from its start on each of its 1,024
// reads (9-18 s of the loop, 2.3 GB). Here each byte is copied once and the
// arguments are the request's only copy.
//
// The framing limits are the guard's (FramingGuard), which sees the bytes
// first; the errors here are redcon's for the same framing, so a malformed
// request is refused as it is when parsed in place.
type Assembler struct {
	on    bool
	state asmState
	line  []byte   // the length header read so far
	args  [][]byte // the arguments complete so far, and the one being filled
	left  int      // arguments not yet begun
	need  int      // bytes of the current argument still to come
	size  int      // bytes taken in
}

type asmState uint8

const (
	asmStart       asmState = iota // before the '*'
	asmArrayHeader                 // the argument count
	asmBulkStart                   // before an argument's '$'
	asmBulkHeader                  // an argument's length
	asmBody                        // an argument's bytes
	asmCR                          // the CRLF after them
	asmLF
)

// maxAsmHeader bounds a length header kept. The guard refuses a longer one
// at its newline, or at InlineMax without one; inside a request being
// assembled it is refused here as soon as it is past maxAsmHeader
// ("invalid bulk length", where redis-server waits for 64 KiB of it).
const maxAsmHeader = 2 * maxHeader

// On reports whether a request is being taken in.
func (a *Assembler) On() bool { return a.on }

// Size is how many bytes of the request have been taken in.
func (a *Assembler) Size() int { return a.size }

// Start begins a request; its first byte must be '*'.
func (a *Assembler) Start() {
	*a = Assembler{on: true, line: a.line[:0]}
}

// Reset drops the request being taken in.
func (a *Assembler) Reset() {
	*a = Assembler{line: a.line[:0]}
}

// Feed takes in the bytes of b that belong to the request: n of them.
// done reports that the request is complete (Take returns it); msg is the
// protocol error to answer when the framing is malformed.
func (a *Assembler) Feed(b []byte) (n int, done bool, msg string) {
	i := 0
	for i < len(b) {
		switch a.state {
		case asmStart:
			if b[i] != '*' {
				return i, false, "expected '*', got '" + string(b[i:i+1]) + "'"
			}
			a.state, a.line = asmArrayHeader, a.line[:0]
			i++
		case asmArrayHeader, asmBulkHeader:
			j := bytes.IndexByte(b[i:], '\n')
			end := len(b)
			if j >= 0 {
				end = i + j
			}
			a.line = append(a.line, b[i:end]...)
			bad := "invalid bulk length"
			if a.state == asmArrayHeader {
				bad = "invalid multibulk length"
			}
			if len(a.line) > maxAsmHeader {
				return i, false, bad
			}
			if j < 0 {
				i = len(b)
				continue
			}
			i = end + 1
			l := a.line
			if len(l) == 0 || l[len(l)-1] != '\r' {
				return i, false, bad
			}
			v, err := strconv.Atoi(string(l[:len(l)-1]))
			if err != nil || v < 0 {
				return i, false, bad
			}
			if a.state == asmArrayHeader {
				if v == 0 {
					a.size += i
					return i, true, ""
				}
				a.left, a.args, a.state = v, make([][]byte, 0, v), asmBulkStart
				continue
			}
			a.args = append(a.args, make([]byte, 0, v))
			a.left--
			a.need, a.state = v, asmBody
			if v == 0 {
				a.state = asmCR
			}
		case asmBulkStart:
			if b[i] != '$' {
				return i, false, "expected '$', got '" + string(b[i:i+1]) + "'"
			}
			a.state, a.line = asmBulkHeader, a.line[:0]
			i++
		case asmBody:
			take := min(a.need, len(b)-i)
			k := len(a.args) - 1
			a.args[k] = append(a.args[k], b[i:i+take]...)
			a.need -= take
			i += take
			if a.need == 0 {
				a.state = asmCR
			}
		case asmCR:
			if b[i] != '\r' {
				return i, false, "invalid bulk length"
			}
			a.state = asmLF
			i++
		case asmLF:
			if b[i] != '\n' {
				return i, false, "invalid bulk length"
			}
			i++
			if a.left == 0 {
				a.size += i
				return i, true, ""
			}
			a.state = asmBulkStart
		}
	}
	a.size += i
	return i, false, ""
}

// Take returns the complete request's arguments, which are the caller's,
// and ends it.
func (a *Assembler) Take() [][]byte {
	args := a.args
	a.Reset()
	return args
}
