package e2e

import (
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var suppressedRE = regexp.MustCompile(`msg="suppressed (\d+) similar lines \((\w+)\) in the last 1s" kind=(\w+) suppressed=(\d+)`)

// TestLogFloodBounded opens connection after connection past --max-clients
// and sends HTTP POSTs to the RESP port, as an attacker can at will: each
// was one log line (11.5 MB in 5 s; issue 23, N5). The log now has at most
// 10 lines of each kind a second and one "suppressed K similar lines"
// line per second that had more; every event is either logged or counted
// in a summary, and INFO's rejected_connections still counts them all.
func TestLogFloodBounded(t *testing.T) {
	s := start(t, "--backend", "memory:", "--max-clients", "2")
	const posts, refusals = 300, 2000
	began := time.Now()

	// HTTP requests: closed with nothing sent back. One that comes while
	// the previous one is still counted open is refused at max-clients.
	var httpClosed, refused int
	for range posts {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		_, _ = nc.Write([]byte("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 6\r\n\r\nPING\r\n"))
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(nc)
		nc.Close()
		switch {
		case err == nil && len(got) == 0:
			httpClosed++
		case string(got) == "-ERR max number of clients reached\r\n":
			refused++
		default:
			t.Fatalf("an HTTP request got %q, %v", got, err)
		}
	}

	// Two clients hold the places; every further connection is refused.
	var held []*raw
	for range 2 {
		r := s.raw(t)
		r.send("PING\r\n")
		r.expect("+PONG\r\n")
		held = append(held, r)
	}
	for range refusals {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(nc)
		nc.Close()
		require.NoError(t, err)
		require.Equal(t, "-ERR max number of clients reached\r\n", string(got))
		refused++
	}

	// Every event is a line or counted in a summary: wait for the last
	// window's summary, logged when that second ends.
	type tally struct{ lines, suppressed, summaries int }
	count := func() (maxc, http tally, logBytes int) {
		logs := s.logs()
		for _, line := range strings.Split(logs, "\n") {
			switch {
			case strings.Contains(line, `msg="connection refused: max number of clients reached"`):
				maxc.lines++
			case strings.Contains(line, `msg="possible cross-protocol attack`):
				http.lines++
			case strings.Contains(line, "similar lines"):
				m := suppressedRE.FindStringSubmatch(line)
				require.NotNil(t, m, "a summary line as documented: %s", line)
				require.Equal(t, m[2], m[3])
				n, _ := strconv.Atoi(m[4])
				require.Equal(t, m[1], m[4])
				switch m[3] {
				case "max_clients":
					maxc.suppressed += n
					maxc.summaries++
				case "cross_protocol":
					http.suppressed += n
					http.summaries++
				}
			}
		}
		return maxc, http, len(logs)
	}
	require.Eventually(t, func() bool {
		maxc, http, _ := count()
		return maxc.lines+maxc.suppressed == refused && http.lines+http.suppressed == httpClosed
	}, 30*time.Second, 20*time.Millisecond, "every event logged or in a summary: %s", s.logs())
	elapsed := time.Since(began)
	maxc, http, logBytes := count()
	t.Logf("%d HTTP requests closed, %d connections refused in %v: %d+%d lines, %d+%d summaries, log %d bytes",
		httpClosed, refused, elapsed.Round(time.Millisecond), maxc.lines, http.lines, maxc.summaries, http.summaries, logBytes)

	// At most 10 lines and one summary per kind for each second the flood
	// lasted (a second begun counts whole).
	seconds := int(elapsed/time.Second) + 2
	require.LessOrEqual(t, maxc.lines, 10*seconds)
	require.LessOrEqual(t, maxc.summaries, seconds)
	require.LessOrEqual(t, http.lines, 10*seconds)
	require.LessOrEqual(t, http.summaries, seconds)
	require.Positive(t, maxc.summaries, "a summary of the refusals not logged")
	require.Positive(t, http.summaries, "a summary of the HTTP requests not logged")

	// The counter counts every refusal, logged or not.
	r := held[0]
	r.send(resp("INFO", "stats"))
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	header, err := r.rd.ReadString('\n')
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(header, "$")))
	require.NoError(t, err, header)
	body := make([]byte, n+2)
	_, err = io.ReadFull(r.rd, body)
	require.NoError(t, err)
	require.Contains(t, string(body), "rejected_connections:"+strconv.Itoa(refused)+"\r\n")
}
