//go:build (!linux || poll_opt) && !wasip1

package transport

import "github.com/panjf2000/gnet/v2"

// Elsewhere than Linux, and on Linux under gnet's poll_opt tag (whose
// poller reads the epoll event's data as a pointer), the sidecar does not
// stop reading connections (see pause_linux.go): their input is bounded by
// the inbound limit.
const PausesReading = false

// Pollers: none to find.
type Pollers struct{}

func PollerFD(Loops, gnet.Conn) (int, bool) { return 0, false }

func SetReading(int, IO, bool) error { return nil }
