package main

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end tests of issue 9: hostile input and resource bounds.

// onBackends runs f on a fresh sidecar for each backend named in names that
// this run has (memory and file always; redis where scripts/test.sh started
// it).
func onBackends(t *testing.T, names []string, f func(t *testing.T, s *sidecar)) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for _, b := range backends(t) {
		if !want[b.name] {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, start(t, b.args(t)...))
		})
	}
}

var memFileRedis = []string{"memory", "file", "redis"}

// TestIntegerArguments: integers are read as Redis's string2ll reads them;
// a numeral it refuses gets Redis's own error, and nothing is stored.
func TestIntegerArguments(t *testing.T) {
	onBackends(t, memFileRedis, func(t *testing.T, s *sidecar) {
		r := s.raw(t)
		ns := uniqueNS(t)
		notInt := "-ERR value is not an integer or out of range\r\n"
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "EX", "+5")
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "EX", "007")
		r.do(notInt, "PK.PREPARE", ns, "a", "v", "px", "-0")
		r.do(notInt, "PK.REPREPARE", ns, "a", "v", "EXAT", "+4102444800")
		r.do("-ERR invalid expire time in 'pk.prepare' command\r\n", "PK.PREPARE", ns, "a", "v", "EX", "99999999999999999999")
		r.do("-ERR invalid expire time in 'pk.prepare' command\r\n", "PK.PREPARE", ns, "a", "v", "EX", "1.5")
		r.do("*-1\r\n", "PK.GETVALUE", ns, "a")
		r.do(":1\r\n", "PK.PREPARE", ns, "a", "v", "EX", "5")
	})
}

// TestCrossProtocol: the request a web page can make a browser send. The
// sidecar closes the connection at POST, answers nothing, runs nothing of
// the body, and logs it once.
func TestCrossProtocol(t *testing.T) {
	onBackends(t, memFileRedis, func(t *testing.T, s *sidecar) {
		for _, req := range []string{
			"POST / HTTP/1.1\r\nHost: 127.0.0.1:6380\r\nContent-Type: text/plain\r\nContent-Length: 36\r\n\r\nPK.PREPARE username admin attacker\r\n",
			// A GET carries no body, but a Host: line closes it just the same.
			"GET / HTTP/1.1\r\nHost: 127.0.0.1:6380\r\n\r\nPK.PREPARE username admin attacker\r\n",
		} {
			r := s.raw(t)
			r.send(req)
			_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(r.rd)
			require.NoError(t, err, "the sidecar closes the connection")
			require.NotContains(t, string(got), ":1", "nothing of the body runs")
			if strings.HasPrefix(req, "POST") {
				require.Empty(t, string(got), "POST is refused before anything is answered")
			}
		}
		r := s.raw(t)
		r.do("*-1\r\n", "PK.GETVALUE", "username", "admin")
		r.do(":1\r\n", "PK.PREPARE", "username", "admin", "owner")
		require.Equal(t, 2, strings.Count(s.logs(), "possible cross-protocol attack"), s.logs())
	})
}

// TestCommandsBeforeFramingError: complete commands in the same read as a
// framing error are answered before the protocol error, as Redis does.
func TestCommandsBeforeFramingError(t *testing.T) {
	onBackends(t, memFileRedis, func(t *testing.T, s *sidecar) {
		ns := uniqueNS(t)
		r := s.raw(t)
		r.send(resp("PK.PREPARE", ns, "a", "v") + resp("PING") + resp("PK.PREPARE", ns, "b", "v") + "*1\r\n$-5\r\n")
		r.expect(":1\r\n+PONG\r\n:1\r\n-ERR Protocol error: invalid bulk length\r\n")
		r.closed()
		r = s.raw(t)
		r.do("$1\r\nv\r\n", "PK.GET", ns, "b")
	})
}

// TestAuthLiftsFramingLimits: a request bigger than the limits before AUTH
// sent in the same write as the AUTH before it is read under the limits
// after it.
func TestAuthLiftsFramingLimits(t *testing.T) {
	s := start(t, "--backend", "memory:", "--requirepass", "pw", "--max-value-bytes", "100000")
	r := s.raw(t)
	big := strings.Repeat("x", 70000)
	r.send(resp("AUTH", "pw") + resp("PK.PREPARE", "ns", "k", big))
	r.expect("+OK\r\n:1\r\n")
	r = s.raw(t)
	r.send(resp("PING") + resp("PK.PREPARE", "ns", "k", big))
	r.expect("-NOAUTH Authentication required.\r\n-ERR Protocol error: unauthenticated bulk length\r\n")
	r.closedOrReset()
}

// closedOrReset asserts the server closed the connection; closing with
// input it did not read, the kernel sends a reset instead of an EOF.
func (r *raw) closedOrReset() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, r.rd)
	if err != nil {
		require.ErrorIs(r.t, err, syscall.ECONNRESET)
	}
}
