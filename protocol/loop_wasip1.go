//go:build wasip1

package protocol

import "github.com/prepkey/prepkey/protocol/transport"

// On wasip1 gnet does not build (it needs epoll or kqueue): the portable
// transport serves every connection.
func (s *Server) startLoops() (transport.Loops, error) {
	return transport.StartPortable(s.closing.Load), nil
}
