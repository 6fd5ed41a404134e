package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The end-to-end test of issue 23, N1: one large request within the
// limits, arriving as a socket delivers it.

// bigValues and bigValue are the request's shape: PK.MPREPARE of 64 values
// of 1 MiB (--max-value-bytes 1 MiB), 64 MiB in all.
const (
	bigValues = 64
	bigValue  = 1 << 20
)

// procCPU is the CPU time pid has spent, user and system, from
// /proc/<pid>/stat.
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The fields after the command's name, which is in parentheses:
	// state is the first, utime and stime the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, err := strconv.ParseInt(f[11], 10, 64)
	require.NoError(t, err)
	stime, err := strconv.ParseInt(f[12], 10, 64)
	require.NoError(t, err)
	// USER_HZ is 100 on every Linux architecture the sidecar runs on.
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// bigRequest is what one upload of a large request cost the server.
type bigRequest struct {
	took      time.Duration // from its first byte to its reply
	cpu       time.Duration // the server's CPU meanwhile
	rssBefore int64         // the server's RSS before it
	rssGrowth int64         // its peak RSS (VmHWM) over its RSS before
	others    []probeResult // the other clients' meanwhile
}

// probe is another client's command, sent every 5 ms on a connection of
// its own during the upload, and its one-line reply.
type probe struct{ req, want string }

// probeResult is what a probe saw during the upload.
type probeResult struct {
	worst   time.Duration // its slowest reply
	replies int           // its replies
}

// runProbe sends p every 5 ms on nc until stop, and returns when each
// request was sent and how long its reply took.
func runProbe(nc net.Conn, p probe, stop <-chan struct{}) (at []time.Time, took []time.Duration, err error) {
	buf := make([]byte, 256)
	for {
		select {
		case <-stop:
			return at, took, nil
		case <-time.After(5 * time.Millisecond):
		}
		began := time.Now()
		if _, err := nc.Write([]byte(p.req)); err != nil {
			return at, took, err
		}
		_ = nc.SetReadDeadline(time.Now().Add(time.Minute))
		n, err := nc.Read(buf)
		if err != nil {
			return at, took, err
		}
		if string(buf[:n]) != p.want {
			return at, took, fmt.Errorf("%q got %q, want %q", p.req, buf[:n], p.want)
		}
		at, took = append(at, began), append(took, time.Since(began))
	}
}

// uploadBig writes req to the server at addr (process pid) in pieces of
// 64 KiB, as a socket delivers it, and reads its reply, which must be
// want; meanwhile each probe is another client.
func uploadBig(t *testing.T, addr string, pid int, req []byte, want string, probes ...probe) bigRequest {
	t.Helper()
	rssBefore := procStatus(t, pid, "VmRSS")
	cpuBefore := procCPU(t, pid)

	type probed struct {
		at   []time.Time
		took []time.Duration
		err  error
	}
	stop := make(chan struct{})
	results := make([]chan probed, len(probes))
	for i, p := range probes {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer nc.Close()
		results[i] = make(chan probed, 1)
		go func() {
			at, took, err := runProbe(nc, p, stop)
			results[i] <- probed{at, took, err}
		}()
	}
	time.Sleep(200 * time.Millisecond) // the other clients alone

	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer nc.Close()
	began := time.Now()
	written := make(chan error, 1)
	go func() {
		for b := req; len(b) > 0; {
			n := min(len(b), 64<<10)
			if _, err := nc.Write(b[:n]); err != nil {
				written <- err
				return
			}
			b = b[n:]
		}
		written <- nil
	}()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Minute))
	rd := bufio.NewReader(nc)
	reply, err := rd.ReadString('\n')
	require.NoError(t, err, "the reply to the large request")
	res := bigRequest{took: time.Since(began), rssBefore: rssBefore}
	ended := time.Now()
	require.Equal(t, want, reply)
	require.NoError(t, <-written)
	res.cpu = procCPU(t, pid) - cpuBefore
	res.rssGrowth = procStatus(t, pid, "VmHWM") - rssBefore
	close(stop)
	var seen strings.Builder
	for i, p := range probes {
		r := <-results[i]
		require.NoError(t, r.err, "the other client sending %q", p.req)
		var pr probeResult
		for k, at := range r.at {
			if !at.Before(began) && at.Before(ended) {
				pr.worst = max(pr.worst, r.took[k])
				pr.replies++
			}
		}
		res.others = append(res.others, pr)
		fmt.Fprintf(&seen, "; %s: %d replies meanwhile, the slowest in %v",
			strings.Fields(strings.ReplaceAll(p.req, "\r\n", " "))[2], pr.replies, pr.worst.Round(time.Millisecond))
	}
	t.Logf("%d MiB in one request: answered in %v, %v of the server's CPU, peak RSS +%d MiB%s",
		len(req)/mib, res.took.Round(time.Millisecond), res.cpu, res.rssGrowth/mib, seen.String())
	return res
}

// bigArgs is the request: name, then count, then ns, key and a value of
// bigValue bytes bigValues times (PK.MPREPARE; redis-server's MSET takes
// no count and no namespace).
func bigArgs(name string, count bool, ns string) []byte {
	var b strings.Builder
	n := 1 + bigValues*2
	if count {
		n += 1 + bigValues
	}
	fmt.Fprintf(&b, "*%d\r\n$%d\r\n%s\r\n", n, len(name), name)
	if count {
		fmt.Fprintf(&b, "$%d\r\n%d\r\n", len(strconv.Itoa(bigValues)), bigValues)
	}
	value := strings.Repeat("v", bigValue)
	for i := range bigValues {
		if ns != "" {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(ns), ns)
		}
		key := "k" + strconv.Itoa(i)
		fmt.Fprintf(&b, "$%d\r\n%s\r\n$%d\r\n%s\r\n", len(key), key, len(value), value)
	}
	return []byte(b.String())
}

