package conncmd

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/commands"
)

func argv(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

// TestLine holds CLIENT LIST's line to Redis 7.2's fields, a unix socket's
// addresses as Redis shows them, and RESP2 for a client that never said.
func TestLine(t *testing.T) {
	tcp := Client{ID: 7, Addr: "127.0.0.1:5000", LAddr: "127.0.0.1:6379", FD: 9, Created: 100, LastInput: 130,
		Meta: Meta{Name: "web", Lib: [2]string{"go-redis", "9.5"}, Proto: 3}}
	require.Equal(t, "id=7 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=9 name=web age=50 idle=20 flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 "+
		"qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=default redir=-1 resp=3 "+
		"lib-name=go-redis lib-ver=9.5", Line(tcp, 150))

	unix := Client{ID: 8, Addr: "@", LAddr: "/run/prepkey.sock", FD: 10, Unix: true, Created: 150, LastInput: 150}
	require.Equal(t, "id=8 addr=/run/prepkey.sock:0 laddr=/run/prepkey.sock:0 fd=10 name= age=0 idle=0 flags=U db=0 sub=0 psub=0 ssub=0 multi=-1 "+
		"qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=NULL user=default redir=-1 resp=2 "+
		"lib-name= lib-ver=", Line(unix, 150))
}

func TestListFilter(t *testing.T) {
	a, b := Client{ID: 1}, Client{ID: 2}
	for _, tc := range []struct {
		args    []string
		a, b    bool
		refusal commands.Reply
	}{
		{args: []string{"client", "list"}, a: true, b: true},
		{args: []string{"client", "list", "TYPE", "Normal"}, a: true, b: true},
		{args: []string{"client", "list", "type", "pubsub"}},
		{args: []string{"client", "list", "id", "2", "5"}, b: true},
		{args: []string{"client", "list", "type", "x"}, refusal: commands.ErrUnknownClientType.Replyf([]byte("x"))},
		{args: []string{"client", "list", "id", "2", "x"}, refusal: commands.ErrInvalidClientID.Reply()},
		{args: []string{"client", "list", "type"}, refusal: commands.ErrSyntax.Reply()},
		{args: []string{"client", "list", "name", "x"}, refusal: commands.ErrSyntax.Reply()},
	} {
		keep, refusal := listFilter(argv(tc.args...))
		require.Equal(t, tc.refusal, refusal, tc.args)
		if refusal.Err != commands.NoError {
			continue
		}
		require.Equal(t, tc.a, keep(a), tc.args)
		require.Equal(t, tc.b, keep(b), tc.args)
	}
}

func TestKillFilter(t *testing.T) {
	me := Client{ID: 1, Addr: "127.0.0.1:1000", LAddr: "127.0.0.1:6379"}
	other := Client{ID: 2, Addr: "127.0.0.1:2000", LAddr: "127.0.0.1:6379"}
	for _, tc := range []struct {
		args      []string
		me, other bool
		refusal   commands.Reply
	}{
		// The old form may close the connection that sends it.
		{args: []string{"client", "kill", "127.0.0.1:1000"}, me: true},
		{args: []string{"client", "kill", "127.0.0.1:2000"}, other: true},
		// The new one skips it unless SKIPME no.
		{args: []string{"client", "kill", "laddr", "127.0.0.1:6379"}, other: true},
		{args: []string{"client", "kill", "laddr", "127.0.0.1:6379", "skipme", "NO"}, me: true, other: true},
		{args: []string{"client", "kill", "id", "2"}, other: true},
		{args: []string{"client", "kill", "id", "2", "addr", "127.0.0.1:1000"}},
		{args: []string{"client", "kill", "type", "replica"}},
		{args: []string{"client", "kill", "user", "default", "type", "normal"}, other: true},
		{args: []string{"client", "kill", "id", "0"}, refusal: commands.ErrClientIDRange.Reply()},
		{args: []string{"client", "kill", "id", "x"}, refusal: commands.ErrClientIDRange.Reply()},
		{args: []string{"client", "kill", "type", "x"}, refusal: commands.ErrUnknownClientType.Replyf("x")},
		{args: []string{"client", "kill", "user", "bob"}, refusal: commands.ErrNoSuchUser.Replyf("bob")},
		{args: []string{"client", "kill", "skipme", "maybe"}, refusal: commands.ErrSyntax.Reply()},
		{args: []string{"client", "kill", "id", "2", "addr"}, refusal: commands.ErrSyntax.Reply()},
		{args: []string{"client", "kill", "name", "x"}, refusal: commands.ErrSyntax.Reply()},
	} {
		f, refusal := parseKill(argv(tc.args...))
		require.Equal(t, tc.refusal, refusal, tc.args)
		if refusal.Err != commands.NoError {
			continue
		}
		require.Equal(t, tc.me, f.matches(me, me.ID), tc.args)
		require.Equal(t, tc.other, f.matches(other, me.ID), tc.args)
	}
}

// closed counts the closes of a peer.
type closed struct{ n int }

func (c *closed) Close() { c.n++ }

// TestClientKill closes the others through their Closer, and the
// connection that sends it (SKIPME no) by Quit, after its reply.
func TestClientKill(t *testing.T) {
	var mine, other closed
	srv := &fakeServer{peers: []Peer{
		{Client: Client{ID: 1, Addr: "a:1"}, Closer: &mine},
		{Client: Client{ID: 2, Addr: "a:2"}, Closer: &other},
	}}
	tb := New(srv, "", nil)
	c := &fakeConn{cl: Client{ID: 1}}
	tb.clientKill(c, argv("client", "kill", "skipme", "no"))
	require.Equal(t, ":2\r\n", string(c.out.B))
	require.True(t, c.quit)
	require.Equal(t, 0, mine.n)
	require.Equal(t, 1, other.n)

	c = &fakeConn{cl: Client{ID: 1}}
	tb.clientKill(c, argv("client", "kill", "a:3"))
	require.Equal(t, "-ERR No such client\r\n", string(c.out.B))
	require.False(t, c.quit)
}
