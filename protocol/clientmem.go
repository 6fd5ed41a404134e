package protocol

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prepkey/prepkey/protocol/floodlog"
	"github.com/prepkey/prepkey/protocol/transport"
)

// The bound on what all client connections hold together
// (Config.MaxClientsMemory), as Redis 7's maxmemory-clients: each
// connection's unread replies (gnet's outbound buffer), its input not yet
// served (gnet's inbound buffer) and the large request it is assembling.
// Each connection has its own bounds (maxOutbound, the guard's), but
// nothing bounded their sum: 50 connections pipelining PK.GET of a 64 KiB
// value and never reading took 3.1 GB, and other clients' PING waited
// seconds behind the loop filling them (issue 30). Past the bound the
// connection holding the most is closed, as Redis evicts the biggest
// client.
//
// A connection counts what it holds when it changes, on its loop, after a
// serve's replies are written and when input waits unserved (account): one
// atomic add on the server's total when the figure moved, none when it did
// not. A client that reads its replies and sends complete requests holds
// nothing between serves, so the hot path costs two reads of gnet's
// counters and a compare. gnet sends the unread replies once the socket
// takes them, without telling the connection: the figure of a connection
// is what it held at its last serve, never less than it holds, until the
// next one.

// clientMem is the server's side of the bound.
type clientMem struct {
	limit   int64        // Config.MaxClientsMemory; 0: no bound
	held    atomic.Int64 // what the connections hold, each as it last counted
	evicted atomic.Int64 // connections closed for the bound (INFO's evicted_clients)

	// reclaiming is set while a reclaim is scheduled (reclaimSoon).
	reclaiming atomic.Bool
	lastFreed  atomic.Int64 // UnixNano of the last reclaim

	// slow is each loop's connections that yielded with replies left
	// unread (backlog.go), while it has some.
	slowMu sync.Mutex
	slow   map[transport.Loop]*backlog
}

// reclaimAt is what a connection closing with it held has the memory
// given back to the OS (reclaimSoon): the buffers of a slow reader are
// megabytes of heap that the runtime keeps (with GOGC 400 its goal stays
// high until the next collection, which an idle sidecar does not make).
const reclaimAt = 1 << 20

// reclaimAfter is how long after such a close the memory is given back,
// so that connections closing together cost one reclaim; reclaimEvery
// bounds how often (a collection costs CPU in proportion to the live heap,
// the memory: store's records included).
const (
	reclaimAfter = 500 * time.Millisecond
	reclaimEvery = 5 * time.Second
)

// account counts what the connection holds now in the server's total, and,
// past the bound, closes the connections that hold the most until the
// rest fit. It reports whether the connection itself is to be closed so.
// Called on the connection's loop.
func (c *conn) account() (closeIt bool) {
	n := int64(c.gc.OutboundBuffered() + c.gc.InboundBuffered() + c.asm.Size())
	old := c.mem.Load()
	if n == old {
		return false
	}
	c.mem.Store(n)
	m := &c.srv.mem
	total := m.held.Add(n - old)
	if m.limit == 0 || total <= m.limit || n < old {
		return false
	}
	return c.srv.evictBiggest(c)
}

// released takes a closed connection's figure out of the total and has
// the memory it held given back.
func (c *conn) released() {
	n := c.mem.Swap(0)
	if n == 0 {
		return
	}
	c.srv.mem.held.Add(-n)
	if n >= reclaimAt || c.evicting.Load() {
		c.srv.mem.reclaimSoon()
	}
}

// evictBiggest closes the connections that hold the most until what the
// others hold fits the bound; from is the connection whose growth passed
// it, and it reports whether from is one of them. The victims are closed
// through their handles (on their own loops); until they are, what they
// hold is counted as gone, so that one excess evicts one client, not one
// per serve until its close.
func (s *Server) evictBiggest(from *conn) (self bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		var leaving int64
		var biggest *conn
		var most int64
		for c := range s.conns {
			n := c.mem.Load()
			if c.evicting.Load() {
				leaving += n
				continue
			}
			if n > most {
				biggest, most = c, n
			}
		}
		total := s.mem.held.Load()
		if total-leaving <= s.mem.limit || biggest == nil {
			return self
		}
		biggest.evicting.Store(true)
		s.mem.evicted.Add(1)
		s.flood.Log(floodlog.ClientMemory, slog.LevelWarn, "closing the client that holds the most: clients' memory past --max-clients-memory",
			"id", biggest.id, "holds", most, "clients_memory", total, "limit", s.mem.limit)
		self = self || biggest == from
		if biggest.handle != nil {
			biggest.handle.Close() // from too: its caller may not close it
		}
	}
}

// reclaimSoon gives the memory the closed connections held back to the OS
// after reclaimAfter, at most once every reclaimEvery: two collections
// (gnet keeps its buffers in sync.Pools, which a collection only moves to
// their victim caches), then debug.FreeOSMemory. Without it the heap's
// goal stays where the slow readers took it and the runtime keeps the
// pages.
func (m *clientMem) reclaimSoon() {
	if !m.reclaiming.CompareAndSwap(false, true) {
		return
	}
	wait := reclaimAfter
	if next := time.Unix(0, m.lastFreed.Load()).Add(reclaimEvery); time.Until(next) > wait {
		wait = time.Until(next)
	}
	time.AfterFunc(wait, func() {
		runtime.GC()
		debug.FreeOSMemory()
		m.lastFreed.Store(time.Now().UnixNano())
		m.reclaiming.Store(false)
	})
}
