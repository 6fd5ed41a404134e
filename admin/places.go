package admin

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// places bounds the admin port's connections (--admin-max-clients) without
// letting idle ones lock probes out. netutil.LimitListener held every place
// until a connection closed: 64 idle kept-alive connections made a fresh
// /healthz wait their 60 s idle timeout, and 6000 connections that sent
// nothing made it time out (issue 30), so a kubelet would have restarted a
// healthy pod. Here, when every place is taken, the new connection takes
// the place of one that is not serving a request: an idle kept-alive one
// first, else the one that has waited longest without sending a request
// (a probe sends its request as it connects). Only when all are serving
// requests does Accept wait for one to close.
type places struct {
	net.Listener
	max int

	mu     sync.Mutex
	free   *sync.Cond
	conns  map[net.Conn]place
	closed bool
}

// place is a connection's state as net/http reports it (ConnState), and
// since when.
type place struct {
	state http.ConnState
	since time.Time
}

func newPlaces(ln net.Listener, max int) *places {
	p := &places{Listener: ln, max: max, conns: make(map[net.Conn]place)}
	p.free = sync.NewCond(&p.mu)
	return p
}

// Accept accepts a connection and gives it a place, making one when all
// are taken.
func (p *places) Accept() (net.Conn, error) {
	nc, err := p.Listener.Accept()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) >= p.max {
		victim, wait := p.victim()
		if victim != nil {
			delete(p.conns, victim)
			_ = victim.Close() // net/http's goroutine for it ends
			continue
		}
		if p.closed {
			_ = nc.Close()
			return nil, net.ErrClosed
		}
		if wait > 0 {
			// One that sent nothing is younger than quietFor.
			p.mu.Unlock()
			time.Sleep(wait)
			p.mu.Lock()
			continue
		}
		p.free.Wait() // every place serves a request
	}
	tc := &tracked{Conn: nc}
	p.conns[tc] = place{http.StateNew, time.Now()}
	return tc, nil
}

// tracked is an accepted connection that notes whether net/http has read
// from it: one that has is not taken for a connection that sent nothing,
// even before net/http calls it active.
type tracked struct {
	net.Conn
	got atomic.Bool
}

func (t *tracked) Read(b []byte) (int, error) {
	n, err := t.Conn.Read(b)
	if n > 0 {
		t.got.Store(true)
	}
	return n, err
}

// sentNothing reports whether c has sent nothing: net/http has read nothing of
// it and no byte waits in its socket.
func sentNothing(c net.Conn) bool {
	t, ok := c.(*tracked)
	return ok && !t.got.Load() && unreadBytes(t.Conn) == 0
}

// Close closes the listener and ends an Accept waiting for a place
// (Shutdown).
func (p *places) Close() error {
	p.mu.Lock()
	p.closed = true
	p.free.Broadcast()
	p.mu.Unlock()
	return p.Listener.Close()
}

// quietFor is how long a connection that has sent nothing keeps its place
// against a new one: a probe sends its request as it connects, and its
// bytes wait in the socket until net/http's goroutine reads them.
const quietFor = 10 * time.Millisecond

// victim is the connection whose place a new one takes: the idle
// kept-alive one idle the longest, else the one that has sent nothing
// (not a byte waits in its socket: unread, see unreadBytes) for the
// longest, past quietFor; nil when all are serving requests or have sent
// theirs, with wait set when one that sent nothing is younger.
func (p *places) victim() (victim net.Conn, wait time.Duration) {
	var idle, quiet net.Conn
	var idleSince, quietSince time.Time
	for c, pl := range p.conns {
		switch pl.state {
		case http.StateIdle:
			if idle == nil || pl.since.Before(idleSince) {
				idle, idleSince = c, pl.since
			}
		case http.StateNew:
			if (quiet == nil || pl.since.Before(quietSince)) && sentNothing(c) {
				quiet, quietSince = c, pl.since
			}
		}
	}
	switch {
	case idle != nil:
		return idle, 0
	case quiet == nil:
		return nil, 0
	}
	if age := time.Since(quietSince); age < quietFor {
		return nil, quietFor - age
	}
	return quiet, 0
}

// track is http.Server.ConnState: it follows each connection's state and
// frees its place when it closes.
func (p *places) track(c net.Conn, s http.ConnState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.conns[c]; !ok {
		return // its place was taken already
	}
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(p.conns, c)
		p.free.Signal()
	default:
		p.conns[c] = place{s, time.Now()}
		if s == http.StateIdle {
			p.free.Signal() // its place can be taken
		}
	}
}
