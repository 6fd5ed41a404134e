package conncmd

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prepkey/prepkey/protocol/stats"
)

// INFO [section ...]
//
// The sections and field names are Redis's where they mean the same thing,
// so that redis-cli, Redis dashboards and redis_exporter read them as they
// read Redis. As in Redis, INFO and INFO default leave out Commandstats;
// INFO all and INFO everything show every section; named sections show
// those. Backend is prepkey's own (and pings the backend: INFO runs off the
// loop).
func (t *Table) info(c Conn, args [][]byte) {
	want := askedSections(args)
	f := infoFacts{ServerInfo: t.srv.Info(), runID: t.runID, pid: os.Getpid()}
	// What costs (a stop of the world, a ping that may wait 2 s) is read
	// for the sections asked for only.
	if want.shows("Memory") {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		f.heap, f.rss = ms.HeapAlloc, rssBytes()
	}
	if want.shows("CPU") {
		f.cpuUser, f.cpuSys = cpuSeconds()
	}
	if want.shows("Backend") {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		f.backendErr = t.srv.PingBackend(ctx)
		cancel()
	}
	c.Out().BulkString(infoText(want, f))
}

// sections is which sections an INFO request asks for.
type sections struct {
	named      map[string]bool // by lower-case name
	everything bool            // all, everything
	byDefault  bool            // none named, default, or everything
}

// askedSections is which sections INFO's arguments (args[1:]) ask for.
func askedSections(args [][]byte) sections {
	named := map[string]bool{}
	for _, a := range args[1:] {
		named[strings.ToLower(string(a))] = true
	}
	everything := named["all"] || named["everything"]
	return sections{named: named, everything: everything, byDefault: len(named) == 0 || named["default"] || everything}
}

// shows reports whether the section called name is shown. Commandstats is
// the one section (of those prepkey has) that INFO leaves out by default,
// as Redis does.
func (s sections) shows(name string) bool {
	inDefault := name != "Commandstats"
	return (s.byDefault && inDefault) || s.everything || s.named[strings.ToLower(name)]
}

// infoFacts is what INFO tells: the server's, and the process's (those
// read for the sections asked for only).
type infoFacts struct {
	ServerInfo
	runID           string
	pid             int
	heap            uint64 // used_memory
	rss             int64
	cpuUser, cpuSys float64 // seconds
	backendErr      error   // the backend's ping: nil, ready
}

// infoText is INFO's reply: the sections of want, from f.
func infoText(want sections, f infoFacts) string {
	snap := &f.Stats
	var b strings.Builder
	section := func(name string, fields func(add func(k, v string))) {
		if !want.shows(name) {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		fields(func(k, v string) { b.WriteString(k + ":" + v + "\r\n") })
	}
	section("Server", func(add func(k, v string)) {
		add("redis_version", redisVersion)
		add("prepkey_version", snap.Version)
		add("redis_mode", "standalone")
		add("os", runtime.GOOS)
		add("arch_bits", "64")
		add("process_id", fmt.Sprint(f.pid))
		add("run_id", f.runID)
		add("tcp_port", tcpPort(f.Listen))
		add("uptime_in_seconds", fmt.Sprint(int64(snap.Uptime.Seconds())))
		add("uptime_in_days", fmt.Sprint(int64(snap.Uptime.Hours()/24)))
	})
	section("Clients", func(add func(k, v string)) {
		add("connected_clients", fmt.Sprint(snap.ConnectedClients))
		add("maxclients", fmt.Sprint(snap.MaxClients))
		add("blocked_clients", "0")
		// prepkey's own: what open transactions hold queued, and its
		// bound (as Redis's maxmemory_clients in its Memory section).
		add("tx_queued_bytes", fmt.Sprint(snap.TxQueuedBytes))
		add("max_tx_memory", fmt.Sprint(snap.MaxTxMemory))
	})
	section("Memory", func(add func(k, v string)) {
		add("used_memory", fmt.Sprint(f.heap))
		add("used_memory_rss", fmt.Sprint(f.rss))
		// Redis's names: what client connections hold in buffers
		// (unread replies, input), and its bound (maxmemory-clients).
		add("mem_clients_normal", fmt.Sprint(snap.ClientsMemory))
		add("maxmemory_clients", fmt.Sprint(snap.MaxClientsMemory))
	})
	section("Persistence", func(add func(k, v string)) { add("loading", "0") })
	section("Stats", func(add func(k, v string)) {
		var errs uint64
		for _, n := range snap.Errors {
			errs += n
		}
		add("total_connections_received", fmt.Sprint(snap.ConnectionsTotal))
		add("total_commands_processed", fmt.Sprint(snap.CommandsProcessed))
		add("rejected_connections", fmt.Sprint(snap.RejectedTotal))
		add("evicted_clients", fmt.Sprint(snap.EvictedClients))
		add("total_error_replies", fmt.Sprint(errs))
	})
	section("Replication", func(add func(k, v string)) {
		add("role", "master")
		add("connected_slaves", "0")
	})
	section("CPU", func(add func(k, v string)) {
		add("used_cpu_sys", fmt.Sprintf("%.6f", f.cpuSys))
		add("used_cpu_user", fmt.Sprintf("%.6f", f.cpuUser))
	})
	section("Commandstats", func(add func(k, v string)) {
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
	section("Errorstats", func(add func(k, v string)) {
		prefixes := slices.Sorted(maps.Keys(snap.Errors))
		for _, p := range prefixes {
			add("errorstat_"+p, fmt.Sprintf("count=%d", snap.Errors[p]))
		}
	})
	section("Backend", func(add func(k, v string)) {
		ready, reason := "1", ""
		if f.backendErr != nil {
			ready, reason = "0", strings.NewReplacer("\r", " ", "\n", " ").Replace(f.backendErr.Error())
		}
		add("backend", snap.Backend)
		add("backend_ready", ready)
		if reason != "" {
			add("backend_error", reason)
		}
	})
	section("Keyspace", func(func(k, v string)) {})
	return b.String()
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

// tcpPort is INFO's tcp_port of the listening address a: 0 for none, or
// for a unix socket.
func tcpPort(a net.Addr) string {
	if a == nil {
		return "0"
	}
	addr := a.String()
	if i := strings.LastIndexByte(addr, ':'); i >= 0 && a.Network() == "tcp" {
		return addr[i+1:]
	}
	return "0"
}
