package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/storetest"
	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol"
	"github.com/prepkey/prepkey/protocol/scheduler/schedtest"
)

// Transactions (MULTI/EXEC) are tested over real connections to a sidecar
// server on the store, since queueing and EXEC's reply are the protocol
// layer's, and isolation is the store's (commands.Execer; backend/storetest
// races the store's Exec itself).

// seed is a record a block starts from: live, forever, in ns.
type seed struct{ key, value string }

func live(key, value string) seed { return seed{key, value} }

type checkKind uint8

const (
	checkAbsent checkKind = iota + 1
	checkSame             // exactly the record as seeded
	checkHolds            // a live record with value, forever
)

// check is the state of one key of ns after a block that ran.
type check struct {
	kind       checkKind
	key, value string
}

func absent(key string) check       { return check{kind: checkAbsent, key: key} }
func same(key string) check         { return check{kind: checkSame, key: key} }
func holds(key, value string) check { return check{kind: checkHolds, key: key, value: value} }

// blockRow is one transaction: requests from MULTI to EXEC with their
// exact replies, and the records afterwards. When the store cannot isolate
// the block (Harness.Isolates) EXEC must answer -EXECABORT and the
// records must be as seeded.
type blockRow struct {
	name  string
	seeds []seed // live, forever, in ns
	block [][]string
	// queued are the replies while queuing (default +QUEUED each).
	queued []string
	exec   string   // EXEC's reply when the store runs the block
	keys   []string // the PK keys of the block, for Isolates
	then   []check  // state after a block that ran
}

func blockRows(ns string) []blockRow {
	return []blockRow{{
		name: "mixed commands on one key",
		block: [][]string{
			{"PK.PREPARE", ns, "a", "v1"},
			{"PK.GET", ns, "a"},
			{"PK.PREPARE", ns, "a", "v2"},
			{"PK.REPREPARE", ns, "a", "v3", "IFEQ", "v1"},
			{"PK.GETVALUE", ns, "a"},
			{"PK.ROLLBACK", ns, "a", "IFEQ", "v1"},
			{"PK.ROLLBACK", ns, "a", "IFEQ", "v3"},
			{"PK.GETVALUE", ns, "a"},
			{"PK.PREPARE", ns, "a", "v4"},
		},
		exec: "*9\r\n:1\r\n$2\r\nv1\r\n:0\r\n:1\r\n*2\r\n$2\r\nv3\r\n:-1\r\n:0\r\n:1\r\n*-1\r\n:1\r\n",
		keys: []string{"a"},
		then: []check{holds("a", "v4")},
	}, {
		name:  "mixed commands on several keys, with connection commands",
		seeds: []seed{live("old", "ov")},
		block: [][]string{
			{"PK.PREPARE", ns, "a", "va"},
			{"PING"},
			{"PK.REPREPARE", ns, "new", "nv", "FROM", "old", "IFEQ", "ov"},
			{"ECHO", "hi"},
			{"PK.GET", ns, "old"},
			{"PK.ROLLBACK", ns, "b"},
			{"PK.GET", ns, "new"},
		},
		exec: "*7\r\n:1\r\n+PONG\r\n:1\r\n$2\r\nhi\r\n$-1\r\n:0\r\n$2\r\nnv\r\n",
		keys: []string{"a", "new", "old", "b"},
		then: []check{holds("a", "va"), holds("new", "nv"), absent("old"), absent("b")},
	}, {
		name:  "a :0 inside a block does not undo the others",
		seeds: []seed{live("a", "x")},
		block: [][]string{
			{"PK.PREPARE", ns, "b", "y"},
			{"PK.PREPARE", ns, "a", "y"},
			{"PK.PREPARE", ns, "c", "y"},
		},
		exec: "*3\r\n:1\r\n:0\r\n:1\r\n",
		keys: []string{"a", "b", "c"},
		then: []check{same("a"), holds("b", "y"), holds("c", "y")},
	}, {
		name:  "-MISMATCH inside a block is its entry",
		seeds: []seed{live("old", "ov")},
		block: [][]string{
			{"PK.REPREPARE", ns, "new", "nv", "FROM", "old", "IFEQ", "other"},
			{"PK.GET", ns, "old"},
		},
		exec: "*2\r\n-MISMATCH old key has no record with that value\r\n$2\r\nov\r\n",
		keys: []string{"new", "old"},
		then: []check{same("old"), absent("new")},
	}, {
		name:  "a refused command aborts the block",
		seeds: []seed{live("a", "x")},
		block: [][]string{
			{"PK.PREPARE", ns, "b", "y"},
			{"PK.PREPARE", ns, "c", "y", "EX", "0"},
			{"PK.ROLLBACK", ns, "a"},
			{"PK.GET", ns},
		},
		queued: []string{"+QUEUED\r\n", "-ERR invalid expire time in 'pk.prepare' command\r\n", "+QUEUED\r\n",
			"-ERR wrong number of arguments for 'pk.get' command\r\n"},
		exec: "-EXECABORT Transaction discarded because of previous errors.\r\n",
		then: []check{same("a"), absent("b"), absent("c")},
	}, {
		name: "an empty block",
		exec: "*0\r\n",
	}, {
		name:  "connection commands only",
		block: [][]string{{"PING"}, {"ECHO", "x"}},
		exec:  "*2\r\n+PONG\r\n$1\r\nx\r\n",
	}}
}

