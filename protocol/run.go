package protocol

import (
	"time"

	"github.com/prepkey/prepkey/commands"
	"github.com/prepkey/prepkey/protocol/scheduler"
)

// A connection's run as its loop's scheduling sees it (scheduler.Conn): it
// parks and serves it again, and writes the run's replies to its out
// while it is at the store.

var _ scheduler.Conn = (*conn)(nil)

// Commands is the run's commands (runArgs).
func (c *conn) Commands() [][][]byte { return c.runArgs }

// Big reports whether the run is an assembled request (serveBig).
func (c *conn) Big() bool { return c.bigRun }

// Park has the connection wait for its loop's room.
func (c *conn) Park() bool { return c.st.park() }

// Unpark serves it again once its loop has room.
func (c *conn) Unpark() {
	c.st.unpark()
	c.serveAgain()
}

// Answer writes the run's replies to out and counts them (recordRun).
// After a late answer the store may still read the run's arguments: the
// connection lets go of its copy and makes a new one for its next run.
func (c *conn) Answer(replies []commands.Reply, now time.Time, late bool) {
	c.recordRun(replies, now)
	for i := range c.runArgs {
		c.out.Reply(&replies[i])
	}
	if late {
		c.runRaw, c.runFlat, c.runArgs = nil, nil, nil
	}
}

// Resume goes on serving the connection once its run is answered.
func (c *conn) Resume() { c.resume() }

// ResumeLater has its loop Resume it.
func (c *conn) ResumeLater() { c.resumeLater() }
