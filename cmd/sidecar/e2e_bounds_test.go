package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
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

// procStatus reads a field of /proc/<pid>/status in bytes: VmRSS (now) or
// VmHWM (the peak so far).
func procStatus(t testing.TB, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err, line)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

const mib = 1 << 20

// TestPreAuthMemory: before AUTH a connection holds at most 64 KiB of
// input and 64 KiB of unread replies, then is closed. The loads of issue 9
// (4 connections that send PINGs and never read; 100 connections each
// holding an incomplete request of 16 × 64 KiB) grew the sidecar by
// hundreds of MiB.
func TestPreAuthMemory(t *testing.T) {
	s := start(t, "--backend", "memory:", "--requirepass", "pw")
	pid := s.cmd.Process.Pid
	before := procStatus(t, pid, "VmRSS")

	var wg sync.WaitGroup
	closed := make(chan error, 104)
	// Never reading: the replies (-NOAUTH) pile up.
	pings := []byte(strings.Repeat(resp("PING"), 1000))
	for range 4 {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
			for {
				if _, err := nc.Write(pings); err != nil {
					closed <- err
					return
				}
			}
		}()
	}
	// An incomplete but legal request: 15 bulks of 64 KiB and a last one
	// cut short.
	bulk := "$65536\r\n" + strings.Repeat("x", 65536) + "\r\n"
	partial := "*16\r\n" + strings.Repeat(bulk, 15) + "$65536\r\nxx"
	for range 100 {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetDeadline(time.Now().Add(60 * time.Second))
			_, _ = nc.Write([]byte(partial)) // may fail once refused
			// The sidecar answers the refusal and closes.
			got, err := io.ReadAll(nc)
			if err == nil || errors.Is(err, syscall.ECONNRESET) {
				if err == nil && string(got) != "-ERR Protocol error: unauthenticated request length\r\n" {
					err = fmt.Errorf("reply %q", got)
				} else {
					err = nil
				}
			}
			closed <- err
		}()
	}
	wg.Wait()
	close(closed)
	for err := range closed {
		if err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("a connection was not closed by the sidecar: %v", err)
		}
	}
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("RSS before %d MiB, peak %d MiB", before/mib, peak/mib)
	require.Less(t, peak-before, int64(48*mib), "RSS before %d MiB, peak %d MiB", before/mib, peak/mib)
	require.Contains(t, s.logs(), "closing a client that does not read its replies before AUTH")

	r := s.raw(t)
	r.do("+OK\r\n", "AUTH", "pw")
	r.do("+PONG\r\n", "PING")
}

// TestIdleTimeout: --timeout closes a connection idle that long; one that
// sends keeps its connection.
func TestIdleTimeout(t *testing.T) {
	s := start(t, "--backend", "memory:", "--timeout", "1")
	idle := s.raw(t)
	idle.do("+PONG\r\n", "PING")
	busy := s.raw(t)
	idleClosed := make(chan struct{})
	go func() {
		_ = idle.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := idle.rd.ReadByte()
		if errors.Is(err, io.EOF) {
			close(idleClosed)
		}
	}()
	began := time.Now()
	for {
		busy.do("+PONG\r\n", "PING")
		select {
		case <-idleClosed:
			// The busy one was never idle for a second: still open.
			busy.do("+PONG\r\n", "PING")
			require.GreaterOrEqual(t, time.Since(began), time.Second)
			return
		case <-time.After(200 * time.Millisecond):
		}
		require.Less(t, time.Since(began), 10*time.Second, "the idle connection was not closed")
	}
}
