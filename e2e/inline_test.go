package e2e

import (
	"bufio"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// inlineCase is one request sent on a fresh connection, with the exact
// bytes a client reads back; closes says the server then closes it.
type inlineCase struct {
	name   string
	send   string
	want   string
	closes bool
	// sidecarOnly: redis-server answers otherwise, on purpose (below).
	sidecarOnly bool
}

var inlineCases = []inlineCase{
	{name: "hex escape", send: "ECHO \"\\x41\"\r\n", want: "$1\r\nA\r\n"},
	{name: "tab separates", send: "ECHO\t\"a b\"\r\n", want: "$3\r\na b\r\n"},
	{name: "tabs around", send: "\tPING\t\tx\t\r\n", want: "$1\r\nx\r\n"},
	{name: "CR inside the line separates", send: "ECHO\rx\r\n", want: "$1\r\nx\r\n"},
	{name: "quote inside a word", send: "ECHO a\"b c\"\r\n", want: "$4\r\nab c\r\n"},
	{name: "single quotes", send: "ECHO 'it\\'s \\x41'\r\n", want: "$9\r\nit's \\x41\r\n"},
	{name: "escapes", send: "ECHO \"\\q\\n\\x4g\\xFf\\b\\a\\\\\\\"\"\r\n", want: "$10\r\nq\nx4g\xff\b\a\\\"\r\n"},
	{name: "PING escapes", send: "PING \"\\x41\\tB\"\r\n", want: "$3\r\nA\tB\r\n"},
	{name: "empty quotes", send: "ECHO \"\"\r\n", want: "$0\r\n\r\n"},
	{name: "LF only", send: "ECHO 'a b'\n", want: "$3\r\na b\r\n"},
	{name: "vertical tab ends no word", send: "ECHO\va\r\n",
		want: "-ERR unknown command 'ECHO\va', with args beginning with: \r\n"},
	{name: "vertical tab is a blank before a word", send: "ECHO \va\r\n", want: "$1\r\na\r\n"},
	{name: "blank line", send: " \t \r\nPING\r\n", want: "+PONG\r\n"},
	{name: "dollar is inline", send: "$3\r\nPING\r\n",
		want: "-ERR unknown command '$3', with args beginning with: \r\n+PONG\r\n"},
	{name: "unterminated double quote", send: "ECHO \"abc\r\nPING\r\n",
		want: "-ERR Protocol error: unbalanced quotes in request\r\n", closes: true},
	{name: "unterminated single quote", send: "ECHO 'a\r\n",
		want: "-ERR Protocol error: unbalanced quotes in request\r\n", closes: true},
	{name: "word after a closing quote", send: "ECHO \"a\"b\r\n",
		want: "-ERR Protocol error: unbalanced quotes in request\r\n", closes: true},
	{name: "escaped closing quote", send: "ECHO \"a\\\"\r\n",
		want: "-ERR Protocol error: unbalanced quotes in request\r\n", closes: true},
	{name: "HELLO +3", send: "HELLO +3\r\n", want: "-ERR Protocol version is not an integer or out of range\r\n"},
	{name: "HELLO 03", send: "HELLO 03\r\n", want: "-ERR Protocol version is not an integer or out of range\r\n"},
	{name: "HELLO +3 multibulk", send: resp("HELLO", "+3"), want: "-ERR Protocol version is not an integer or out of range\r\n"},
	{name: "HELLO 03 multibulk", send: resp("HELLO", "03"), want: "-ERR Protocol version is not an integer or out of range\r\n"},
	{name: "HELLO 4", send: "HELLO 4\r\n", want: "-NOPROTO unsupported protocol version\r\n"},
	{name: "SELECT +0", send: "SELECT +0\r\n", want: "-ERR value is not an integer or out of range\r\n"},
	{name: "SELECT 00", send: "SELECT 00\r\n", want: "-ERR value is not an integer or out of range\r\n"},
	// Lines without their newline past 64 KiB (PROTO_INLINE_MAX_SIZE):
	// redis-server answers and closes (issue 30; the sidecar answered
	// nothing and reset the connection after 5 MiB).
	{name: "inline line over 64 KiB", send: strings.Repeat("A", 70000),
		want: "-ERR Protocol error: too big inline request\r\n", closes: true},
	{name: "inline line over 64 KiB after a request", send: "PING\r\n" + strings.Repeat("A", 70000),
		want: "+PONG\r\n-ERR Protocol error: too big inline request\r\n", closes: true},
	{name: "multibulk length line over 64 KiB", send: "*" + strings.Repeat("1", 70000),
		want: "-ERR Protocol error: too big mbulk count string\r\n", closes: true},
	{name: "bulk length line over 64 KiB", send: "*1\r\n$" + strings.Repeat("1", 70000),
		want: "-ERR Protocol error: too big bulk count string\r\n", closes: true},
	{name: "multibulk length of 30 digits", send: "*" + strings.Repeat("1", 30) + "\r\n",
		want: "-ERR Protocol error: invalid multibulk length\r\n", closes: true},
	{name: "bulk length of 30 digits", send: "*1\r\n$" + strings.Repeat("1", 30) + "\r\n",
		want: "-ERR Protocol error: invalid bulk length\r\n", closes: true},
	// redis-server finds the end of an inline line with strchr, which
	// stops at a NUL: it waits for more and answers nothing (up to 64 KiB,
	// then "too big inline request"). The sidecar reads the line to its
	// newline and splits it as sdssplitargs does, up to the NUL.
	{name: "NUL in a line", send: "ECHO a\x00b\r\nPING\r\n", want: "$1\r\na\r\n+PONG\r\n", sidecarOnly: true},
}

// TestInlineCommands sends inline commands (as telnet or nc send them) and
// HELLO with versions Redis's string2ll refuses, and checks the exact
// replies: decoded as redis-server's sdssplitargs does (issue 23, N7). The
// same requests go to a real redis-server where one runs (the one
// scripts/test.sh starts, else one started here from PATH), which must
// answer the same bytes.
func TestInlineCommands(t *testing.T) {
	s := start(t, "--backend", "memory:")
	redisAddr := inlineRedis(t)
	for _, tc := range inlineCases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, inlineExchange(t, "tcp", s.addr, tc), "the sidecar")
			if redisAddr.addr == "" || tc.sidecarOnly {
				return
			}
			require.Equal(t, tc.want, inlineExchange(t, redisAddr.network, redisAddr.addr, tc), "redis-server")
		})
	}
}

