//go:build linux && !poll_opt

package transport

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"

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
// gnet keeps its epoll descriptor unexported. It used to be read by
// reflection, which a gnet release that renamed a field would have turned
// off without a word. The kernel says it instead: /proc/self/fdinfo of an
// epoll descriptor lists what it watches, one "tfd: N events: E data: D"
// line per descriptor (proc(5)). The loop's descriptor is the one that
// watches the connection's socket, with the socket's number as the data,
// as gnet registers it; anything else (no /proc, no match, two matches,
// other data: a gnet that registers differently) is "cannot pause", which
// TestReadPause and TestBackPressure fail on. It is looked for once per
// loop (Pollers), when the loop has its first connection: a scan of the
// process's descriptors, not one per connection. docs/gnet-pause.md has
// the change proposed to gnet that would make this unnecessary.

// PausesReading is set where the loop can stop reading a connection.
const PausesReading = true

// Pollers are the epoll descriptors of gnet's loops, found as connections
// open on them. Its methods run on the loops.
type Pollers struct {
	mu  sync.Mutex
	fds map[gnet.EventLoop]int
}

// PollerFD is the epoll descriptor of gc's event loop, where the sidecar
// can stop reading gc; ok is false where it cannot.
func PollerFD(l Loops, gc gnet.Conn) (fd int, ok bool) {
	g, ok := l.(gnetLoops)
	if !ok || g.pollers == nil {
		return 0, false
	}
	return g.pollers.of(gc)
}

func (p *Pollers) of(gc gnet.Conn) (int, bool) {
	el := gc.EventLoop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if fd, ok := p.fds[el]; ok {
		return fd, true
	}
	fd, err := epollWatching(gc.Fd())
	if err != nil {
		return 0, false
	}
	if p.fds == nil {
		p.fds = make(map[gnet.EventLoop]int)
	}
	p.fds[el] = fd
	return fd, true
}

// epollWatching is the one epoll descriptor of the process that watches
// sock with sock as its data.
func epollWatching(sock int) (int, error) {
	dir, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("listing descriptors: %w", err)
	}
	found := -1
	for _, e := range dir {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed since the listing
		}
		data, watches := epollData(info, sock)
		if !watches {
			continue
		}
		if data != uint64(sock) {
			return 0, fmt.Errorf("epoll %d watches %d with data %#x, not the descriptor: not gnet's default poller", fd, sock, data)
		}
		if found >= 0 {
			return 0, fmt.Errorf("epolls %d and %d both watch %d", found, fd, sock)
		}
		found = fd
	}
	if found < 0 {
		return 0, fmt.Errorf("no epoll watches %d", sock)
	}
	return found, nil
}

// epollData reads an epoll's fdinfo: whether it watches tfd, and the data
// it has for it. Lines are "tfd: %8d events: %8x data: %16llx ..." (the
// kernel's fs/eventpoll.c, ep_show_fdinfo).
func epollData(info []byte, tfd int) (data uint64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || string(f[0]) != "tfd:" || string(f[2]) != "events:" || string(f[4]) != "data:" {
			continue
		}
		if n, err := strconv.Atoi(string(f[1])); err != nil || n != tfd {
			continue
		}
		d, err := strconv.ParseUint(string(f[5]), 16, 64)
		if err != nil {
			return 0, false
		}
		return d, true
	}
	return 0, false
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
