package client_test

import (
	"bytes"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// proxy is a TCP proxy in front of a sidecar that can take hold of a
// PK.PREPARE's reply: it forwards the command, reads the sidecar's reply
// (so the prepare has run), and hands it to the test, which then relays it
// or drops the connection without relaying it, as a network that loses a
// reply does. The test decides when: cancellations and losses happen at a
// known point, without sleeps.
type proxy struct {
	addr   string
	target string
	// held receives each intercepted prepare's reply.
	held chan *heldReply

	mu        sync.Mutex
	intercept int // how many of the next PK.PREPAREs to take hold of
	prepares  int // PK.PREPAREs seen
}

// heldReply is the reply of a PK.PREPARE the proxy holds.
type heldReply struct {
	Reply  []byte
	decide chan bool
}

// Relay sends the reply on to the client.
func (h *heldReply) Relay() { h.decide <- true }

// Drop closes the client's connection (and the sidecar's) without the reply.
func (h *heldReply) Drop() { h.decide <- false }

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{addr: l.Addr().String(), target: target, held: make(chan *heldReply)}
	var conns sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		l.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				p.serve(c, done)
			}()
		}
	}()
	return p
}

// interceptNext makes the proxy take hold of the next n PK.PREPAREs' replies.
func (p *proxy) interceptNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.intercept = n
}

// seen returns how many PK.PREPAREs went through the proxy.
func (p *proxy) seen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prepares
}

// serve pumps one client connection to the sidecar and back. go-redis sends
// one command at a time on a connection and waits for its reply, so a read
// that holds PK.PREPARE is that command, and the next bytes back its reply.
func (p *proxy) serve(client net.Conn, done chan struct{}) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	hold := make(chan bool, 1) // the client side's word to the server side: take hold of the next reply
	go func() {
		defer server.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				chunk := buf[:n]
				taken := false
				if bytes.Contains(bytes.ToUpper(chunk), []byte("PK.PREPARE")) {
					p.mu.Lock()
					p.prepares++
					if p.intercept > 0 {
						p.intercept--
						taken = true
					}
					p.mu.Unlock()
				}
				if taken {
					hold <- true
				}
				if _, err := server.Write(chunk); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			select {
			case <-hold:
				h := &heldReply{Reply: append([]byte(nil), buf[:n]...), decide: make(chan bool)}
				select {
				case p.held <- h:
				case <-done:
					return
				}
				var relay bool
				select {
				case relay = <-h.decide:
				case <-done:
					return
				}
				if !relay {
					return // both connections closed by the defers: the reply is lost
				}
			default:
			}
			if _, err := client.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
