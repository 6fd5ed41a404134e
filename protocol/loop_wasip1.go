//go:build wasip1

package protocol

import (
	"context"
	"net"
)

// On wasip1 gnet does not build (it needs epoll or kqueue): the portable
// transport serves every connection.
func (s *Server) startLoops() (loops, error) { return newPortableLoops(s), nil }

// upstream is a loop's own connection to a Wire backend (upstream.go). On
// wasip1 no backend has one (WASI preview 1 cannot connect), and the
// portable transport has no batcher to hold one: these are never called
// with a Wire.
type upstream struct{}

func newUpstream(*Server, Wire, connLoop) *upstream { return nil }
func (*upstream) ready() bool                       { return false }
func (*upstream) send([]*conn)                      {}
func (*upstream) close()                            {}

// setReading: no epoll; the portable transport stops reading a connection
// itself (portable.go).
func setReading(int, connIO, bool) error { return nil }

// cpuSeconds: WASI has no getrusage; INFO shows 0.
func cpuSeconds() (user, sys float64) { return 0, 0 }

// Wire is a backend reached over a loop's own connection (upstream.go).
// On wasip1 there is none: Config.Wire stays nil.
type Wire interface {
	Dial(ctx context.Context) (net.Conn, error)
}
