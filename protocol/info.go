package protocol

import (
	"context"
	"fmt"
	"github.com/prepkey/prepkey/protocol/stats"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// INFO [section ...]
//
// The sections and field names are Redis's where they mean the same thing,
// so that redis-cli, Redis dashboards and redis_exporter read them as they
// read Redis. As in Redis, INFO and INFO default leave out Commandstats;
// INFO all and INFO everything show every section; named sections show
// those. Backend is prepkey's own (and pings the backend: INFO runs off the
// loop).
func (c *conn) info(args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	everything := want["all"] || want["everything"]
	byDefault := len(want) == 0 || want["default"] || everything
	s := c.srv
	snap := s.Stats()
	var b strings.Builder
	section := func(name string, inDefault bool, fields func(add func(k, v string))) {
		if !(byDefault && inDefault) && !everything && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		fields(func(k, v string) { b.WriteString(k + ":" + v + "\r\n") })
	}
	section("Server", true, func(add func(k, v string)) {
		add("redis_version", redisVersion)
		add("prepkey_version", s.cfg.Version)
		add("redis_mode", "standalone")
		add("os", runtime.GOOS)
		add("arch_bits", "64")
		add("process_id", fmt.Sprint(os.Getpid()))
		add("run_id", s.runID)
		add("tcp_port", listenPort(s))
		add("uptime_in_seconds", fmt.Sprint(int64(snap.Uptime.Seconds())))
		add("uptime_in_days", fmt.Sprint(int64(snap.Uptime.Hours()/24)))
	})
	section("Clients", true, func(add func(k, v string)) {
		add("connected_clients", fmt.Sprint(snap.ConnectedClients))
		add("maxclients", fmt.Sprint(snap.MaxClients))
		add("blocked_clients", "0")
		// prepkey's own: what open transactions hold queued, and its
		// bound (as Redis's maxmemory_clients in its Memory section).
		add("tx_queued_bytes", fmt.Sprint(snap.TxQueuedBytes))
		add("max_tx_memory", fmt.Sprint(snap.MaxTxMemory))
	})
	section("Memory", true, func(add func(k, v string)) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		add("used_memory", fmt.Sprint(ms.HeapAlloc))
		add("used_memory_rss", fmt.Sprint(rssBytes()))
	})
	section("Persistence", true, func(add func(k, v string)) { add("loading", "0") })
	section("Stats", true, func(add func(k, v string)) {
		var errs uint64
		for _, n := range snap.Errors {
			errs += n
		}
		add("total_connections_received", fmt.Sprint(snap.ConnectionsTotal))
		add("total_commands_processed", fmt.Sprint(snap.CommandsProcessed))
		add("rejected_connections", fmt.Sprint(snap.RejectedTotal))
		add("total_error_replies", fmt.Sprint(errs))
	})
	section("Replication", true, func(add func(k, v string)) {
		add("role", "master")
		add("connected_slaves", "0")
	})
	section("CPU", true, func(add func(k, v string)) {
		user, sys := cpuSeconds()
		add("used_cpu_sys", fmt.Sprintf("%.6f", sys))
		add("used_cpu_user", fmt.Sprintf("%.6f", user))
	})
	section("Commandstats", false, func(add func(k, v string)) {
		for _, cs := range snap.Commands {
			if cs.Name == "unknown" || cs.Calls() == 0 {
				continue
			}
			// As in Redis: calls are those that ran (failed ones too),
			// rejected_calls those refused before (argument errors).
			rejected := cs.Outcomes[stats.OutcomeError]
			calls := cs.Calls() - rejected
			usec := cs.Latency.Sum / 1000
			perCall := 0.0
			if calls > 0 {
				perCall = float64(usec) / float64(calls)
			}
			add("cmdstat_"+cs.Name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
				calls, usec, perCall, rejected, cs.Outcomes[stats.OutcomeUnavailable]))
		}
	})
	section("Errorstats", true, func(add func(k, v string)) {
		prefixes := slices.Sorted(maps.Keys(snap.Errors))
		for _, p := range prefixes {
			add("errorstat_"+p, fmt.Sprintf("count=%d", snap.Errors[p]))
		}
	})
	section("Backend", true, func(add func(k, v string)) {
		ready, reason := "1", ""
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.backend.Ping(ctx); err != nil {
			ready, reason = "0", strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
		}
		cancel()
		add("backend", s.cfg.Backend)
		add("backend_ready", ready)
		if reason != "" {
			add("backend_error", reason)
		}
	})
	section("Keyspace", true, func(func(k, v string)) {})
	c.out.BulkString(b.String())
}

// rssBytes is the process's resident set size, from /proc (0 elsewhere).
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func listenPort(s *Server) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return "0"
	}
	addr := s.ln.Addr().String()
	if i := strings.LastIndexByte(addr, ':'); i >= 0 && s.ln.Addr().Network() == "tcp" {
		return addr[i+1:]
	}
	return "0"
}
