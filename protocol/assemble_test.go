package protocol

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAssembledRequests: requests past assembleAt are taken in by the
// assembler as they arrive (serveBig), on every way a command is run: on
// the loop's store offloaded (DriveInline), in a run of its own
// (DriveBatch, DriveCalls), a connection command, inside MULTI; what
// follows them in the same writes is answered after them, in order.
func TestAssembledRequests(t *testing.T) {
	big := strings.Repeat("x", 3*assembleAt)
	for _, h := range []*echoHandler{{inline: true}, {batches: true}, {}} {
		t.Run(h.Drive().String(), func(t *testing.T) {
			addr := serve(t, Config{MaxBulk: 8 << 20}, h)
			c := dialLines(t, addr)
			// Sent in pieces, as a socket delivers a large request.
			stream := req("PK.ECHO", "7", big) + req("PING") + req("PK.ECHO", "8", big, big) + req("PK.ECHO", "9") +
				req("ECHO", big) + req("MULTI") + req("PK.ECHO", "10", big) + req("EXEC") + "*0\r\n" + req("PING")
			go func() {
				for b := stream; len(b) > 0; {
					n := min(len(b), 1+len(b)%50_001)
					if _, err := io.WriteString(c.nc, b[:n]); err != nil {
						return
					}
					b = b[n:]
				}
			}()
			for _, want := range []string{":7\r\n", "+PONG\r\n", ":8\r\n", ":9\r\n",
				fmt.Sprintf("$%d\r\n", len(big)), big + "\r\n", "+OK\r\n", "+QUEUED\r\n", "*1\r\n", ":10\r\n", "+PONG\r\n"} {
				c.expect(want)
			}
		})
	}
}

// TestAssembledRequestRefused: a large request whose framing is malformed,
// or past the limits, after megabytes of it have been taken in, is refused
// as it was when parsed in place, after the requests before it.
func TestAssembledRequestRefused(t *testing.T) {
	big := strings.Repeat("x", 3*assembleAt)
	for stream, want := range map[string]string{
		// the CRLF after an argument
		"*3\r\n$7\r\nPK.ECHO\r\n$1\r\n1\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "xx": "invalid bulk length",
		// the guard's: the next argument past MaxBulk
		"*4\r\n$7\r\nPK.ECHO\r\n$1\r\n1\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n$99999999\r\n": "invalid bulk length",
		// an argument that does not begin with '$'
		"*4\r\n$7\r\nPK.ECHO\r\n$1\r\n1\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n:1\r\n": "expected '$', got ':'",
	} {
		addr := serve(t, Config{MaxBulk: 8 << 20}, &echoHandler{inline: true})
		c := dialLines(t, addr)
		c.send(req("PING") + stream)
		c.expect("+PONG\r\n")
		c.expect("-ERR Protocol error: " + want + "\r\n")
		_, err := c.rd.ReadByte()
		require.ErrorIs(t, err, io.EOF)
	}
}
