package mongo

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// proxy forwards TCP connections to a server and can be taken down (its
// listener and every connection closed) and brought back on the same
// address: a MongoDB that fails and recovers, without restarting the real
// one.
type proxy struct {
	target, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{target: target, addr: ln.Addr().String(), conns: make(map[net.Conn]struct{})}
	p.serve(ln)
	t.Cleanup(func() {
		p.down()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.pipe(c) })
		}
	})
}

func (p *proxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil {
		p.mu.Unlock()
		c.Close()
		s.Close()
		return
	}
	p.conns[c], p.conns[s] = struct{}{}, struct{}{}
	p.mu.Unlock()
	go func() {
		_, _ = io.Copy(s, c)
		s.Close()
	}()
	_, _ = io.Copy(c, s)
	c.Close()
}

// down refuses new connections and breaks the open ones.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// up listens again on the same address.
func (p *proxy) up(t *testing.T) {
	t.Helper()
	var ln net.Listener
	require.Eventually(t, func() bool {
		var err error
		ln, err = net.Listen("tcp", p.addr)
		return err == nil
	}, 5*time.Second, 10*time.Millisecond, "listen again on %s", p.addr)
	p.serve(ln)
}

// proxied puts a proxy in front of the server of raw and returns the URL
// that reaches the server through it, connecting directly (discovering a
// replica set's members would bypass the proxy).
func proxied(t *testing.T, raw string) (*proxy, string) {
	t.Helper()
	u := splitURL(t, raw)
	if u.scheme != "mongodb://" || strings.Contains(u.hosts, ",") {
		t.Skipf("the failure tests need a single-host mongodb:// URL, not %s", u.scheme+u.hosts)
	}
	target := u.hosts
	if !strings.Contains(target, ":") {
		target += ":27017"
	}
	p := newProxy(t, target)
	u.hosts = p.addr
	u.query = strings.TrimPrefix(u.query+"&directConnection=true", "&")
	return p, u.String()
}

// requireUnavailable runs every command of the store and requires each to
// fail, within the timeout, with a one-line error naming the store: never
// an answer.
func requireUnavailable(t *testing.T, s *Store, timeout time.Duration) {
	t.Helper()
	ctx := t.Context()
	k, v := []byte("k"), []byte("v")
	calls := map[string]func() error{
		"prepare": func() error {
			_, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", k, v, backend.Expiry{})
			return err
		},
		"get": func() error {
			_, _, err := (backend.Calls{Runner: s}).Get(ctx, "ns", k)
			return err
		},
		"rollback": func() error {
			_, err := (backend.Calls{Runner: s}).Rollback(ctx, "ns", k, backend.Cond{})
			return err
		},
		"reprepare": func() error {
			_, err := (backend.Calls{Runner: s}).Reprepare(ctx, "ns", k, v, backend.Cond{}, backend.Expiry{})
			return err
		},
		"move": func() error {
			_, err := (backend.Calls{Runner: s}).Move(ctx, "ns", []byte("k2"), v, k, v, backend.Expiry{})
			return err
		},
		"ping": func() error { return s.Ping(ctx) },
	}
	type outcome struct {
		err     error
		elapsed time.Duration
	}
	outcomes := make(map[string]outcome, len(calls))
	var mu sync.Mutex
	var wg sync.WaitGroup
	// At once: each waits out the whole timeout.
	for name, call := range calls {
		wg.Go(func() {
			start := time.Now()
			err := call()
			mu.Lock()
			outcomes[name] = outcome{err, time.Since(start)}
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, o := range outcomes {
		require.Error(t, o.err, name)
		require.True(t, strings.HasPrefix(o.err.Error(), "mongo: "+name+": "), "%s: %q", name, o.err)
		require.NotContains(t, o.err.Error(), "\n", name)
		require.NotContains(t, o.err.Error(), "\r", name)
		// Move undoes its reservation on its own deadline: two of them.
		limit := timeout
		if name == "move" {
			limit *= 2
		}
		require.Less(t, o.elapsed, limit+time.Second, "%s answered after %v", name, o.elapsed)
	}
}

// requireServing waits for the store to serve again after the server came
// back, then requires a full round of commands to succeed.
func requireServing(t *testing.T, s *Store, key string) {
	t.Helper()
	ctx := t.Context()
	require.Eventually(t, func() bool { return s.Ping(ctx) == nil }, 20*time.Second, 50*time.Millisecond)
	ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte(key), []byte("v"), backend.Expiry{})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = (backend.Calls{Runner: s}).Prepare(ctx, "ns", []byte(key), []byte("w"), backend.Expiry{})
	require.NoError(t, err)
	require.False(t, ok)
	rec, ok, err := (backend.Calls{Runner: s}).Get(ctx, "ns", []byte(key))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []byte("v"), rec.Value)
}

// TestUnavailable: a store opened while MongoDB is down answers every
// command with an error within its timeout, serves once the server is up,
// fails again when the server goes away under open connections, and
// recovers again, all without being reopened.
func TestUnavailable(t *testing.T) {
	p, url := proxied(t, serverURL(t))
	p.down()

	// Long enough for a loaded FerretDB to answer once it is back.
	const timeout = time.Second
	s := openTest(t, url, Config{Timeout: timeout, SweepInterval: -1})
	requireUnavailable(t, s, timeout)

	p.up(t)
	requireServing(t, s, "first")

	p.down()
	requireUnavailable(t, s, timeout)

	p.up(t)
	requireServing(t, s, "second")
}

// TestUnreachable: nothing listening at all (a refused port) is an error,
// never an answer, and Open itself does not fail.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	const timeout = 200 * time.Millisecond
	s, err := Open(t.Context(), "mongodb://"+addr+"/?directConnection=true", Config{Timeout: timeout, SweepInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	requireUnavailable(t, s, timeout)
}
