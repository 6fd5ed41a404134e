package protocol

import (
	"context"
	"errors"
	"strings"

	"github.com/panjf2000/gnet/v2"
	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/commands"
)

// conn is one client connection. It lives on its event loop: every field is
// touched only there, except while busy, when the goroutine doing the
// connection's off-loop work owns out and runArgs (see offload).
type conn struct {
	srv     *Server
	gc      gnet.Conn
	loop    gnet.EventLoop
	batcher *batcher // the loop's; nil when the store does not batch
	guard   *guardReader
	rd      *redcon.Reader
	out     writer
	id      int64
	authed  bool
	name    string
	lib     [2]string // CLIENT SETINFO lib-name, lib-ver
	quit    bool

	// pending are commands read but not yet answered: they wait behind a
	// busy run so that replies keep the order of requests.
	pending []redcon.Command
	// busy is set while store work of this connection is off the loop; the
	// connection reads no input until it is back.
	busy    bool
	closed  bool       // closed by the loop; late results are dropped
	runArgs [][][]byte // the PK run at the store
	replies []commands.Reply

	// handle is the connection for other goroutines (Shutdown wakes it);
	// it is set under Server.mu once the loop has opened the connection.
	handle gnet.Conn
}

// Limits on what one connection may hold in memory. Requests are bounded by
// the guard; these bound a client that sends without reading replies, or
// floods while its previous run is at the store. Past them the connection is
// closed, as Redis does at client-output-buffer-limit and
// client-query-buffer-limit.
const (
	maxOutbound     = 64 << 20
	minInboundLimit = 64 << 20
)

func newConn(s *Server) *conn {
	c := &conn{srv: s, id: s.nextID.Add(1), authed: s.cfg.Password == ""}
	c.guard = &guardReader{r: inbound{c}, lim: c.limits}
	c.rd = redcon.NewReader(c.guard)
	return c
}

// errDrained is inbound's "all received bytes are read": the event loop
// calls again when more arrive.
var errDrained = errors.New("no more input yet")

// inbound reads what the event loop has received on the connection,
// without blocking.
type inbound struct{ c *conn }

func (in inbound) Read(p []byte) (int, error) {
	if n, _ := in.c.gc.Read(p); n > 0 {
		return n, nil
	}
	return 0, errDrained
}

func (c *conn) limits() limits {
	if !c.authed {
		return limits{maxArgs: preAuthMaxArgs, maxBulk: preAuthMaxBulk, preAuth: true}
	}
	return limits{maxArgs: c.srv.cfg.MaxArgs, maxBulk: c.srv.cfg.MaxBulk}
}

// serve answers what the connection has received, in order, until it is all
// answered or a run waits on the store; it writes the replies with one
// write. It reports whether the connection is to be closed.
func (c *conn) serve() (closeIt bool) {
	for !c.busy && !c.quit {
		if len(c.pending) == 0 {
			cmds, err := c.rd.ReadCommands()
			if errors.Is(err, errDrained) {
				break
			}
			if err != nil {
				c.readFailed(err)
				c.flush()
				return true
			}
			c.pending = cmds
		}
		c.answer()
	}
	if c.busy {
		return false // flushed when it went busy; out is not the loop's now
	}
	c.flush()
	if c.gc.OutboundBuffered() > maxOutbound {
		c.srv.cfg.Logger.Warn("closing a client that does not read its replies", "id", c.id, "buffered", c.gc.OutboundBuffered())
		return true
	}
	return c.quit || c.srv.closing.Load()
}

// flush writes the replies built so far. gnet keeps what the socket does
// not take and sends it when the socket is writable.
func (c *conn) flush() {
	if len(c.out.b) == 0 {
		return
	}
	_, _ = c.gc.Write(c.out.b)
	if cap(c.out.b) > 1<<20 {
		c.out.b = nil // do not pin a burst's buffer for the connection's life
	}
	c.out.b = c.out.b[:0]
}

// readFailed tells the client about a protocol error, as Redis does before
// closing.
func (c *conn) readFailed(err error) {
	if errors.Is(err, errGuard) {
		c.out.err("ERR Protocol error: " + c.guard.failure)
		return
	}
	if msg := err.Error(); strings.HasPrefix(msg, "Protocol error") {
		c.out.err("ERR " + msg)
	}
}

// answer answers pending commands in order until none is left or a run of
// them has gone off the loop.
func (c *conn) answer() {
	for len(c.pending) > 0 && !c.quit && !c.busy {
		if n := c.pkRun(c.pending); n > 0 {
			c.toStore(c.pending[:n])
			c.pending = c.pending[n:]
			return
		}
		args := c.pending[0].Args
		c.pending = c.pending[1:]
		c.dispatch(args)
	}
}

// pkRun counts the PK commands at the start of cmds that go to the store
// together, off the loop: none before AUTH (dispatch refuses them) and none
// when the store answers from memory, which dispatch calls on the loop.
func (c *conn) pkRun(cmds []redcon.Command) int {
	if !c.authed || c.srv.cfg.InlineStore {
		return 0
	}
	n := 0
	for n < len(cmds) && c.srv.handler.IsPK(cmds[n].Args[0]) {
		n++
	}
	return n
}

// toStore sends a run of PK commands to the store off the loop: to the
// loop's batcher, which joins it with other connections' runs, or, for a
// store that does not batch, on a goroutine of its own.
func (c *conn) toStore(run []redcon.Command) {
	c.srv.processed.Add(int64(len(run)))
	c.runArgs = c.runArgs[:0]
	for _, cmd := range run {
		c.runArgs = append(c.runArgs, cmd.Args)
	}
	if c.batcher != nil {
		c.goBusy()
		c.batcher.submit(c)
		return
	}
	c.offload(func() {
		if cap(c.replies) < len(c.runArgs) {
			c.replies = make([]commands.Reply, len(c.runArgs))
		}
		replies := c.replies[:len(c.runArgs)]
		c.srv.handler.Batch(context.Background(), c.runArgs, replies)
		for _, r := range replies {
			c.out.reply(r)
		}
	})
}

// offload runs work that may wait on the backend on a goroutine, so that
// the loop goes on serving other connections, then resumes the connection
// on its loop. work may write replies to out: the loop leaves a busy
// connection alone.
func (c *conn) offload(work func()) {
	c.goBusy()
	go func() {
		work()
		c.resumeLater()
	}()
}

// goBusy hands the connection to off-loop work: the replies so far are
// written first, since out then belongs to that work until resume.
func (c *conn) goBusy() {
	c.flush()
	c.busy = true
}

// resumeLater asks the connection's loop to resume it; called off the loop
// when its work is done.
func (c *conn) resumeLater() {
	_ = c.loop.Execute(context.Background(), gnet.RunnableFunc(func(context.Context) error {
		c.resume()
		return nil
	}))
	// An error means the loops are stopping; they close the connection.
}

// resume goes on serving the connection once its off-loop work is done.
func (c *conn) resume() {
	c.busy = false
	if c.closed {
		return
	}
	if c.serve() {
		_ = c.loop.Close(c.gc)
	}
}

// dispatch answers one command on the loop.
func (c *conn) dispatch(args [][]byte) {
	c.srv.processed.Add(1)
	if !c.authed && !allowedBeforeAuth(args[0]) {
		c.out.err("NOAUTH Authentication required.")
		return
	}
	if r, ok := c.srv.handler.Do(context.Background(), args); ok {
		c.out.reply(r)
		return
	}
	if c.connCommand(args) {
		return
	}
	c.out.reply(commands.UnknownCommand(args))
}