// inlineExchange sends tc on a new connection and reads len(tc.want)
// bytes back; for a case that closes, it checks that nothing follows.
func inlineExchange(t *testing.T, network, addr string, tc inlineCase) string {
	t.Helper()
	nc, err := net.Dial(network, addr)
	require.NoError(t, err)
	defer nc.Close()
	_, err = nc.Write([]byte(tc.send))
	require.NoError(t, err)
	rd := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(tc.want))
	n, err := io.ReadFull(rd, got)
	require.NoError(t, err, "%s: read %q", addr, got[:n])
	if tc.closes {
		extra, err := io.ReadAll(rd)
		require.NoError(t, err, "%s: the connection is closed after the reply", addr)
		require.Empty(t, string(extra), "%s: nothing after the error", addr)
	}
	return string(got)
}

type netAddr struct{ network, addr string }

// inlineRedis is a redis-server to compare with: PREPKEY_REDIS_URL's, else
// one started from PATH on a unix socket; none when neither is there (the
// exact replies are still checked on the sidecar).
func inlineRedis(t *testing.T) netAddr {
	t.Helper()
	if u := os.Getenv("PREPKEY_REDIS_URL"); u != "" {
		p, err := url.Parse(u)
		require.NoError(t, err)
		return netAddr{"tcp", p.Host}
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Log("no redis-server: the replies are not compared with Redis's")
		return netAddr{}
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	srv := exec.Command("redis-server", "--port", "0", "--unixsocket", sock,
		"--save", "", "--appendonly", "no", "--dir", dir)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	require.Eventually(t, func() bool {
		nc, err := net.Dial("unix", sock)
		if err == nil {
			nc.Close()
		}
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "redis-server on %s", sock)
	return netAddr{"unix", sock}
}
