package protocol

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/memory"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
	"github.com/prepkey/prepkey/protocol/stats"
)

// failingGets is the memory store, but a Get of the key "down" fails as a
// backend that is away would.
type failingGets struct{ *memory.Store }

func (f failingGets) RunOne(ctx context.Context, op backend.Op) backend.Result {
	if op.Kind == backend.OpGet && string(op.Key) == "down" {
		return backend.Result{Err: errors.New("connection refused")}
	}
	return f.Store.RunOne(ctx, op)
}

func (f failingGets) Run(ctx context.Context, ops []backend.Op, res []backend.Result, iso backend.Isolation) error {
	if err := f.Store.Run(ctx, ops, res, iso); err != nil {
		return err
	}
	for i, op := range ops {
		if op.Kind == backend.OpGet && string(op.Key) == "down" {
			res[i] = backend.Result{Err: errors.New("connection refused")}
		}
	}
	return nil
}

// parseInfo reads INFO as redis_exporter and redis-cli do: "# Section"
// lines, "field:value" lines, blank lines between sections; cmdstat_ and
// errorstat_ values are comma-separated name=value pairs.
func parseInfo(t *testing.T, info string) (sections []string, fields map[string]string, pairs map[string]map[string]string) {
	t.Helper()
	fields, pairs = map[string]string{}, map[string]map[string]string{}
	require.True(t, strings.HasSuffix(info, "\r\n"), "INFO ends with CRLF")
	for _, line := range strings.Split(strings.TrimSuffix(info, "\r\n"), "\r\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "# "):
			sections = append(sections, line[2:])
		default:
			k, v, ok := strings.Cut(line, ":")
			require.True(t, ok, "line %q has no colon", line)
			require.NotEmpty(t, sections, "field %q before any section", k)
			fields[k] = v
			if strings.HasPrefix(k, "cmdstat_") || strings.HasPrefix(k, "errorstat_") {
				m := map[string]string{}
				for _, kv := range strings.Split(v, ",") {
					name, val, ok := strings.Cut(kv, "=")
					require.True(t, ok, "%s: %q is not name=value", k, kv)
					_, err := strconv.ParseFloat(val, 64)
					require.NoError(t, err, "%s: %s", k, kv)
					m[name] = val
				}
				pairs[k] = m
			}
		}
	}
	return sections, fields, pairs
}

