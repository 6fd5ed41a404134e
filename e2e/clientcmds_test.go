package e2e

import (
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientFields are the field names of a CLIENT LIST line, in order.
func clientFields(line string) []string {
	var names []string
	for _, f := range strings.Fields(line) {
		k, _, _ := strings.Cut(f, "=")
		names = append(names, k)
	}
	return names
}

// commonFields returns the names of a that b has too, in a's order.
func commonFields(a, b []string) []string {
	var out []string
	for _, n := range a {
		if slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// missingFields returns the names of a that b lacks.
func missingFields(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// TestConnectionCommands checks CLIENT LIST, INFO, KILL and HELP and
// COMMAND HELP, which the compat test cannot compare byte for byte (other
// connections, other subcommands).
func TestConnectionCommands(t *testing.T) {
	s := start(t, "--backend", "memory:")
	a, b := s.client(t, 2), s.raw(t)
	b.do("+OK\r\n", "CLIENT", "SETNAME", "second")
	b.do("+OK\r\n", "CLIENT", "SETINFO", "lib-name", "rawlib")
	require.NoError(t, a.Do(ctx(), "CLIENT", "SETNAME", "first").Err())

	list, err := a.Do(ctx(), "CLIENT", "LIST").Text()
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	require.Len(t, lines, 2, list)
	require.Regexp(t, `^id=\d+ addr=127\.0\.0\.1:\d+ laddr=127\.0\.0\.1:\d+ fd=\d+ name=(first|second) age=\d+ idle=\d+ flags=N db=0 `, lines[0])
	require.Contains(t, list, " name=second ")
	require.Contains(t, list, " lib-name=rawlib ")
	want := []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub", "multi",
		"qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem", "events", "cmd",
		"user", "redir", "resp", "lib-name", "lib-ver"}
	require.Equal(t, want, clientFields(lines[0]))
	if u := os.Getenv("PREPKEY_REDIS_URL"); u != "" {
		// The sidecar answers as Redis 7.2 (INFO's redis_version). A real
		// server has the same fields in the same order, give or take the
		// fields of other versions: 7.0 lacks lib-name and lib-ver (7.2's);
		// 7.4 and later add watch, Valkey 8 tot-net-in, tot-net-out and
		// tot-cmds (docs/redis.md, Versions tested).
		p, err := url.Parse(u)
		require.NoError(t, err)
		r := dialCompat(t, p.Host)
		if atLeastRedis7(r.roundTrip([]string{"INFO", "server"})) {
			info := r.roundTrip([]string{"CLIENT", "INFO"})
			_, body, _ := strings.Cut(info, "\r\n")
			fields := clientFields(body)
			require.Equal(t, commonFields(want, fields), commonFields(fields, want), "redis-server's CLIENT INFO: %s", body)
			require.Subset(t, []string{"lib-name", "lib-ver"}, missingFields(want, fields), "redis-server's CLIENT INFO: %s", body)
			require.Subset(t, []string{"watch", "io-thread", "tot-net-in", "tot-net-out", "tot-cmds"}, missingFields(fields, want),
				"redis-server's CLIENT INFO: %s", body)
		} else {
			// Redis 6.0 has no CLIENT INFO, 6.2 fewer fields
			t.Log("redis-server is older than 7.0: CLIENT INFO fields not compared")
		}
	}

	// CLIENT INFO is this connection's line; in RESP3 a verbatim string
	mine, err := a.Do(ctx(), "CLIENT", "INFO").Text()
	require.NoError(t, err)
	require.Regexp(t, `^id=\d+ .* name=first .* resp=2 lib-name=go-redis\S* lib-ver=\S+\n$`, mine)
	b.do(":1\r\n", "PK.PREPARE", "ns", "k", "v") // memory: answered at once
	b.send(resp("HELLO", "3"))
	var hello strings.Builder
	require.NoError(t, readReply(b.rd, &hello))
	b.send(resp("CLIENT", "INFO"))
	var v strings.Builder
	require.NoError(t, readReply(b.rd, &v))
	require.Regexp(t, regexp.MustCompile(`^=\d+\r\ntxt:id=\d+ .* name=second .* resp=3 lib-name=rawlib lib-ver=\n\r\n$`), v.String())

	// CLIENT LIST ID and TYPE filter
	id, err := a.ClientID(ctx()).Result()
	require.NoError(t, err)
	only, err := a.Do(ctx(), "CLIENT", "LIST", "ID", itoa(id), "999999").Text()
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(only, "\n"), only)
	require.Contains(t, only, " name=first ")
	none, err := a.Do(ctx(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
	require.NoError(t, err)
	require.Empty(t, none)

	// CLIENT KILL ID: another connection is closed; the caller's own only
	// with SKIPME no, after its reply.
	b.send(resp("CLIENT", "ID"))
	bid, err := b.rd.ReadString('\n')
	require.NoError(t, err)
	n, err := a.Do(ctx(), "CLIENT", "KILL", "ID", strings.TrimSpace(bid[1:])).Int64()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	b.closed()
	n, err = a.Do(ctx(), "CLIENT", "KILL", "ID", itoa(id)).Int64()
	require.NoError(t, err)
	require.EqualValues(t, 0, n, "SKIPME yes is the default")
	c := s.raw(t)
	c.send(resp("CLIENT", "ID"))
	cid, err := c.rd.ReadString('\n')
	require.NoError(t, err)
	c.do(":1\r\n", "CLIENT", "KILL", "ID", strings.TrimSpace(cid[1:]), "SKIPME", "no")
	c.closed()
	list, err = a.Do(ctx(), "CLIENT", "LIST").Text()
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(list, "\n"), list)

	// HELP lists what the sidecar answers, in Redis's frame
	help, err := a.Do(ctx(), "CLIENT", "HELP").StringSlice()
	require.NoError(t, err)
	require.Equal(t, "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
	require.Equal(t, []string{"HELP", "    Print this help."}, help[len(help)-2:])
	require.Contains(t, help, "KILL <option> <value> [<option> <value> [...]]")
	require.NotContains(t, help, "PAUSE <timeout> [WRITE|ALL]")
	help, err = a.Do(ctx(), "COMMAND", "HELP").StringSlice()
	require.NoError(t, err)
	require.Equal(t, "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
	require.Contains(t, help, "DOCS [<command-name> ...]")

	// COMMAND COUNT, LIST, INFO agree
	count, err := a.Do(ctx(), "COMMAND", "COUNT").Int64()
	require.NoError(t, err)
	all, err := a.Do(ctx(), "COMMAND").Slice()
	require.NoError(t, err)
	require.EqualValues(t, len(all), count)
	names, err := a.Do(ctx(), "COMMAND", "LIST").StringSlice()
	require.NoError(t, err)
	require.Contains(t, names, "pk.prepare")
	require.Contains(t, names, "client|kill")
	require.Contains(t, names, "command|docs")
	docs, err := a.Do(ctx(), "COMMAND", "DOCS").Slice()
	require.NoError(t, err)
	require.Len(t, docs, 2*int(count), "COMMAND DOCS documents every command COMMAND lists")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
