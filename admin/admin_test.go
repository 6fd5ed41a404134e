package admin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/internal/version"
	"github.com/prepkey/prepkey/protocol"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// switchPinger is a backend whose ping succeeds, fails, or hangs until its
// context ends, as the test sets it.
type switchPinger struct {
	mu    sync.Mutex
	state string // "up", "down", "hang"
}

func (p *switchPinger) set(s string) { p.mu.Lock(); p.state = s; p.mu.Unlock() }

func (p *switchPinger) Ping(ctx context.Context) error {
	p.mu.Lock()
	s := p.state
	p.mu.Unlock()
	switch s {
	case "down":
		return errors.New("dial tcp: connection refused")
	case "hang":
		<-ctx.Done()
		return fmt.Errorf("ping: %w", ctx.Err())
	}
	return nil
}

// startAdmin serves the admin endpoints for srv and health on a loopback
// port and returns its base URL.
func startAdmin(t *testing.T, stats StatsSource, health *Health, store prometheus.Collector) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := New(Config{Stats: stats, Health: health, StoreMetrics: store})
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, a.Shutdown(context.Background()))
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestReadyz: /readyz follows the backend: 503 with the reason within the
// backend timeout plus one second of it failing or hanging, 200 within a
// second of it answering again. /healthz stays 200 throughout.
func TestReadyz(t *testing.T) {
	p := &switchPinger{state: "up"}
	const timeout = 300 * time.Millisecond
	h := NewHealth(p, timeout, nil)
	h.Start()
	defer h.Stop()
	base := startAdmin(t, &protocol.Server{}, h, nil)
	// A change must show within timeout + 1 s; the slack is for a loaded
	// machine, and the wait ends as soon as it shows.
	within := timeout + time.Second + 700*time.Millisecond
	waitStatus := func(want int, contains string) {
		t.Helper()
		var code int
		var body string
		require.Eventually(t, func() bool {
			code, body = get(t, base+"/readyz")
			return code == want && strings.Contains(body, contains)
		}, within, 20*time.Millisecond, "last: %d %q", code, body)
		code, _ = get(t, base+"/healthz")
		require.Equal(t, http.StatusOK, code)
	}
	waitStatus(http.StatusOK, "ok")
	p.set("down")
	waitStatus(http.StatusServiceUnavailable, "backend: dial tcp: connection refused")
	p.set("up")
	waitStatus(http.StatusOK, "ok")
	p.set("hang")
	waitStatus(http.StatusServiceUnavailable, "context deadline exceeded")
	p.set("up")
	waitStatus(http.StatusOK, "ok")
}

// TestEndpoints: only GET of the three endpoints is served; a RESP request
// gets HTTP's own refusal, never a reply of the RESP server.
func TestEndpoints(t *testing.T) {
	h := NewHealth(&switchPinger{state: "up"}, time.Second, nil)
	base := startAdmin(t, &protocol.Server{}, h, nil)
	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code, "not ready before the first ping")
	require.Equal(t, "backend not checked yet\n", body)
	code, _ = get(t, base+"/")
	require.Equal(t, http.StatusNotFound, code)
	resp, err := http.Post(base+"/metrics", "text/plain", strings.NewReader("x"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)

	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write([]byte("*3\r\n$10\r\nPK.PREPARE\r\n$2\r\nns\r\n$1\r\nk\r\n"))
	require.NoError(t, err)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(nc).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 400 Bad Request\r\n", line)
}

