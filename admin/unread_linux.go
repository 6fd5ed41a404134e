package admin

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// unreadBytes is how many bytes wait unread in c's socket (SIOCINQ); -1
// when it cannot tell, so that c is not taken for one that sent nothing.
func unreadBytes(c net.Conn) int {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	_ = rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
