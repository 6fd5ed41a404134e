package e2e

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestSlowReadersBound: 50 connections pipeline PK.GET of a 64 KiB value
// and never read the replies. Each stays under its own bound of unread
// replies (64 MiB), so before --max-clients-memory nothing bounded their
// sum: 48 MiB each, 2.4 GB together, kept after they closed (issue 30).
// With the bound the connections holding the most are closed (INFO's
// evicted_clients), the sidecar's peak RSS stays near the bound, another
// client's PING is answered meanwhile, and the memory goes back once the
// slow readers are gone.
func TestSlowReadersBound(t *testing.T) {
	if testing.Short() {
		t.Skip("fills the sidecar with unread replies and reads its RSS")
	}
	const (
		bound   = 128 * mib
		readers = 50
		value   = 64 << 10
		gets    = 768 // 48 MiB of replies each, under the connection's own 64 MiB
	)
	s := start(t, "--backend", "memory:", "--max-clients-memory", "128MiB", "--admin-listen", "127.0.0.1:0")
	pid := s.cmd.Process.Pid
	ns := uniqueNS(t)
	rdb := s.client(t, 2, func(o *redis.Options) { o.ReadTimeout = 10 * time.Second })
	require.Equal(t, int64(1), rdb.Do(ctx(), "PK.PREPARE", ns, "k", strings.Repeat("v", value)).Val())
	require.Equal(t, "128MiB", fmt.Sprintf("%dMiB", infoField(t, rdb, "memory", "maxmemory_clients")/mib))
	idle := procStatus(t, pid, "VmRSS")

	// Another client PINGs throughout, one at a time; first alone, as the
	// machine's own latency to compare with.
	percentiles := func(lat []time.Duration) string {
		lat = slices.Clone(lat)
		slices.Sort(lat)
		return fmt.Sprintf("%d answered, p50 %v, p99 %v, max %v", len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
	}
	// Each PING's latency is taken to the kernel's receive time of its
	// PONG (stampedConn), and to the test's reading of it, as seen.
	stop := make(chan struct{})
	pings := make(chan [2][]time.Duration, 1)
	pinger, err := net.Dial("tcp", s.addr)
	require.NoError(t, err)
	defer pinger.Close()
	rd, err := newStampedConn(pinger)
	require.NoError(t, err)
	go func() {
		var lat, seen []time.Duration
		defer func() { pings <- [2][]time.Duration{lat, seen} }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			began := time.Now()
			// A stalled loop is a failure, not a slow answer: the
			// issue's bar is 100 ms, reported below.
			_ = pinger.SetDeadline(began.Add(2 * time.Second))
			if _, err := pinger.Write([]byte("PING\r\n")); err != nil {
				return
			}
			line, at, err := rd.readLine()
			if err != nil || line != "+PONG\r\n" {
				lat = append(lat, -1) // no answer within 2 s
				return
			}
			seen = append(seen, time.Since(began))
			lat = append(lat, at.Sub(began))
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// The slow readers: each names itself, sends its GETs and a last
	// CLIENT SETNAME, and never reads. Once no connection is left under
	// its first name, each was served to its end or evicted (none is
	// closed for its own bound).
	var alone []time.Duration
	for range 100 {
		began := time.Now()
		require.Equal(t, "PONG", rdb.Ping(ctx()).Val())
		alone = append(alone, time.Since(began))
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("PING alone: %s", percentiles(alone))
	get := resp("PK.GET", ns, "k")
	slow := make([]net.Conn, readers)
	for i := range slow {
		nc, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		defer nc.Close()
		slow[i] = nc
		req := resp("CLIENT", "SETNAME", fmt.Sprintf("slow-%d", i)) + strings.Repeat(get, gets) +
			resp("CLIENT", "SETNAME", fmt.Sprintf("done-%d", i))
		go func() { _, _ = nc.Write([]byte(req)) }() // fails once the sidecar closes it
	}
	require.Eventually(t, func() bool {
		list, err := rdb.ClientList(ctx()).Result()
		return err == nil && int64(strings.Count(list, "name=done-"))+infoField(t, rdb, "stats", "evicted_clients") == readers
	}, 60*time.Second, 50*time.Millisecond, "every slow reader served to its end or evicted")

	close(stop)
	measured := <-pings
	lat := measured[0]
	require.NotEmpty(t, lat)
	require.NotContains(t, lat, time.Duration(-1), "a PING was not answered within 2 s while slow readers filled the sidecar")
	t.Logf("PING while slow readers fill the sidecar: %s (as the test read them: %s)", percentiles(lat), percentiles(measured[1]))
	// The bar is 100 ms: the p99 is held to it, the max to
	// maxPing. Before the slow readers were served by one bounded pass
	// per loop round (protocol/backlog.go), the loop read no socket while
	// they were served: max 289-682 ms.
	slices.Sort(lat)
	require.Less(t, lat[len(lat)*99/100], 100*time.Millisecond, "PING p99 while slow readers fill the sidecar")
	require.Less(t, lat[len(lat)-1], maxPing, "PING max while slow readers fill the sidecar")

	evicted := infoField(t, rdb, "stats", "evicted_clients")
	held := infoField(t, rdb, "memory", "mem_clients_normal")
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("idle RSS %d MiB, peak RSS %d MiB, evicted %d of %d, clients' memory after %d MiB",
		idle/mib, peak/mib, evicted, readers, held/mib)
	require.Greater(t, evicted, int64(readers/2), "most slow readers are evicted: 128 MiB holds 2 of them")
	require.Contains(t, s.logs(), "closing the client that holds the most: clients' memory past --max-clients-memory")
	_, metrics := httpGet(t, s.adminURL(t)+"/metrics")
	require.Contains(t, metrics, fmt.Sprintf("\nprepkey_evicted_clients_total %d\n", evicted))
	require.Contains(t, metrics, "\nprepkey_max_clients_memory_bytes 1.34217728e+08\n")
	require.LessOrEqual(t, held, int64(bound), "what the survivors hold fits the bound")
	// The heap holds the bound, the last serve's replies past it, and what
	// the collector has not yet reclaimed (GOGC 100 on memory:).
	require.Less(t, peak, idle+2*bound+64*mib, "peak RSS near the bound (2.4 GB without it)")

	for _, nc := range slow {
		_ = nc.Close()
	}
	require.Eventually(t, func() bool {
		return infoField(t, rdb, "memory", "mem_clients_normal") < 64<<10
	}, 10*time.Second, 20*time.Millisecond, "the survivors' buffers are counted out when they close")
	require.Eventually(t, func() bool {
		return procStatus(t, pid, "VmRSS") < idle+32*mib
	}, 30*time.Second, 100*time.Millisecond, "RSS back near idle (%d MiB) after the slow readers closed", idle/mib)
	t.Logf("RSS after they closed: %d MiB", procStatus(t, pid, "VmRSS")/mib)
}

// maxPing bounds the slowest PING of TestSlowReadersBound. The bar
// is 100 ms, met at load average 10-18 on 2 cores in most runs but not all
// (25-242 ms, to the kernel's receive time of the PONG): a loaded machine
// delays the sidecar's loop and the test's own process for a core. So the
// bound is set under what the loop's stall took before the fix (289 ms
// and up on a quiet machine), not at the bar; docs/operations.md has the
// figures.
const maxPing = 250 * time.Millisecond

// infoField reads an integer field of an INFO section.
func infoField(t testing.TB, rdb *redis.Client, section, field string) int64 {
	t.Helper()
	info, err := rdb.Info(ctx(), section).Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err, line)
			return n
		}
	}
	t.Fatalf("INFO %s has no %s: %q", section, field, info)
	return 0
}
