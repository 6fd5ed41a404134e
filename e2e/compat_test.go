package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompatWithRedis sends the same raw requests for connection commands
// to the sidecar and to a real redis-server (the one scripts/test.sh starts)
// and compares the replies byte for byte, in RESP2 and then in RESP3, as
// FerretDB's compat tests do against MongoDB.
//
// Intended differences, left out of the requests below and held to their
// own bytes in TestWireBytes and TestConnectionCommands:
//   - HELLO and INFO: the sidecar names itself (server:prepkey) and has its
//     own sections.
//   - CLIENT SETINFO and CLIENT NO-TOUCH are Redis 7.2's; Debian's
//     redis-server is 7.0, which does not know them.
//   - CLIENT HELP, COMMAND HELP: Redis's text less the subcommands the
//     sidecar has not (CACHING, PAUSE, TRACKING, GETKEYS, ...).
//   - COMMAND, COMMAND COUNT/LIST, COMMAND INFO client|command: another
//     command set; COMMAND LIST has no FILTERBY.
//   - CLIENT LIST and CLIENT INFO: other connections and addresses; the
//     field names and order are compared in TestConnectionCommands.
//   - SELECT 1: a sidecar has database 0 only (-ERR DB index is out of
//     range, Redis's words for an index past its databases).
//   - AUTH with a password and WATCH: a sidecar has one user and no keys.
//
// COMMAND DOCS and COMMAND INFO are compared only against Redis 7.0, whose
// texts the sidecar has; the rest against any version (docs/redis.md).
func TestCompatWithRedis(t *testing.T) {
	redisURL := os.Getenv("PREPKEY_REDIS_URL")
	if redisURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but PREPKEY_REDIS_URL is unset: scripts/test.sh starts that server")
		}
		t.Skip("PREPKEY_REDIS_URL unset: run through scripts/test.sh")
	}
	u, err := url.Parse(redisURL)
	require.NoError(t, err)
	s := start(t, "--backend", "memory:")

	both := [][]string{
		{"PING"},
		{"PING", "hi"},
		{"PING", "a", "b"},
		{"ECHO", "abc"},
		{"ECHO"},
		{"SELECT", "0"},
		{"SELECT", "x"},
		{"HELLO", "4"},
		{"HELLO", "x"},
		{"AUTH", "a", "b", "c"},
		{"AUTH", "nobody", "pw"},
		{"NOSUCHCMD", "a", "b"},
		{"CLIENT"},
		{"CLIENT", "nosuch"},
		{"CLIENT", "ID", "extra"},
		{"CLIENT", "GETNAME"},
		{"CLIENT", "SETNAME", "app1"},
		{"CLIENT", "GETNAME"},
		{"CLIENT", "SETNAME", "a b"},
		{"CLIENT", "SETNAME"},
		{"CLIENT", "NO-EVICT", "on"},
		{"CLIENT", "NO-EVICT", "OFF"},
		{"CLIENT", "NO-EVICT", "maybe"},
		{"CLIENT", "NO-EVICT"},
		{"CLIENT", "KILL", "ID", "999999999"},
		{"CLIENT", "KILL", "ID", "0"},
		{"CLIENT", "KILL", "ID", "x"},
		{"CLIENT", "KILL", "192.0.2.1:5"},
		{"CLIENT", "KILL", "ID", "9", "SKIPME", "maybe"},
		{"CLIENT", "KILL", "ID", "9", "SKIPME"},
		{"CLIENT", "KILL", "TYPE", "nope"},
		{"CLIENT", "KILL", "TYPE", "master"},
		{"CLIENT", "KILL", "USER", "nobody"},
		{"CLIENT", "KILL", "NOSUCH", "x"},
		{"CLIENT", "KILL"},
		{"CLIENT", "LIST", "TYPE", "nope"},
		{"CLIENT", "LIST", "TYPE", "pubsub"},
		{"CLIENT", "LIST", "ID", "x"},
		{"CLIENT", "LIST", "ID", "999999999"},
		{"CLIENT", "LIST", "x"},
		{"COMMAND", "nosuch"},
		{"COMMAND", "COUNT", "extra"},
		{"COMMAND", "HELP", "extra"},
		{"COMMAND", "INFO", "ping", "echo", "select", "auth", "hello", "quit", "info", "nosuch"},
		{"COMMAND", "INFO", "client|id", "client|getname", "CLIENT|SETNAME", "client|info",
			"client|kill", "client|list", "client|no-evict", "client|help", "client|nosuch"},
		{"COMMAND", "INFO", "command|count", "command|docs", "command|info", "command|help", "command|list"},
		{"COMMAND", "DOCS", "ping", "echo", "select", "auth", "hello", "quit", "info", "nosuch"},
		{"COMMAND", "DOCS", "client|id", "client|getname", "client|setname", "client|info",
			"client|kill", "client|list", "client|no-evict", "client|help"},
		{"COMMAND", "DOCS", "command|count", "command|docs", "command|info", "command|help"},
		// connection commands inside a transaction: queued, run by EXEC
		{"MULTI"},
		{"PING"},
		{"ECHO", "x"},
		{"CLIENT", "GETNAME"},
		{"CLIENT", "NO-EVICT", "on"},
		{"COMMAND", "INFO", "echo"},
		{"EXEC"},
		{"MULTI"},
		{"CLIENT", "nosuch"},
		{"CLIENT", "ID", "extra"},
		{"PING"},
		{"EXEC"},
		{"EXEC"},
		{"DISCARD"},
	}
	resp3 := [][]string{
		{"CLIENT", "GETNAME"}, // the name set above
		{"CLIENT", "NO-EVICT", "on"},
		{"COMMAND", "INFO", "ping", "info", "nosuch", "client|list"},
		{"COMMAND", "DOCS", "hello", "info", "client|kill", "client|list", "nosuch"},
		{"COMMAND", "DOCS", "nosuch"},
	}

	redisConn := dialCompat(t, u.Host)
	sideConn := dialCompat(t, s.addr)
	info := redisConn.roundTrip([]string{"INFO", "server"})
	if !atLeastRedis7(info) {
		// Redis 6 has other words for some errors and lacks COMMAND DOCS,
		// CLIENT INFO and NO-EVICT; the sidecar answers as Redis 7.
		t.Skip("redis-server is older than 7.0: the sidecar's replies are Redis 7's")
	}
	// COMMAND DOCS and COMMAND INFO are Redis 7.0's texts and tips (Debian's
	// 7.0.15, which CI runs): 7.2 and later reword the summaries and add
	// tips, and so does Valkey. Against another server they are sent to
	// both, to keep the two connections alike, and not compared; every
	// other reply is (docs/redis.md, Versions tested).
	docs70 := isRedis70(info)
	if !docs70 {
		t.Log("redis-server is not Redis 7.0: COMMAND DOCS and COMMAND INFO not compared")
	}
	compare := func(args []string) {
		t.Helper()
		want := redisConn.roundTrip(args)
		got := sideConn.roundTrip(args)
		if !docs70 && len(args) > 1 && strings.EqualFold(args[0], "COMMAND") &&
			(strings.EqualFold(args[1], "DOCS") || strings.EqualFold(args[1], "INFO")) {
			return
		}
		assert.Equal(t, want, got, "%q", args)
	}
	for _, args := range both {
		compare(args)
	}
	// HELLO 3 itself differs (server name); what follows speaks RESP3 on both.
	redisConn.roundTrip([]string{"HELLO", "3"})
	sideConn.roundTrip([]string{"HELLO", "3"})
	for _, args := range resp3 {
		compare(args)
	}
	compare([]string{"QUIT"})
}