// infoClient is a connection that sends requests and reads INFO's bulk.
type infoClient struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func (c *infoClient) do(want string, args ...string) {
	c.t.Helper()
	if len(args) > 0 { // none: read the next line only
		_, err := c.nc.Write([]byte(req(args...)))
		require.NoError(c.t, err)
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := c.rd.ReadString('\n')
	require.NoError(c.t, err)
	require.Equal(c.t, want, line, "%v", args)
}

func (c *infoClient) info(args ...string) string {
	c.t.Helper()
	_, err := c.nc.Write([]byte(req(append([]string{"INFO"}, args...)...)))
	require.NoError(c.t, err)
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	head, err := c.rd.ReadString('\n')
	require.NoError(c.t, err)
	require.Equal(c.t, byte('$'), head[0], head)
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	require.NoError(c.t, err)
	body := make([]byte, n+2)
	_, err = io.ReadFull(c.rd, body)
	require.NoError(c.t, err)
	return string(body[:n])
}

// dialInfo connects an infoClient to addr; the connection closes with the test.
func dialInfo(t *testing.T, addr string) *infoClient {
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	return &infoClient{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

// TestInfoStats: after a known set of commands, INFO's Stats, Commandstats
// and Errorstats count exactly them, in Redis's format, on the inline path
// and on the path through the store off the loop.
func TestInfoStats(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run("inline="+strconv.FormatBool(inline), func(t *testing.T) {
			st := failingGets{memory.New(backend.Options{})}
			sc := schedtest.AtOnce // as memory: declares
			if !inline {
				sc = schedtest.Alone // each run its own submission, off the loop
			}
			h := commands.New(schedtest.Declare(st, sc), commands.Limits{MaxKeyBytes: 16, MaxValueBytes: 16}, nil)
			addr, _ := serveServer(t, Config{MaxClients: 7, Backend: "memory", Version: "9.9"}, h)
			c := dialInfo(t, addr)
			c.do(":1\r\n", "PK.PREPARE", "ns", "a", "v")
			c.do(":0\r\n", "pk.prepare", "ns", "a", "w")
			c.do("-ERR invalid namespace name\r\n", "PK.PREPARE", "n s", "a", "v")
			c.do("$-1\r\n", "PK.GET", "ns", "b")
			c.do("-ERR wrong number of arguments for 'pk.get' command\r\n", "PK.GET", "ns")
			c.do("-UNAVAILABLE connection refused\r\n", "PK.GET", "ns", "down")
			c.do("-MISMATCH old key has no record with that value\r\n", "PK.REPREPARE", "ns", "c", "v", "FROM", "x", "IFEQ", "v")
			c.do("-ERR unknown command 'NOPE', with args beginning with: \r\n", "NOPE")
			c.do("+PONG\r\n", "PING")

			plain := c.info()
			sections, fields, _ := parseInfo(t, plain)
			require.Equal(t, []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Errorstats", "Backend", "Keyspace"}, sections)
			require.Equal(t, "0", fields["loading"])
			require.Equal(t, "1", fields["connected_clients"])
			require.Equal(t, "7", fields["maxclients"])
			require.Equal(t, "1", fields["total_connections_received"])
			require.Equal(t, "0", fields["rejected_connections"])
			require.Equal(t, "10", fields["total_commands_processed"]) // with this INFO
			require.Equal(t, "5", fields["total_error_replies"])
			require.Equal(t, "9.9", fields["prepkey_version"])
			require.Len(t, fields["run_id"], 40)

			_, _, pairs := parseInfo(t, c.info("commandstats"))
			require.Equal(t, map[string]string{"calls": "2", "rejected_calls": "1", "failed_calls": "0"}, without(pairs["cmdstat_pk.prepare"], "usec", "usec_per_call"))
			require.Equal(t, map[string]string{"calls": "2", "rejected_calls": "1", "failed_calls": "1"}, without(pairs["cmdstat_pk.get"], "usec", "usec_per_call"))
			require.Equal(t, map[string]string{"calls": "1", "rejected_calls": "0", "failed_calls": "0"}, without(pairs["cmdstat_pk.reprepare"], "usec", "usec_per_call"))
			require.Equal(t, "1", pairs["cmdstat_ping"]["calls"])
			require.Equal(t, "1", pairs["cmdstat_info"]["calls"]) // the plain INFO, counted once answered
			require.NotContains(t, pairs, "cmdstat_pk.rollback", "a command never used has no line")
			require.NotContains(t, pairs, "cmdstat_unknown")

			sections, fields, pairs = parseInfo(t, c.info("all"))
			require.Contains(t, sections, "Commandstats")
			require.Contains(t, sections, "Errorstats")
			require.Equal(t, map[string]string{"count": "3"}, pairs["errorstat_ERR"])
			require.Equal(t, map[string]string{"count": "1"}, pairs["errorstat_UNAVAILABLE"])
			require.Equal(t, map[string]string{"count": "1"}, pairs["errorstat_MISMATCH"])
			require.Equal(t, "1", fields["backend_ready"])

			sections, _, _ = parseInfo(t, c.info("clients", "STATS"))
			require.Equal(t, []string{"Clients", "Stats"}, sections)
		})
	}
}

func without(m map[string]string, keys ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// TestMaxClientsCounted: a connection refused at max-clients is counted as
// received and rejected.
func TestMaxClientsCounted(t *testing.T) {
	addr, srv := serveServer(t, Config{MaxClients: 1}, &echoHandler{})
	first, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer first.Close()
	c := &infoClient{t: t, nc: first, rd: bufio.NewReader(first)}
	c.do("+PONG\r\n", "PING")
	second, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer second.Close()
	line, err := bufio.NewReader(second).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "-ERR max number of clients reached\r\n", line)
	snap := srv.Stats()
	require.Equal(t, int64(2), snap.ConnectionsTotal)
	require.Equal(t, int64(1), snap.RejectedTotal)
	require.Equal(t, int64(1), snap.ConnectedClients)
}

// TestOutcomeSince: a connection command's outcome is its error's code
// when it wrote an error (never read back from the bytes), else its
// frame's.
func TestOutcomeSince(t *testing.T) {
	c := &conn{}
	c.out.B = []byte("-ERR before\r\n")
	c.out.Errs, c.out.LastErr = 1, commands.ErrSyntax
	at, errs := len(c.out.B), c.out.Errs
	c.out.Int(1)
	o, code := c.outcomeSince(at, errs)
	require.Equal(t, stats.Outcome1, o)
	require.Equal(t, commands.NoError, code)

	at, errs = len(c.out.B), c.out.Errs
	c.out.Fail(commands.ErrWrongPass)
	o, code = c.outcomeSince(at, errs)
	require.Equal(t, stats.OutcomeError, o)
	require.Equal(t, commands.ErrWrongPass, code)

	// A reply written by the commands (Reply.Err) counts by its code too.
	at, errs = len(c.out.B), c.out.Errs
	mismatch := commands.ErrMismatch.Reply()
	c.out.Reply(&mismatch)
	o, code = c.outcomeSince(at, errs)
	require.Equal(t, stats.OutcomeMismatch, o)
	require.Equal(t, commands.ErrMismatch, code)
}

// TestInfoStatsMulti: a command queued in MULTI is counted when EXEC runs
// it, not when it is queued; MULTI and EXEC count as themselves.
func TestInfoStatsMulti(t *testing.T) {
	st := memory.New(backend.Options{})
	h := commands.New(st, commands.Limits{MaxKeyBytes: 16, MaxValueBytes: 16}, nil)
	addr, _ := serveServer(t, Config{Backend: "memory"}, h)
	c := dialInfo(t, addr)
	c.do("+OK\r\n", "MULTI")
	c.do("+QUEUED\r\n", "PK.PREPARE", "ns", "a", "v")
	c.do("+QUEUED\r\n", "PK.PREPARE", "ns", "a", "v")
	c.do("*2\r\n", "EXEC")
	c.do(":1\r\n")
	c.do(":0\r\n")
	_, _, pairs := parseInfo(t, c.info("commandstats"))
	require.Equal(t, "1", pairs["cmdstat_multi"]["calls"])
	require.Equal(t, "1", pairs["cmdstat_exec"]["calls"])
	require.Equal(t, map[string]string{"calls": "2", "rejected_calls": "0", "failed_calls": "0"}, without(pairs["cmdstat_pk.prepare"], "usec", "usec_per_call"))
}

// TestInfoCountsPipelineBefore: commands answered on the loop are counted
// together once their replies are written; an INFO pipelined behind them in
// the same write counts them all the same, and a connection closed by a
// protocol error after them has them counted.
func TestInfoCountsPipelineBefore(t *testing.T) {
	st := memory.New(backend.Options{})
	h := commands.New(st, commands.Limits{MaxKeyBytes: 16, MaxValueBytes: 16}, nil)
	addr, srv := serveServer(t, Config{Backend: "memory"}, h)
	c := dialInfo(t, addr)
	_, err := c.nc.Write([]byte(req("PK.PREPARE", "ns", "a", "v") + req("PK.PREPARE", "ns", "a", "v") + req("PING") +
		req("INFO", "commandstats", "stats")))
	require.NoError(t, err)
	c.do(":1\r\n")
	c.do(":0\r\n")
	c.do("+PONG\r\n")
	_, fields, pairs := parseInfo(t, readBulk(t, c))
	require.Equal(t, map[string]string{"calls": "2", "rejected_calls": "0", "failed_calls": "0"}, without(pairs["cmdstat_pk.prepare"], "usec", "usec_per_call"))
	require.Equal(t, "1", pairs["cmdstat_ping"]["calls"])
	require.Equal(t, "4", fields["total_commands_processed"]) // INFO among them

	// A pipeline cut by a protocol error: what was answered before it is
	// counted once the connection is closed.
	other, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer other.Close()
	_, err = other.Write([]byte(req("PK.PREPARE", "ns", "b", "v") + req("PK.GET", "ns", "b") + "*x\r\n"))
	require.NoError(t, err)
	_, _ = io.ReadAll(other) // replies, the error, then the close
	require.Eventually(t, func() bool {
		for _, cs := range srv.Stats().Commands {
			if cs.Name == "pk.get" {
				return cs.Calls() == 1
			}
		}
		return false
	}, 5*time.Second, time.Millisecond)
}

// readBulk reads one bulk string reply.
func readBulk(t *testing.T, c *infoClient) string {
	t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	head, err := c.rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, byte('$'), head[0], head)
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	require.NoError(t, err)
	body := make([]byte, n+2)
	_, err = io.ReadFull(c.rd, body)
	require.NoError(t, err)
	return string(body[:n])
}

// TestInfoCountsRuns: a pipeline of commands that go to the store, of two
// kinds and mixed outcomes, is counted command by command, latencies
// included (recordRun counts a run's like commands together).
func TestInfoCountsRuns(t *testing.T) {
	st := failingGets{memory.New(backend.Options{})}
	// Runs, not answered on the loop: each its own submission, off it.
	h := commands.New(schedtest.Declare(st, schedtest.Alone), commands.Limits{MaxKeyBytes: 16, MaxValueBytes: 16}, nil)
	addr, srv := serveServer(t, Config{Backend: "memory"}, h)
	c := dialInfo(t, addr)
	_, err := c.nc.Write([]byte(req("PK.PREPARE", "ns", "a", "v") + req("PK.PREPARE", "ns", "b", "v") +
		req("PK.PREPARE", "ns", "a", "w") + req("PK.PREPARE", "ns", "c", "v") + req("PK.GET", "ns", "down") +
		req("PK.GET", "ns", "down") + req("PK.GET", "ns", "x") + req("PK.PREPARE", "ns", "d", "v")))
	require.NoError(t, err)
	for _, want := range []string{":1\r\n", ":1\r\n", ":0\r\n", ":1\r\n", "-UNAVAILABLE connection refused\r\n",
		"-UNAVAILABLE connection refused\r\n", "$-1\r\n", ":1\r\n"} {
		c.do(want)
	}
	_, _, pairs := parseInfo(t, c.info("commandstats", "errorstats"))
	require.Equal(t, map[string]string{"calls": "5", "rejected_calls": "0", "failed_calls": "0"}, without(pairs["cmdstat_pk.prepare"], "usec", "usec_per_call"))
	require.Equal(t, map[string]string{"calls": "3", "rejected_calls": "0", "failed_calls": "2"}, without(pairs["cmdstat_pk.get"], "usec", "usec_per_call"))
	require.Equal(t, map[string]string{"count": "2"}, pairs["errorstat_UNAVAILABLE"])
	for _, cs := range srv.Stats().Commands {
		switch cs.Name {
		case "pk.prepare":
			require.Equal(t, uint64(4), cs.Outcomes[stats.Outcome1])
			require.Equal(t, uint64(1), cs.Outcomes[stats.Outcome0])
			require.Equal(t, uint64(5), cs.Latency.Count())
		case "pk.get":
			require.Equal(t, uint64(1), cs.Outcomes[stats.OutcomeNil])
			require.Equal(t, uint64(3), cs.Latency.Count())
		}
	}
}
