package protocol

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// INFO [section ...]
func (c *conn) info(args [][]byte) {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	var b strings.Builder
	section := func(name string, fields ...string) {
		if !all && !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		for i := 0; i+1 < len(fields); i += 2 {
			b.WriteString(fields[i] + ":" + fields[i+1] + "\r\n")
		}
	}
	s := c.srv
	uptime := time.Since(s.started)
	section("Server",
		"redis_version", redisVersion,
		"prepkey_version", s.cfg.Version,
		"redis_mode", "standalone",
		"os", runtime.GOOS,
		"arch_bits", "64",
		"process_id", fmt.Sprint(os.Getpid()),
		"tcp_port", listenPort(s),
		"uptime_in_seconds", fmt.Sprint(int64(uptime.Seconds())),
		"uptime_in_days", fmt.Sprint(int64(uptime.Hours()/24)))
	section("Clients",
		"connected_clients", fmt.Sprint(s.clients.Load()),
		"maxclients", fmt.Sprint(s.cfg.MaxClients))
	section("Persistence", "loading", "0")
	section("Stats", "total_commands_processed", fmt.Sprint(s.processed.Load()))
	if all || want["backend"] {
		ready, reason := "1", ""
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := s.backend.Ping(ctx); err != nil {
			ready, reason = "0", strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
		}
		cancel()
		fields := []string{"backend", s.cfg.Backend, "backend_ready", ready}
		if reason != "" {
			fields = append(fields, "backend_error", reason)
		}
		section("Backend", fields...)
	}
	c.out.bulkString(b.String())
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
