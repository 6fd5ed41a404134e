//go:build !linux && !wasip1

package protocol

import "github.com/panjf2000/gnet/v2"

// Elsewhere than Linux the sidecar does not stop reading connections (see
// pause_linux.go): their input is bounded by the inbound limit.
func pollerFD(gnet.Conn) (int, bool) { return 0, false }

func setReading(int, connIO, bool) error { return nil }
