package protocol

import (
	"bytes"
	"context"
	"slices"
	"time"

	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/conncmd"
	"github.com/prepkey/prepkey/protocol/resp"
)

// The connection commands (package conncmd) on the server's connections:
// their table, how a connection runs one, and what they see of the
// connection (conn, as conncmd.Conn) and of the server (cmdServer).

// newConnCmds is the server's table of connection commands, with its
// transaction commands (transaction.go); inside MULTI, queue answers these.
func newConnCmds(s *Server) *conncmd.Table {
	return conncmd.New(cmdServer{s}, s.cfg.Password, map[string]conncmd.Cmd{
		"multi":   txCmd(1, (*conn).multi),
		"exec":    txCmd(1, (*conn).execCmd),
		"discard": txCmd(1, (*conn).discardCmd),
		"watch":   txCmd(-2, (*conn).watch),
		"unwatch": txCmd(1, (*conn).watch),
	})
}

// txCmd is a transaction command in the table: it runs on the server's own
// conn.
func txCmd(arity int, run func(*conn, [][]byte)) conncmd.Cmd {
	return conncmd.Cmd{Arity: arity, Run: func(c conncmd.Conn, args [][]byte) { run(c.(*conn), args) }}
}

// connCommand runs the connection command in args, arity checked. It
// reports false when args[0] names none.
func (c *conn) connCommand(args [][]byte) bool {
	cmd, refusal, found := c.srv.connCmds.Lookup(args)
	switch {
	case !found:
		return false
	case refusal.Err != commands.NoError:
		c.out.Reply(&refusal)
		return true
	}
	if cmd.OffLoop {
		args = cloneArgs(args) // they point into gnet's buffer
		idx, began := c.statIndex(args[0]), c.began
		c.offload(func() {
			errs := c.out.Errs
			cmd.Run(c, args)
			o, p := c.outcomeSince(0, errs)
			c.stats.Record(idx, o, p, time.Since(began))
		})
		return true
	}
	cmd.Run(c, args)
	return true
}

// runConnCmd runs the connection command in args, found and checked
// already (a transaction's, queued).
func (c *conn) runConnCmd(args [][]byte) {
	cmd, _, _ := c.srv.connCmds.Lookup(args)
	cmd.Run(c, args)
}

func cloneArgs(args [][]byte) [][]byte {
	kept := make([][]byte, len(args))
	for i, a := range args {
		kept[i] = bytes.Clone(a)
	}
	return kept
}

var _ conncmd.Conn = (*conn)(nil)

// Out is where the connection's replies are built (conncmd.Conn).
func (c *conn) Out() *resp.Writer { return &c.out }

// Authed reports whether the connection may run every command
// (conncmd.Conn).
func (c *conn) Authed() bool { return c.authed }

// Authenticate lets the connection run every command (conncmd.Conn).
func (c *conn) Authenticate() { c.authed = true }

// Quit has the connection closed once its replies so far are written
// (conncmd.Conn).
func (c *conn) Quit() { c.st.quitNow() }

// SetMeta changes what CLIENT LIST shows of c, under c.metaMu: CLIENT
// LIST on another loop reads it (conncmd.Conn).
func (c *conn) SetMeta(f func(*conncmd.Meta)) {
	c.metaMu.Lock()
	f(&c.meta)
	c.metaMu.Unlock()
}

// Client is what CLIENT LIST shows of c (conncmd.Conn); another loop may
// ask: the socket's fields are set before the handle is published, meta
// is read under metaMu.
func (c *conn) Client() conncmd.Client {
	c.metaMu.Lock()
	meta := c.meta
	c.metaMu.Unlock()
	return conncmd.Client{ID: c.id, Addr: c.addr, LAddr: c.laddr, FD: c.fd, Unix: c.unix,
		Created: c.created, LastInput: c.lastInput.Load(), Meta: meta}
}

// cmdServer is the server as the connection commands see it
// (conncmd.Server).
type cmdServer struct{ s *Server }

// Clients lists the open connections by id, with their handles, which
// other goroutines may use.
func (cs cmdServer) Clients() []conncmd.Peer {
	s := cs.s
	type open struct {
		c *conn
		h conncmd.Closer
	}
	s.mu.Lock()
	list := make([]open, 0, len(s.conns))
	for c := range s.conns {
		if c.handle != nil {
			list = append(list, open{c, c.handle})
		}
	}
	s.mu.Unlock()
	peers := make([]conncmd.Peer, len(list))
	for i, o := range list {
		peers[i] = conncmd.Peer{Client: o.c.Client(), Closer: o.h}
	}
	slices.SortFunc(peers, func(a, b conncmd.Peer) int { return int(a.ID - b.ID) })
	return peers
}

// Info is what INFO shows of the server.
func (cs cmdServer) Info() conncmd.ServerInfo {
	s := cs.s
	info := conncmd.ServerInfo{Stats: s.Stats()}
	s.mu.Lock()
	if s.ln != nil {
		info.Listen = s.ln.Addr()
	}
	s.mu.Unlock()
	return info
}

// PingBackend pings the backend (INFO's backend_ready).
func (cs cmdServer) PingBackend(ctx context.Context) error { return cs.s.backend.Ping(ctx) }
