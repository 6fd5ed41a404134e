package protocol

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/prepkey/prepkey/commands"
)

// conn is one client connection. Everything but interrupted is touched only
// by the connection's own goroutine.
type conn struct {
	srv    *Server
	nc     net.Conn
	guard  *guardConn
	rd     *redcon.Reader
	out    writer
	id     int64
	authed bool
	name   string
	lib    [2]string // CLIENT SETINFO lib-name, lib-ver
	quit   bool

	// reused by every batch of the connection
	batchArgs    [][][]byte
	batchReplies []commands.Reply

	interrupted atomic.Bool
}

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{srv: s, nc: nc, id: s.nextID.Add(1), authed: s.cfg.Password == ""}
	c.guard = &guardConn{Conn: nc, lim: c.limits}
	c.rd = redcon.NewReader(c.guard)
	return c
}

func (c *conn) limits() limits {
	if !c.authed {
		return limits{maxArgs: preAuthMaxArgs, maxBulk: preAuthMaxBulk, preAuth: true}
	}
	return limits{maxArgs: c.srv.cfg.MaxArgs, maxBulk: c.srv.cfg.MaxBulk}
}

// interrupt makes a blocked read return so the connection can close after
// answering what it has read (Shutdown).
func (c *conn) interrupt() {
	c.interrupted.Store(true)
	_ = c.nc.SetReadDeadline(time.Now())
}

// serve reads pipelines of commands, answers each in order, and writes all
// the answers of one pipeline with one write.
func (c *conn) serve() {
	defer c.nc.Close()
	ctx := context.Background()
	for {
		cmds, err := c.rd.ReadCommands()
		if err != nil {
			c.readFailed(err)
			return
		}
		for i := 0; i < len(cmds) && !c.quit; {
			if n := c.pkRun(cmds[i:]); n > 1 {
				c.batch(ctx, cmds[i:i+n])
				i += n
				continue
			}
			c.dispatch(ctx, cmds[i].Args)
			i++
		}
		if _, err := c.nc.Write(c.out.b); err != nil {
			return
		}
		if cap(c.out.b) > 1<<20 {
			c.out.b = nil // do not pin a burst's buffer for the connection's life
		}
		c.out.b = c.out.b[:0]
		if c.quit || c.interrupted.Load() {
			return
		}
	}
}

// readFailed tells the client about a protocol error, as Redis does before
// closing. Guard errors were already told by the guard.
func (c *conn) readFailed(err error) {
	if errors.Is(err, errGuard) || errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	if msg := err.Error(); strings.HasPrefix(msg, "Protocol error") {
		c.out.b = redcon.AppendError(c.out.b[:0], "ERR "+msg)
		_, _ = c.nc.Write(c.out.b)
	}
}

// pkRun counts the PK commands at the start of cmds that can go to the
// store together: only after AUTH, since a batch skips the per-command
// checks of dispatch.
func (c *conn) pkRun(cmds []redcon.Command) int {
	if !c.authed {
		return 0
	}
	n := 0
	for n < len(cmds) && c.srv.handler.IsPK(cmds[n].Args[0]) {
		n++
	}
	return n
}

// batch answers a run of PK commands with one Handler.Batch call.
func (c *conn) batch(ctx context.Context, cmds []redcon.Command) {
	c.srv.processed.Add(int64(len(cmds)))
	c.batchArgs = c.batchArgs[:0]
	for _, cmd := range cmds {
		c.batchArgs = append(c.batchArgs, cmd.Args)
	}
	if cap(c.batchReplies) < len(cmds) {
		c.batchReplies = make([]commands.Reply, len(cmds))
	}
	replies := c.batchReplies[:len(cmds)]
	c.srv.handler.Batch(ctx, c.batchArgs, replies)
	for _, r := range replies {
		c.out.reply(r)
	}
}

// dispatch answers one command.
func (c *conn) dispatch(ctx context.Context, args [][]byte) {
	c.srv.processed.Add(1)
	if !c.authed && !allowedBeforeAuth(args[0]) {
		c.out.err("NOAUTH Authentication required.")
		return
	}
	if r, ok := c.srv.handler.Do(ctx, args); ok {
		c.out.reply(r)
		return
	}
	if c.connCommand(args) {
		return
	}
	c.out.reply(commands.UnknownCommand(args))
}