// TestMetrics: a scrape shows the server's counters moving with the
// commands sent, in Prometheus's text format, with Go's and the process's
// metrics.
func TestMetrics(t *testing.T) {
	st := memory.New(backend.Options{})
	defer st.Close()
	// The memory store served as one submitted off the loop, each run its
	// own (schedtest.Alone), so that its calls are counted as the
	// backend's.
	srv := protocol.New(protocol.Config{Backend: "memory", Version: "1.2.3", MaxClients: 9},
		commands.New(schedtest.Declare(st, schedtest.Alone), commands.Limits{MaxKeyBytes: 64, MaxValueBytes: 64}, nil), st)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Shutdown(context.Background())
	h := NewHealth(st, time.Second, nil)
	h.Start()
	defer h.Stop()
	require.Eventually(t, func() bool { return h.Pings() > 0 }, 5*time.Second, 5*time.Millisecond)
	base := startAdmin(t, srv, h, nil)

	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	rd := bufio.NewReader(nc)
	send := func(want string, args ...string) {
		t.Helper()
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		_, err := nc.Write([]byte(b.String()))
		require.NoError(t, err)
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, line)
	}
	for range 3 {
		send(":1\r\n", "PK.PREPARE", "ns", fmt.Sprint(time.Now().UnixNano()), "v")
	}
	send(":0\r\n", "PK.ROLLBACK", "ns", "none")
	send("$-1\r\n", "PK.GET", "ns", "none")
	send("-ERR syntax error\r\n", "PK.PREPARE", "ns", "k", "v", "EX")

	code, body := get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)
	counter := func(name string, labels ...string) float64 {
		t.Helper()
		f := fams[name]
		require.NotNil(t, f, name)
		for _, m := range f.Metric {
			if hasLabels(m, labels...) {
				if m.Counter != nil {
					return m.Counter.GetValue()
				}
				return m.Gauge.GetValue()
			}
		}
		t.Fatalf("%s%v: no such series", name, labels)
		return 0
	}
	require.Equal(t, 3.0, counter("prepkey_commands_total", "command", "pk.prepare", "outcome", "1"))
	require.Equal(t, 1.0, counter("prepkey_commands_total", "command", "pk.prepare", "outcome", "error"))
	require.Equal(t, 1.0, counter("prepkey_commands_total", "command", "pk.rollback", "outcome", "0"))
	require.Equal(t, 1.0, counter("prepkey_commands_total", "command", "pk.get", "outcome", "nil"))
	require.Equal(t, 0.0, counter("prepkey_commands_total", "command", "pk.get", "outcome", "unavailable"))
	require.Equal(t, 1.0, counter("prepkey_error_replies_total", "prefix", "ERR"))
	require.Equal(t, 1.0, counter("prepkey_connected_clients"))
	require.Equal(t, 1.0, counter("prepkey_connections_received_total"))
	require.Equal(t, 0.0, counter("prepkey_rejected_connections_total"))
	require.Equal(t, 9.0, counter("prepkey_max_clients"))
	require.Equal(t, 1.0, counter("prepkey_backend_up"))
	b := version.Get()
	require.Equal(t, runtime.Version(), b.GoVersion)
	require.Equal(t, 1.0, counter("prepkey_build_info", "version", "1.2.3", "commit", b.Commit, "goversion", b.GoVersion, "backend", "memory"))

	hist := func(name string, labels ...string) *dto.Histogram {
		for _, m := range fams[name].Metric {
			if hasLabels(m, labels...) {
				return m.Histogram
			}
		}
		t.Fatalf("%s%v: no such series", name, labels)
		return nil
	}
	lat := hist("prepkey_command_duration_seconds", "command", "pk.prepare")
	require.Equal(t, uint64(4), lat.GetSampleCount())
	require.Greater(t, lat.GetSampleSum(), 0.0)
	// The store went through submissions (not inline): one call per
	// request, since each waited for the previous reply; the refused
	// PREPARE is refused when parsed and never reaches the store (as on
	// the loop's own Redis connection before: a submission holds ops only).
	require.Equal(t, uint64(5), hist("prepkey_backend_batch_size").GetSampleCount())
	require.Equal(t, 5.0, hist("prepkey_backend_batch_size").GetSampleSum())
	require.Equal(t, uint64(3), hist("prepkey_backend_call_duration_seconds", "op", "prepare").GetSampleCount())
	require.Equal(t, uint64(1), hist("prepkey_backend_call_duration_seconds", "op", "rollback").GetSampleCount())
	require.Equal(t, uint64(1), hist("prepkey_backend_call_duration_seconds", "op", "get").GetSampleCount())
	require.Len(t, fams["prepkey_backend_call_duration_seconds"].Metric, 3, "ops never called have no series")
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total", "process_start_time_seconds"} {
		require.Contains(t, fams, name)
	}
	for name := range fams {
		require.False(t, strings.HasPrefix(name, "prepkey_process_"), name)
	}
	requireCleanBuckets(t, body)
}

