package admin

import (
	"net"
	"sync"
)

// limitListener accepts at most cap(sem) connections at once, as
// golang.org/x/net/netutil's LimitListener (not a dependency of the module,
// for these few lines). Past the cap Accept waits for one to close: the
// connections dialled meanwhile wait in the kernel's accept queue, which
// takes no descriptor of the process, or are refused once it is full. So
// idle probes, however many, cannot take the descriptors the RESP port's
// clients need (issue 23).
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func limitConns(ln net.Listener, n int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free place, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and ends an Accept waiting for a place.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn gives its place back once, at its first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