// serveStore starts a sidecar server on the store under test and returns
// its address. The server takes PK commands to the store as it declares
// (its Info and Submit), as the sidecar does; with sc, as sc says instead
// (schedtest.Declare: the store's Run, on each of the server's paths).
func serveStore(t *testing.T, e *env, sc *schedtest.Schedule) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	st := e.h.Store
	if sc != nil {
		st = schedtest.Declare(st, *sc)
	}
	h := commands.New(st, commands.DefaultLimits, e.h.Now)
	srv := protocol.New(protocol.Config{}, h, e.h.Store)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.ErrorIs(t, <-done, protocol.ErrServerClosed)
	})
	return ln.Addr().String()
}

// respClient speaks RESP2 to a sidecar and returns replies as raw bytes.
type respClient struct {
	nc net.Conn
	r  *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respClient {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	return &respClient{nc: nc, r: bufio.NewReader(nc)}
}

func respRequest(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// send writes requests, pipelined, and reads one reply for each.
func (c *respClient) send(reqs ...[]string) ([]string, error) {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(respRequest(r...))
	}
	if err := c.nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write([]byte(b.String())); err != nil {
		return nil, err
	}
	replies := make([]string, len(reqs))
	for i := range reqs {
		var err error
		if replies[i], err = readRESP(c.r); err != nil {
			return nil, err
		}
	}
	return replies, nil
}

// readRESP reads one RESP2 reply, whole, as it came.
func readRESP(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("bad reply line %q", line)
	}
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$', '*':
		n, err := strconv.Atoi(line[1 : len(line)-2])
		if err != nil {
			return "", fmt.Errorf("bad reply line %q", line)
		}
		if n < 0 {
			return line, nil
		}
		if line[0] == '$' {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r, buf); err != nil {
				return "", err
			}
			return line + string(buf), nil
		}
		out := line
		for range n {
			item, err := readRESP(r)
			if err != nil {
				return "", err
			}
			out += item
		}
		return out, nil
	}
	return "", fmt.Errorf("bad reply line %q", line)
}

