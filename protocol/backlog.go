package protocol

import (
	"time"

	"github.com/prepkey/prepkey/protocol/transport"
)

// The connections whose replies are left unread (conn.flushFull's backlog)
// are served again by their loop through one queue per loop, one task at a
// time, a bounded share each time.
//
// Why not one task per connection: gnet runs the tasks queued on a loop
// (Loop.Later) in one pass that ends only when none is left, tasks queued
// meanwhile included, and reads no socket during that pass. Each slow
// reader re-queued itself backlogWait after its serve (through a timer);
// with 50 of them a pass of their serves lasted longer than backlogWait,
// so each was queued again before the pass ended and the pass went on
// until they were evicted or served to their end: another client's PING
// waited up to 1.2 s in its socket, while tasks queued from elsewhere
// (/healthz's probe of the loop, Server.Alive) still ran (issue 30; gnet
// v2.9.7, netpoll.Poller.Polling drains urgentAsyncTaskQueue, where
// Execute's tasks go).
//
// With one queue per loop a single task is queued at a time, backlogWait
// after the previous one ended, and it serves the waiting connections in
// turn until they have written backlogBudget of replies: the loop goes
// back to its sockets between two such tasks, after at most that much
// copying.

// backlogBudget is how many bytes of replies one pass over a loop's
// backlogged connections may write before the loop turns to its sockets
// again: a connection that gnet cannot send to writes flushAt per serve, so
// a pass serves 16 of them, or one whose socket takes backlogAt.
const backlogBudget = backlogAt

// backlog is one loop's connections waiting for their next serve after
// yielding with replies left unread. Its fields live on the loop.
type backlog struct {
	srv     *Server
	loop    transport.Loop
	waiting []*conn
	armed   bool // a pass is scheduled, or under way (it schedules the next)
}

// backlogged queues c (yielded, on its loop) for a serve by its loop's next
// pass over its backlog.
func (c *conn) backlogged() {
	b := c.srv.mem.backlogOf(c.srv, c.loop)
	b.waiting = append(b.waiting, c)
	b.arm()
}

// backlogOf is loop's backlog, created when a connection of it first
// yields so. It is forgotten once empty (pass), so that the portable
// transport, whose connections are each their own loop, keeps none for
// connections gone.
func (m *clientMem) backlogOf(s *Server, loop transport.Loop) *backlog {
	m.slowMu.Lock()
	defer m.slowMu.Unlock()
	b := m.slow[loop]
	if b == nil {
		if m.slow == nil {
			m.slow = make(map[transport.Loop]*backlog)
		}
		b = &backlog{srv: s, loop: loop}
		m.slow[loop] = b
	}
	return b
}

// arm schedules a pass backlogWait from now, through a timer: a task
// queued now would run in the loop's current pass over its tasks, before
// it reads its sockets again.
func (b *backlog) arm() {
	if b.armed {
		return
	}
	b.armed = true
	time.AfterFunc(backlogWait, func() {
		_ = b.loop.Later(b.pass)
		// An error means the loops are stopping; they close the connections.
	})
}

// pass serves the waiting connections in order until they have written
// backlogBudget; those not served wait for the next pass, before the ones
// that yielded again in this one. The next pass is scheduled once this one
// ends: scheduled by a connection yielding during it, its timer could fire
// before it ends and have its task run in the same pass of the loop over
// its tasks.
func (b *backlog) pass() {
	turn := b.waiting
	b.waiting = nil
	spent := 0
	for i, c := range turn {
		if spent >= backlogBudget {
			b.waiting = append(append([]*conn(nil), turn[i:]...), b.waiting...)
			break
		}
		c.st.yieldDone()
		c.serveAgain()
		spent += max(c.wrote, flushAt)
	}
	b.armed = false
	if len(b.waiting) > 0 {
		b.arm()
		return
	}
	m := &b.srv.mem
	m.slowMu.Lock()
	if m.slow[b.loop] == b {
		delete(m.slow, b.loop)
	}
	m.slowMu.Unlock()
}
