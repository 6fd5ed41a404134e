//go:build linux && !poll_opt

package transport

import (
	"reflect"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// gnet has no call to stop reading a connection: it reads whatever the
// socket holds into the connection's input buffer, whether or not the
// handler can take it. A client that writes a million commands at once
// then has all of them (55 MB) in the sidecar's memory while they wait.
// So the sidecar changes the connection's epoll registration itself, as
// gnet's own poller does (the same events, the descriptor as the event's
// data: gnet's default, non-"ultimate", poller on Linux): without EPOLLIN
// the loop does not read it, the kernel's buffer fills, and TCP makes the
// client wait, as any back-pressured server does.
//
// Only that poller: under gnet's poll_opt build tag (its "ultimate"
// poller) the event's data is a pointer gnet reads back, and a registration
// written here would crash the loop; that build uses pause_other.go and
// does not stop reading (the build constraint above, not a check at run
// time, keeps the two apart).
//
// gnet keeps its epoll descriptor unexported; it is read once per
// connection by reflection. If gnet's layout changes, PollerFD reports
// false and connections are read as before, bounded by the inbound limit
// (close), which TestReadPause catches.

// PausesReading is set where the loop can stop reading a connection.
const PausesReading = true

// PollerFD is the epoll descriptor of gc's event loop.
func PollerFD(gc gnet.Conn) (fd int, ok bool) {
	defer func() {
		if recover() != nil {
			fd, ok = 0, false
		}
	}()
	v := reflect.ValueOf(gc)
	if v.Kind() != reflect.Pointer {
		return 0, false
	}
	loop := v.Elem().FieldByName("loop")
	if loop.Kind() != reflect.Pointer || loop.IsNil() {
		return 0, false
	}
	poller := loop.Elem().FieldByName("poller")
	if poller.Kind() != reflect.Pointer || poller.IsNil() {
		return 0, false
	}
	f := poller.Elem().FieldByName("fd")
	if f.Kind() != reflect.Int {
		return 0, false
	}
	return int(f.Int()), true
}

// gnet's ReadEvents and WriteEvents.
const (
	readEvents  = unix.EPOLLIN | unix.EPOLLPRI
	writeEvents = unix.EPOLLOUT
)

// SetReading registers gc for reads (and for writes while gnet has output
// to send) or, with on false, for writes only or nothing. Errors and
// hang-ups are reported whatever is registered, so a client that goes away
// is still closed.
func SetReading(epfd int, c IO, on bool) error {
	gc := c.(gnet.Conn) // only gnet's connections have an epoll descriptor
	var ev uint32
	if on {
		ev = readEvents
	}
	if gc.OutboundBuffered() > 0 {
		ev |= writeEvents
	}
	return unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, gc.Fd(), &unix.EpollEvent{Fd: int32(gc.Fd()), Events: ev})
}