// testBlocks runs each block row, pipelined from MULTI to EXEC, on a fresh
// store.
func testBlocks(t *testing.T, newStore storetest.NewStore, sc *schedtest.Schedule) {
	for i, row := range blockRows("") {
		t.Run(row.name, func(t *testing.T) {
			e := newEnv(t, newStore)
			r := blockRows(e.ns)[i] // the row in the env's namespace
			seeds := map[string]backend.Record{}
			for _, s := range r.seeds {
				require.True(t, e.prepare(e.ns, s.key, s.value, forever))
				seeds[s.key], _ = e.get(e.ns, s.key)
			}
			c := dialResp(t, serveStore(t, e, sc))
			reqs := append([][]string{{"MULTI"}}, r.block...)
			reqs = append(reqs, []string{"EXEC"})
			got, err := c.send(reqs...)
			require.NoError(t, err)
			want := []string{"+OK\r\n"}
			for i := range r.block {
				if r.queued != nil {
					want = append(want, r.queued[i])
				} else {
					want = append(want, "+QUEUED\r\n")
				}
			}
			runs := e.isolates(r.keys) || strings.HasPrefix(r.exec, "-EXECABORT")
			if runs {
				require.Equal(t, append(want, r.exec), got)
			} else {
				require.Equal(t, want, got[:len(got)-1])
				require.True(t, strings.HasPrefix(got[len(got)-1], "-EXECABORT Transaction discarded: "), "EXEC = %q", got[len(got)-1])
				for _, k := range r.keys {
					if rec, ok := seeds[k]; ok {
						got, found := e.get(e.ns, k)
						require.True(t, found, "key %q", k)
						require.Equal(t, rec, got, "key %q unchanged", k)
					} else {
						e.requireAbsent(e.ns, k)
					}
				}
				return
			}
			for _, ch := range r.then {
				switch ch.kind {
				case checkAbsent:
					e.requireAbsent(e.ns, ch.key)
				case checkSame:
					got, found := e.get(e.ns, ch.key)
					require.True(t, found, "key %q", ch.key)
					require.Equal(t, seeds[ch.key], got, "key %q unchanged", ch.key)
				case checkHolds:
					e.requireLive(e.ns, ch.key, ch.value)
				}
			}
			// The connection serves on after EXEC.
			got, err = c.send([]string{"PING"})
			require.NoError(t, err)
			require.Equal(t, []string{"+PONG\r\n"}, got)
		})
	}
}

// testBlockIsolation races, over real connections, a block PK.PREPARE a +
// PK.PREPARE b against a block PK.PREPARE b + PK.PREPARE a: isolated, one
// block takes both keys and the other none, never one key each (which two
// blocks interleaving op by op gives, each winning its first key).
func testBlockIsolation(t *testing.T, newStore storetest.NewStore, sc *schedtest.Schedule) {
	e := newEnv(t, newStore)
	a, b := e.blockKeys()
	if !e.isolates([]string{a, b}) {
		t.Skip("the store does not isolate a block on these keys")
	}
	addr := serveStore(t, e, sc)
	const pairs, rounds = 4, 100
	var clients [2 * pairs]*respClient
	for i := range clients {
		clients[i] = dialResp(t, addr)
	}
	block := func(i int) [][]string {
		v := storetest.RacerValue(i)
		first, second := a, b
		if i%2 == 1 {
			first, second = b, a
		}
		return [][]string{{"MULTI"}, {"PK.PREPARE", e.ns, first, v}, {"PK.PREPARE", e.ns, second, v}, {"EXEC"}}
	}
	for round := range rounds {
		winners := storetest.Race(t, len(clients), func(i int) (bool, error) {
			got, err := clients[i].send(block(i)...)
			if err != nil {
				return false, err
			}
			switch got[3] {
			case "*2\r\n:1\r\n:1\r\n":
				return true, nil
			case "*2\r\n:0\r\n:0\r\n":
				return false, nil
			}
			return false, errors.New("block " + storetest.RacerValue(i) + " got one key of two: " + strconv.Quote(got[3]))
		})
		require.Len(t, winners, 1, "round %d: blocks that took both keys", round)
		v := storetest.RacerValue(winners[0])
		e.requireLive(e.ns, a, v)
		e.requireLive(e.ns, b, v)
		require.True(t, e.rollback(e.ns, a, always))
		require.True(t, e.rollback(e.ns, b, always))
	}
}
