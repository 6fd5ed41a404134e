//go:build wasip1

package protocol

import "github.com/prepkey/prepkey/protocol/transport"

// On wasip1 gnet does not build (it needs epoll or kqueue): the portable
// transport serves every connection.
func (s *Server) startLoops() (transport.Loops, error) {
	return transport.StartPortable(s.closing.Load), nil
}

// newLink: a loop's own connection to a store (package upstream) needs
// gnet. On wasip1 no store is reached so (WASI preview 1 cannot connect),
// and the portable transport has no loop driver to hold one.
func newLink(*Server, transport.Loop) link { return nil }
