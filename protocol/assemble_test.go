package protocol

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/protocol/floodlog"
)

// TestAssembledRequests: requests past assembleAt are taken in by the
// assembler as they arrive (serveBig), on every way a command is run: on
// the loop's store offloaded (DriveInline), in a run of its own
// (DriveBatch, DriveCalls), a connection command, inside MULTI; what
// follows them in the same writes is answered after them, in order.
func TestAssembledRequests(t *testing.T) {
	big := strings.Repeat("x", 3*assembleAt)
	for _, h := range []*echoHandler{{inline: true}, {batches: true}, {onLoop: true}, {}} {
		t.Run(h.name(), func(t *testing.T) {
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

// TestAssembledCrossProtocolLogBounded: an HTTP request large enough to be
// taken in by the assembler (serveBig) closes the connection with nothing
// sent back, as one parsed in place does, and its log line goes through
// the flood log as well: a web page can have browsers send it at will.
// Every request is a line or counted in a summary; at most Burst lines a
// second (it wrote one line per request before).
func TestAssembledCrossProtocolLogBounded(t *testing.T) {
	var logs lockedLog
	addr := serve(t, Config{MaxBulk: 8 << 20, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, &echoHandler{inline: true})
	body := strings.Repeat("x", 2*assembleAt)
	const posts = 40
	began := time.Now()
	for range posts {
		c := dialLines(t, addr)
		c.send(req("POST", body))
		_, err := c.rd.ReadByte()
		require.ErrorIs(t, err, io.EOF, "closed with nothing sent")
	}
	count := func() (lines, suppressed, summaries int) {
		for _, line := range strings.Split(logs.String(), "\n") {
			switch {
			case strings.Contains(line, `msg="possible cross-protocol attack`):
				lines++
			case strings.Contains(line, "kind=cross_protocol"):
				m := regexp.MustCompile(`suppressed=(\d+)`).FindStringSubmatch(line)
				require.NotNil(t, m, line)
				n, _ := strconv.Atoi(m[1])
				suppressed += n
				summaries++
			}
		}
		return
	}
	require.Eventually(t, func() bool {
		lines, suppressed, _ := count()
		return lines+suppressed == posts
	}, 10*time.Second, 10*time.Millisecond, "every request logged or in a summary: %s", &logs)
	elapsed := time.Since(began)
	lines, _, summaries := count()
	seconds := int(elapsed/time.Second) + 2 // a second begun counts whole
	require.LessOrEqual(t, lines, floodlog.Burst*seconds, "in %v", elapsed)
	require.LessOrEqual(t, summaries, seconds)
}

// lockedLog is a log the server writes while the test reads it.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