// requireCleanBuckets: every le label of the exposition is a short decimal
// (1e-06, 0.0025, 10), never a float's rounding error such as
// 1.0000000000000002e-06: an integer (batch sizes) or at most three
// significant digits.
func requireCleanBuckets(t *testing.T, body string) {
	t.Helper()
	les := regexp.MustCompile(`le="([^"]*)"`).FindAllStringSubmatch(body, -1)
	require.NotEmpty(t, les)
	for _, m := range les {
		if m[1] == "+Inf" {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err, m[1])
		if m[1] == strconv.Itoa(int(v)) {
			continue
		}
		short, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
		require.Equal(t, short, v, "le=%q is not a short decimal", m[1])
		require.LessOrEqual(t, len(m[1]), 8, "le=%q", m[1])
	}
}

// TestSeriesCount: an idle sidecar's /metrics holds only series that can
// move. Before, every command (22) had 7 outcome counters and a 25-series
// latency histogram, and the backend histograms were there on memory: too:
// 762 prepkey_ series on an idle memory: sidecar (781 on file:).
func TestSeriesCount(t *testing.T) {
	srv := protocol.New(protocol.Config{Version: "1.2.3", Backend: "memory"}, commands.New(memory.New(backend.Options{}), commands.Limits{MaxKeyBytes: 64, MaxValueBytes: 64}, nil), nil)
	reg := NewRegistry(srv, NewHealth(&switchPinger{state: "up"}, time.Second, nil), memory.New(backend.Options{}).Info().Metrics)
	fams, err := reg.Gather()
	require.NoError(t, err)
	counts := map[string]int{}
	total := 0
	for _, f := range fams {
		n := len(f.Metric)
		if f.GetType() == dto.MetricType_HISTOGRAM {
			n = 0
			for _, m := range f.Metric {
				n += len(m.Histogram.Bucket) + 3 // +Inf, _sum, _count
			}
		}
		if strings.HasPrefix(f.GetName(), "prepkey_") {
			counts[f.GetName()] = n
			total += n
		}
	}
	// Commands and outcomes that can happen: 7 PK commands (4 outcomes
	// each but 5 for pk.reprepare, 3 for pk.scan), 14 connection commands
	// (ok, error), unknown (error); no histogram before its first call.
	require.Equal(t, 4+4+4+5+4+4+3+countConn(srv)*2+1, counts["prepkey_commands_total"], "%v", counts)
	require.NotContains(t, counts, "prepkey_command_duration_seconds")
	require.NotContains(t, counts, "prepkey_backend_call_duration_seconds")
	require.NotContains(t, counts, "prepkey_backend_batch_size")
	require.LessOrEqual(t, total, 70, "%v", counts)
	t.Logf("prepkey_ series on an idle memory: sidecar: %d (%v)", total, counts)
}

// countConn is how many connection commands srv counts (every name but the
// PK commands' and unknown).
func countConn(srv *protocol.Server) int {
	n := 0
	for _, cs := range srv.Stats().Commands {
		if !strings.HasPrefix(cs.Name, "pk.") && cs.Name != "unknown" {
			n++
		}
	}
	return n
}

func hasLabels(m *dto.Metric, kv ...string) bool {
	for i := 0; i+1 < len(kv); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == kv[i] && l.GetValue() == kv[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
