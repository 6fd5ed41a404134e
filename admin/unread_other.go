//go:build !linux

package admin

import "net"

// unreadBytes cannot tell here: a connection that sent nothing keeps its
// place until ReadHeaderTimeout; idle kept-alive ones still give theirs.
func unreadBytes(net.Conn) int { return -1 }