// TestBigRequest: a PK.MPREPARE of 64 values of 1 MiB, within the limits,
// arriving 64 KiB at a time, is answered :1 on every backend, with the
// sidecar's CPU and memory in proportion to the request. Before issue 23
// (N1) the request was copied and parsed again from its start on each of
// its 1,024 reads: 19-25 s of the sidecar's CPU and +0.6-1.3 GB of RSS on
// the shared test machine (issue 23 saw 9-18 s and 2.3 GB). Other clients are
// answered meanwhile (their worst latency is logged, not asserted: timings
// are not asserted on a shared machine; docs/benchmarks.md has them). With
// PK_BIG_REDIS_SERVER=1 it also times redis-server taking an MSET of the
// same shape, for comparison.
func TestBigRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB per backend")
	}
	for _, b := range []backendCase{
		{"memory", func(testing.TB) []string { return []string{"--backend", "memory:"} }},
		// --log-level debug: pebble's "flushed" line tells when the
		// batch's flush, which ends after the reply, is done.
		{"file", func(t testing.TB) []string {
			return []string{"--backend", "file:" + t.TempDir(), "--log-level", "debug"}
		}},
		// A Redis of its own: 64 MiB of values would stay in the shared one.
		{"redis", func(tb testing.TB) []string {
			t := tb.(*testing.T)
			port := freePort(t)
			redisServer(t, "--port", strconv.Itoa(port))
			return []string{"--backend", fmt.Sprintf("redis://127.0.0.1:%d", port)}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			// One at a time: each measures its own sidecar's CPU and
			// memory, and they share two cores.
			// --backend-timeout 30s: the store's own part (pebble writing
			// and syncing 64 MiB, Redis running a script over 64 MiB of
			// arguments) takes 0.5-3 s on the shared 2-core test machine,
			// where fresh memory costs about 15 ms per MiB; what is tested
			// here is the sidecar's part.
			s := start(t, append(b.args(t), "--max-value-bytes", strconv.Itoa(bigValue), "--backend-timeout", "30s")...)
			ns := uniqueNS(t)
			req := bigArgs("PK.MPREPARE", true, ns)
			res := uploadBig(t, s.addr, s.cmd.Process.Pid, req, ":1\r\n",
				probe{resp("PK.GET", ns, "other"), "$-1\r\n"}, // through the store
				probe{resp("PING"), "+PONG\r\n"})              // on the loop
			for _, o := range res.others {
				require.Positive(t, o.replies, "the other clients were answered while the request arrived")
			}
			// Linear work: the request is copied once off the socket and
			// its values once more by the store (memory:) or its batch
			// (file:, redis://): 0.7-2.1 s measured. Before, 19-25 s.
			require.Less(t, res.cpu, 5*time.Second, "the sidecar's CPU for one 64 MiB request")
			// The request once (the assembler's arguments) and the store's
			// copy: +130 MiB on memory: and redis://, +140-145 MiB on file:
			// (its batch, made to measure on every path since
			// TestBigBatchMemory). Before, 0.6-1.3 GB; file: at 2x the
			// batch, grown by doubling, +254-294 MiB.
			times := 3.0
			if b.name == "file" {
				// pebble's flush of the batch runs after the reply; on a
				// loaded machine part of it may come before.
				times = 3.5
			}
			require.Less(t, float64(res.rssGrowth), times*float64(len(req)), "the sidecar's peak RSS growth")
			if b.name == "file" {
				// The flush's garbage (a fresh buffer for each 1 MiB value's
				// sstable block, and pebble's WAL copy of the batch; see
				// backend/disk's TestBigBatchMemory) adds to the peak
				// after the reply; logged, not asserted: how far pebble's
				// WAL writer lags behind varies by 60 MiB.
				require.Eventually(t, func() bool { return strings.Contains(s.logs(), "flushed ") },
					time.Minute, 10*time.Millisecond, "pebble's flush of the batch")
				t.Logf("peak RSS with the flush: +%d MiB", (procStatus(t, s.cmd.Process.Pid, "VmHWM")-res.rssBefore)/mib)
			}
			s.raw(t).do(fmt.Sprintf("$%d\r\n%s\r\n", bigValue, strings.Repeat("v", bigValue)), "PK.GET", ns, "k63")
		})
	}
	if os.Getenv("PK_BIG_REDIS_SERVER") == "1" {
		t.Run("redis-server", func(t *testing.T) {
			port := freePort(t)
			srv := redisServer(t, "--port", strconv.Itoa(port))
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			require.Eventually(t, func() bool {
				nc, err := net.Dial("tcp", addr)
				if err == nil {
					nc.Close()
				}
				return err == nil
			}, 10*time.Second, 20*time.Millisecond)
			uploadBig(t, addr, srv.Process.Pid, bigArgs("MSET", false, ""), "+OK\r\n",
				probe{resp("GET", "other"), "$-1\r\n"}, probe{resp("PING"), "+PONG\r\n"})
		})
	}
}