// isRedis70 reports whether an INFO server reply is Redis 7.0's (Valkey
// reports a redis_version of 7.2.4 and its own valkey_version).
func isRedis70(info string) bool {
	return strings.Contains(info, "\r\nredis_version:7.0.") && !strings.Contains(info, "\r\nvalkey_version:")
}

// atLeastRedis7 reports whether an INFO server reply's redis_version is
// 7.0 or later (Valkey's is 7.2.4).
func atLeastRedis7(info string) bool {
	_, v, _ := strings.Cut(info, "\r\nredis_version:")
	major, _, _ := strings.Cut(v, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n >= 7
}

type compatConn struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func dialCompat(t *testing.T, addr string) *compatConn {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &compatConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

// roundTrip sends one request and returns its whole reply, raw.
func (c *compatConn) roundTrip(args []string) string {
	c.t.Helper()
	_, err := c.nc.Write([]byte(resp(args...)))
	require.NoError(c.t, err)
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	require.NoError(c.t, readReply(c.rd, &b), "%q", args)
	return b.String()
}

// readReply copies one complete RESP2 or RESP3 reply from rd to b.
func readReply(rd *bufio.Reader, b *strings.Builder) error {
	line, err := rd.ReadString('\n')
	if err != nil {
		return err
	}
	b.WriteString(line)
	if len(line) < 3 {
		return fmt.Errorf("short line %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	switch line[0] {
	case '$', '=', '!': // bulk, verbatim, bulk error
		if n < 0 {
			return nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return err
		}
		b.Write(buf)
	case '*', '~', '>': // array, set, push
		for range max(n, 0) {
			if err := readReply(rd, b); err != nil {
				return err
			}
		}
	case '%', '|': // map, attribute
		for range 2 * n {
			if err := readReply(rd, b); err != nil {
				return err
			}
		}
	}
	return nil
}
