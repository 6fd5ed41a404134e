package protocol

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/prepkey/prepkey/commands"
)

// commandInfo is one entry of COMMAND's reply.
type commandInfo struct {
	name  string
	arity int
	flags []string
}

// allCommands lists every command the server answers, for COMMAND.
func allCommands(connCmds map[string]connCmd) []commandInfo {
	var list []commandInfo
	for _, s := range commands.Specs() {
		flags := []string{"readonly", "fast"}
		if s.Write {
			flags = []string{"write", "fast"}
		}
		list = append(list, commandInfo{s.Name, s.Arity, flags})
	}
	for name, cmd := range connCmds {
		flags := []string{"fast"}
		if name == "auth" || name == "hello" || name == "quit" {
			flags = append(flags, "no_auth")
		}
		list = append(list, commandInfo{name, cmd.arity, flags})
	}
	slices.SortFunc(list, func(a, b commandInfo) int { return strings.Compare(a.name, b.name) })
	return list
}

// writeCommandInfo writes Redis 7's ten-field entry. PK commands declare no
// Redis keys (first key 0): a namespace and key pair is not a Redis key, so
// cluster-aware clients must not route on it.
func (c *conn) writeCommandInfo(ci commandInfo) {
	c.out.array(10)
	c.out.bulkString(ci.name)
	c.out.int(int64(ci.arity))
	c.out.array(len(ci.flags))
	for _, f := range ci.flags {
		c.out.simple(f)
	}
	c.out.int(0)
	c.out.int(0)
	c.out.int(0)
	c.out.array(0) // ACL categories
	c.out.array(0) // tips
	c.out.array(0) // key specs
	c.out.array(0) // subcommands
}

// COMMAND [COUNT | DOCS [name...] | INFO [name...] | LIST]
func (c *conn) command(args [][]byte) {
	list := allCommands(c.srv.connCmds)
	if len(args) == 1 {
		c.out.array(len(list))
		for _, ci := range list {
			c.writeCommandInfo(ci)
		}
		return
	}
	switch sub := strings.ToLower(string(args[1])); sub {
	case "count":
		c.out.int(int64(len(list)))
	case "list":
		c.out.array(len(list))
		for _, ci := range list {
			c.out.bulkString(ci.name)
		}
	case "docs":
		// Docs are in docs/commands.md; an empty reply is allowed and
		// keeps clients that fetch docs at start-up (redis-cli) happy.
		c.out.mapHeader(0)
	case "info":
		names := args[2:]
		if len(names) == 0 {
			c.command(args[:1])
			return
		}
		c.out.array(len(names))
		for _, n := range names {
			i := slices.IndexFunc(list, func(ci commandInfo) bool { return strings.EqualFold(ci.name, string(n)) })
			if i < 0 {
				c.out.nullArray()
				continue
			}
			c.writeCommandInfo(list[i])
		}
	default:
		c.out.err(fmt.Sprintf("ERR unknown subcommand '%s'. Try COMMAND HELP.", args[1]))
	}
}

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
