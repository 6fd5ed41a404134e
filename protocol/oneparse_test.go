package protocol

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOneParseKeepsTheGuard: requests are checked and parsed in one pass
// where the guard has not seen them (conn.next); the guard's limits and
// refusals hold as when it scanned every byte first: the limits in force
// at each request (lifted by an AUTH earlier in the same write), a refusal
// answered after the requests before it, a request split across reads,
// inline commands among multibulk ones.
func TestOneParseKeepsTheGuard(t *testing.T) {
	addr := serve(t, Config{Password: "pw"}, &echoHandler{batches: true})
	seventeen := append([]string{"PK.ECHO", "1"}, slices.Repeat([]string{"a"}, 15)...)

	t.Run("AUTH lifts the limits for the rest of its write", func(t *testing.T) {
		c := dialLines(t, addr)
		c.send(req("AUTH", "pw") + req(seventeen...) + "PING\r\n" + req("PK.ECHO", "2"))
		c.expect("+OK\r\n")
		c.expect(":1\r\n")
		c.expect("+PONG\r\n")
		c.expect(":2\r\n")
	})
	t.Run("a failed AUTH does not", func(t *testing.T) {
		c := dialLines(t, addr)
		c.send(req("AUTH", "no") + req(seventeen...))
		c.expect("-WRONGPASS invalid username-password pair or user is disabled.\r\n")
		c.expect("-ERR Protocol error: unauthenticated multibulk length\r\n")
		_, err := c.rd.ReadByte()
		require.ErrorIs(t, err, io.EOF)
	})
	t.Run("split requests, inline ones, then a refusal", func(t *testing.T) {
		c := dialLines(t, addr)
		two := req("PK.ECHO", "2")
		c.send(req("AUTH", "pw") + req("PK.ECHO", "1") + two[:7])
		c.expect("+OK\r\n")
		c.expect(":1\r\n")
		c.send(two[7:] + "PING\r\n" + strings.Repeat(req("PK.ECHO", "3"), 300) + "*1\r\n$-2\r\n" + req("PK.ECHO", "4"))
		c.expect(":2\r\n")
		c.expect("+PONG\r\n")
		for range 300 {
			c.expect(":3\r\n")
		}
		c.expect("-ERR Protocol error: invalid bulk length\r\n")
		_, err := c.rd.ReadByte()
		require.ErrorIs(t, err, io.EOF)
	})
}

// TestCrossProtocol: the first words of an HTTP request that close the
// connection, in any case, and their neighbours that do not.
func TestCrossProtocol(t *testing.T) {
	for name, want := range map[string]bool{
		"POST": true, "post": true, "PoSt": true, "Host:": true, "HOST:": true, "host:x": true,
		"pos": false, "posts": false, "host": false, "hosts:": false, "PK.PREPARE": false, "": false, "Hos:": false,
	} {
		require.Equal(t, want, crossProtocol([]byte(name)), name)
	}
}
