package resp

import (
	"strconv"
)

// Limits are what a guard lets through. Before AUTH they are tight, as in
// Redis ("unauthenticated multibulk length"), so that a stranger cannot make
// the sidecar buffer megabytes; after it they still bound the memory one
// request can take.
type Limits struct {
	MaxArgs    int
	MaxBulk    int
	MaxRequest int  // bytes of one request's arguments; 0: no bound
	PreAuth    bool // names the errors as Redis does before AUTH
}

// Before AUTH where a password is set. A connection before AUTH is never
// busy (it runs no PK command), so the request being read is all of its
// input the sidecar holds: at most PreAuthMaxRequest of arguments (and
// their framing: 16 headers), an inline request at most PreAuthMaxBulk.
// A request past it is refused on the header that announces it. Its
// replies are bounded by PreAuthMaxOutput.
const (
	PreAuthMaxArgs    = 16
	PreAuthMaxBulk    = 64 << 10
	PreAuthMaxRequest = 64 << 10
	PreAuthMaxOutput  = 64 << 10
)

// FramingGuard watches the request framing as bytes arrive, before they are
// parsed: a request is parsed only once complete, so the length headers are
// checked here, and the connection refused, on the read that brings them
// (at most one 64 KiB read of the announced bytes is held). It also refuses
// negative lengths, which redcon's parser does not check. While a
// connection's run is at the store its input is not scanned but bounded by
// the inbound limit (loop.go); a connection before AUTH never has a run.
//
// A complete request of the plain form is not scanned: Parse checks it
// against the same limits as it parses it, in one pass. The guard scans
// from a request Parse does not take (incomplete, inline, refused or
// unusual), and then every byte after it that has arrived, so a refusal is
// still found on the read that brings it and the requests before it are
// answered first.
type FramingGuard struct {
	lim func() Limits // current Limits, which change at AUTH

	state  guardState
	line   []byte // header digits seen so far (up to maxHeader)
	header int    // bytes of the current header line, its '*' or '$' included
	args   int    // bulks left in the current request
	skip   int    // bulk bytes (with CRLF) left to pass through
	inline int    // bytes of the current inline command
	req    int    // argument bytes of the current request

	// PreAuth is set when Scan refused framing under the limits before
	// AUTH: if an AUTH ahead of it succeeds, it is scanned again.
	PreAuth bool
}

// NewFramingGuard is a guard that reads the limits in force from lim, at
// every header (they change at AUTH).
func NewFramingGuard(lim func() Limits) FramingGuard { return FramingGuard{lim: lim} }

type guardState uint8

const (
	atRequest guardState = iota
	inArrayHeader
	atBulkHeader
	inBulkHeader
	inBulkBody
	inInline
)

// maxHeader is the most digits of a length header that can be a number
// ("*16\r\n", "$65536\r\n"): a longer one is refused at its newline as
// Redis's string2ll refuses it ("invalid multibulk length").
const maxHeader = 20

// InlineMax is Redis's PROTO_INLINE_MAX_SIZE (networking.c): what may be
// buffered of an inline request line, or of a multibulk or bulk length
// line, without its newline. Past it redis-server answers "too big inline
// request" ("too big mbulk count string", "too big bulk count string") and
// closes, whatever its other limits; the sidecar did not bound an inline
// line but by MaxBulk (5 MiB), answered nothing and reset (issue 30).
// redis-server checks it on each 16 KiB read, so a line a little over it
// that arrives with its newline may pass there; here it never does.
const InlineMax = 64 << 10

// Scan advances the framing state over b. It returns the protocol error to
// send, or "", and where in b the error is: the requests complete before
// it are answered first, as Redis does. Malformed framing it leaves to
// redcon, which rejects it.
func (g *FramingGuard) Scan(b []byte) (msg string, at int) {
	msg, at = g.scanAt(b)
	g.PreAuth = msg != "" && g.lim().PreAuth
	return msg, at
}

func (g *FramingGuard) scanAt(b []byte) (string, int) {
	lim := g.lim()
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch g.state {
		case atRequest:
			if c == '*' {
				g.state, g.line, g.header = inArrayHeader, g.line[:0], 1
			} else {
				g.state, g.inline = inInline, 1
			}
		case inInline:
			if c == '\n' {
				g.state = atRequest
			} else if g.inline++; g.inline > min(lim.MaxBulk, InlineMax) {
				return "too big inline request", i
			}
		case inArrayHeader, inBulkHeader:
			if c != '\n' {
				if g.header++; g.header > InlineMax {
					if g.state == inArrayHeader {
						return "too big mbulk count string", i
					}
					return "too big bulk count string", i
				}
				if len(g.line) <= maxHeader {
					g.line = append(g.line, c)
				}
				continue
			}
			n, err := strconv.Atoi(string(trimCR(g.line)))
			if err != nil || n < 0 || len(trimCR(g.line)) > maxHeader {
				if g.state == inArrayHeader {
					return "invalid multibulk length", i
				}
				return "invalid bulk length", i
			}
			if g.state == inArrayHeader {
				if n > lim.MaxArgs {
					return tooBig(lim, "multibulk length"), i
				}
				g.args, g.req = n, 0
				g.state = atBulkHeader
				if n == 0 {
					g.state = atRequest
				}
				continue
			}
			if n > lim.MaxBulk {
				return tooBig(lim, "bulk length"), i
			}
			if g.req += n; lim.MaxRequest > 0 && g.req > lim.MaxRequest {
				// refused on the header, before its bytes are held
				return tooBig(lim, "request length"), i
			}
			g.skip, g.state = n+2, inBulkBody
		case atBulkHeader:
			if c != '$' {
				return "expected '$', got '" + string([]byte{c}) + "'", i
			}
			g.state, g.line, g.header = inBulkHeader, g.line[:0], 1
		case inBulkBody:
			take := min(g.skip, len(b)-i)
			g.skip -= take
			i += take - 1
			if g.skip == 0 {
				if g.args--; g.args == 0 {
					g.state = atRequest
				} else {
					g.state = atBulkHeader
				}
			}
		}
	}
	return "", 0
}

func tooBig(lim Limits, what string) string {
	if lim.PreAuth {
		return "unauthenticated " + what
	}
	return "invalid " + what
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}
