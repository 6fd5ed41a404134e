package main

// The host's sockets: the listener and the clients it accepts, for every
// module, and the WasmEdge socket ABI on wazero for the socket-capable
// module (make wasm-sock): sock_open, sock_connect and sock_getaddrinfo,
// and the functions of wasi_snapshot_preview1 that must reach the sockets
// these open. wazero's file table is internal, so the host keeps its sockets in a
// table of its own and exports, under wasi_snapshot_preview1, functions
// that serve a descriptor of that table themselves and hand every other
// descriptor to wazero's own function (a later export of a name overrides
// an earlier one). poll_oneoff waits with ppoll(2), woken by an eventfd when
// the host stops: wazero's reports a non-blocking socket ready at once, so
// Go's scheduler in the module never sleeps on its sockets.
//
// Linux only (ppoll, eventfd, accept4). The module is single-threaded and
// calls one function at a time: the table needs no lock.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"golang.org/x/sys/unix"
)

// sockBase numbers the host's sockets, far above wazero's descriptors
// (which it allocates lowest-first from the standard streams and preopens).
const sockBase = 1 << 20

// connectTimeout bounds a connect: the module's connect blocks its only
// thread (see sockConnect).
const connectTimeout = 5 * time.Second

// WASI's errno values and flags (wasi_snapshot_preview1), and WasmEdge's
// socket constants.
const (
	errnoSuccess      = 0
	errnoAfnosupport  = 5
	errnoAgain        = 6
	errnoBadf         = 8
	errnoFault        = 21
	errnoInval        = 28
	errnoIO           = 29
	errnoNoent        = 44
	errnoNotsup       = 58
	errnoTimedout     = 73
	fdflagNonblock    = 4
	filetypeSockStrm  = 6
	eventFdReadwrite  = 1 // event.flags: hangup
	wasmedgeAfInet    = 1
	wasmedgeAfInet6   = 2
	wasmedgeSockStrm  = 2
	wasmedgeProtoTCP  = 1
	subscriptionSize  = 48
	eventSize         = 32
	subscriptionClock = 0
	subscriptionRead  = 1
	subscriptionWrite = 2
)

type hostSock struct {
	fd int // the host's descriptor, always non-blocking
	// nonblock is the module's view (fd_fdstat_set_flags): a blocking
	// read, write, accept waits in ppoll.
	nonblock bool
	// drained: the last read took less than it asked for, so the socket
	// was empty then. The module's next read of a non-blocking socket is
	// answered EAGAIN without a read(2) (see fdRead), once.
	drained bool
}

// sockets is the host's socket table and wazero's functions it overrides.
type sockets struct {
	orig map[string]api.GoModuleFunction // wazero's wasi_snapshot_preview1
	defs map[string]api.FunctionDefinition
	// calls counts the module's calls (WASMHOST_COUNT); nil: no counting.
	calls calls
	// socks[n] is the module's descriptor sockBase+n, nil when closed;
	// free lists the closed numbers, reused (as a kernel reuses
	// descriptors). A slice, not a map: it is looked up at every call (a
	// map was 1 % of the host's CPU at pipeline 1).
	socks []*hostSock
	free  []int32
	wake  int // eventfd written when the host stops
	// mod is the module calling, to close when the host stops.
	mod api.Module
	// Reused by every call (the module calls one function at a time): a
	// request's calls allocate nothing.
	args   [8]uint32
	iov    [][]byte
	pfds   []unix.PollFd
	which  []int
	polled []*hostSock // which's sockets
	ev     [eventSize]byte
}

// overridden are wazero's functions the host exports its own of.
var overridden = map[string]bool{"fd_read": true, "fd_write": true, "fd_close": true, "fd_fdstat_get": true,
	"fd_fdstat_set_flags": true, "fd_filestat_get": true, "poll_oneoff": true, "sock_accept": true, "sock_shutdown": true}

// newSockets compiles wazero's WASI functions to keep them callable.
func newSockets(ctx context.Context, r wazero.Runtime, c calls) (*sockets, error) {
	orig, defs, err := wazeroWASI(ctx, r)
	if err != nil {
		return nil, err
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	s := &sockets{orig: orig, defs: defs, calls: c, wake: wake}
	for name := range overridden {
		if s.orig[name] == nil {
			return nil, fmt.Errorf("wazero exports no %s to delegate to", name)
		}
	}
	// The module is woken from ppoll when the host stops (a signal).
	context.AfterFunc(ctx, func() { _, _ = unix.Write(wake, []byte{1, 0, 0, 0, 0, 0, 0, 0}) })
	return s, nil
}

// close closes every socket left open and the eventfd.
func (s *sockets) close() {
	for _, hs := range s.socks {
		if hs != nil {
			_ = unix.Close(hs.fd)
		}
	}
	_ = unix.Close(s.wake)
}

func (s *sockets) add(fd int, nonblock bool) int32 {
	hs := &hostSock{fd: fd, nonblock: nonblock}
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		s.socks[i] = hs
		return sockBase + i
	}
	s.socks = append(s.socks, hs)
	return sockBase + int32(len(s.socks)-1)
}

// sock is the module's descriptor fd: nil if it is not the host's.
func (s *sockets) sock(fd int32) *hostSock {
	if i := fd - sockBase; i >= 0 && int(i) < len(s.socks) {
		return s.socks[i]
	}
	return nil
}

// listen opens the listening socket the module serves on and returns its
// descriptor in the module.
func (s *sockets) listen(addr string) (int32, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, err
	}
	f, err := ln.(*net.TCPListener).File() // a dup, ours to keep
	_ = ln.Close()
	if err != nil {
		return 0, err
	}
	fd, err := unix.Dup(int(f.Fd()))
	_ = f.Close()
	if err != nil {
		return 0, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return 0, err
	}
	return s.add(fd, false), nil
}

// instantiate exports wasi_snapshot_preview1: wazero's functions, then the
// overrides and the socket functions.
func (s *sockets) instantiate(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	if s.calls == nil {
		wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	} else {
		exportCounted(b, s.orig, s.defs, overridden, s.calls)
	}
	export := func(name string, params int, fn func(ctx context.Context, mod api.Module, p []uint32) uint32) {
		types := make([]api.ValueType, params)
		for i := range types {
			types[i] = api.ValueTypeI32
		}
		orig := s.orig[name]
		b.NewFunctionBuilder().WithGoModuleFunction(s.calls.wrap(name, api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			// i32 arguments may carry garbage in the upper bits.
			p := s.args[:params]
			for i := range p {
				p[i] = uint32(stack[i])
			}
			// A descriptor not in the table is wazero's.
			if orig != nil && name != "poll_oneoff" && s.sock(int32(p[0])) == nil {
				orig.Call(ctx, mod, stack)
				return
			}
			s.mod = mod
			stack[0] = uint64(fn(ctx, mod, p))
		})), types, []api.ValueType{api.ValueTypeI32}).Export(name)
	}
	export("fd_read", 4, s.fdRead)
	export("fd_write", 4, s.fdWrite)
	export("fd_close", 1, s.fdClose)
	export("fd_fdstat_get", 2, s.fdFdstatGet)
	export("fd_fdstat_set_flags", 2, s.fdFdstatSetFlags)
	export("fd_filestat_get", 2, s.fdFilestatGet)
	export("poll_oneoff", 4, s.pollOneoff)
	export("sock_accept", 3, s.sockAccept)
	export("sock_shutdown", 2, s.sockShutdown)
	export("sock_open", 3, s.sockOpen)
	export("sock_connect", 3, s.sockConnect)
	export("sock_getaddrinfo", 8, s.sockGetaddrinfo)
	_, err := b.Instantiate(ctx)
	return err
}

// errno is err as WASI numbers it (the same names as Linux's, other
// numbers).
func errno(err error) uint32 {
	var e unix.Errno
	if !errors.As(err, &e) {
		return errnoIO
	}
	if n, ok := wasiErrno[e]; ok {
		return n
	}
	return errnoIO
}

var wasiErrno = map[unix.Errno]uint32{
	unix.EACCES: 2, unix.EADDRINUSE: 3, unix.EADDRNOTAVAIL: 4, unix.EAFNOSUPPORT: 5,
	unix.EAGAIN: 6, unix.EALREADY: 7, unix.EBADF: 8, unix.ECONNABORTED: 13,
	unix.ECONNREFUSED: 14, unix.ECONNRESET: 15, unix.EFAULT: 21, unix.EHOSTUNREACH: 23,
	unix.EINPROGRESS: 26, unix.EINTR: 27, unix.EINVAL: 28, unix.EIO: 29, unix.EISCONN: 30,
	unix.EMFILE: 33, unix.ENETDOWN: 38, unix.ENETRESET: 39, unix.ENETUNREACH: 40,
	unix.ENFILE: 41, unix.ENOBUFS: 42, unix.ENOMEM: 48, unix.ENOTCONN: 53, unix.ENOTSOCK: 57,
	unix.EOPNOTSUPP: 58, unix.EPERM: 63, unix.EPIPE: 64, unix.ETIMEDOUT: 73,
}

// wait blocks until fd is ready for events or timeout (<0: none) passes.
func (s *sockets) wait(fd int, events int16, timeout time.Duration) error {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(timeout.Nanoseconds())
		ts = &t
	}
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}, {Fd: int32(s.wake), Events: unix.POLLIN}}
		n, err := unix.Ppoll(pfd, ts, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case pfd[1].Revents != 0:
			return s.exit()
		case n == 0:
			return unix.ETIMEDOUT
		}
		return nil
	}
}

// exit ends the module as wazero's proc_exit(0) does: the host is
// stopping.
func (s *sockets) exit() error {
	_ = s.mod.CloseWithExitCode(context.Background(), 0)
	panic(sys.NewExitError(0))
}

// iovecs are the module's buffers (ciovec/iovec: offset, length), in bufs'
// room.
func iovecs(bufs [][]byte, mem api.Memory, iovs, n uint32) ([][]byte, bool) {
	bufs = bufs[:0]
	for i := range n {
		off, ok1 := mem.ReadUint32Le(iovs + 8*i)
		l, ok2 := mem.ReadUint32Le(iovs + 8*i + 4)
		b, ok3 := mem.Read(off, l)
		if !ok1 || !ok2 || !ok3 {
			return nil, false
		}
		bufs = append(bufs, b)
	}
	return bufs, true
}

func (s *sockets) rw(mod api.Module, p []uint32, events int16, op func(int, [][]byte) (int, error)) uint32 {
	hs := s.sock(int32(p[0]))
	bufs, ok := iovecs(s.iov, mod.Memory(), p[1], p[2])
	if !ok {
		return errnoFault
	}
	s.iov = bufs
	for {
		n, err := op(hs.fd, bufs)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if hs.nonblock {
				return errnoAgain
			}
			if err := s.wait(hs.fd, events, -1); err != nil {
				return errno(err)
			}
			continue
		}
		if err != nil {
			return errno(err)
		}
		if events == unix.POLLIN {
			asked := 0
			for _, b := range bufs {
				asked += len(b)
			}
			hs.drained = n > 0 && n < asked
		}
		if !mod.Memory().WriteUint32Le(p[3], uint32(n)) {
			return errnoFault
		}
		return errnoSuccess
	}
}

// fdRead and fdWrite make one read(2) or write(2) of a single buffer (Go's
// runtime passes one), readv(2) or writev(2) of more.
//
// Go reads a socket until it answers EAGAIN, and only then waits for it in
// poll_oneoff: at pipeline 1 every request's read was followed by a second
// read(2) that found nothing (the client waits for the reply). A read that
// took less than it asked for emptied the socket, so the next one is
// answered EAGAIN here without the system call: Go then polls, and ppoll
// finds at once whatever arrived meanwhile. 3-4 µs of the module's CPU per
// request of 34-45 (docs/wasm.md, issue 34).
func (s *sockets) fdRead(_ context.Context, mod api.Module, p []uint32) uint32 {
	if hs := s.sock(int32(p[0])); hs.nonblock && hs.drained {
		hs.drained = false
		return errnoAgain
	}
	return s.rw(mod, p, unix.POLLIN, func(fd int, bufs [][]byte) (int, error) {
		if len(bufs) == 1 {
			return unix.Read(fd, bufs[0])
		}
		return unix.Readv(fd, bufs)
	})
}

func (s *sockets) fdWrite(_ context.Context, mod api.Module, p []uint32) uint32 {
	return s.rw(mod, p, unix.POLLOUT, func(fd int, bufs [][]byte) (int, error) {
		if len(bufs) == 1 {
			return unix.Write(fd, bufs[0])
		}
		return unix.Writev(fd, bufs)
	})
}

func (s *sockets) fdClose(_ context.Context, _ api.Module, p []uint32) uint32 {
	fd := int32(p[0])
	err := unix.Close(s.sock(fd).fd)
	s.socks[fd-sockBase] = nil
	s.free = append(s.free, fd-sockBase)
	if err != nil {
		return errno(err)
	}
	return errnoSuccess
}

// fdFdstatGet: a socket stream with every right; non-blocking as the module
// set it (os.NewFile polls a non-blocking descriptor in Go's netpoller).
func (s *sockets) fdFdstatGet(_ context.Context, mod api.Module, p []uint32) uint32 {
	var st [24]byte
	st[0] = filetypeSockStrm
	if s.sock(int32(p[0])).nonblock {
		binary.LittleEndian.PutUint16(st[2:], fdflagNonblock)
	}
	binary.LittleEndian.PutUint64(st[8:], ^uint64(0))
	binary.LittleEndian.PutUint64(st[16:], ^uint64(0))
	if !mod.Memory().Write(p[1], st[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func (s *sockets) fdFdstatSetFlags(_ context.Context, _ api.Module, p []uint32) uint32 {
	if p[1]&^fdflagNonblock != 0 {
		return errnoInval
	}
	s.sock(int32(p[0])).nonblock = p[1]&fdflagNonblock != 0
	return errnoSuccess
}

func (s *sockets) fdFilestatGet(_ context.Context, mod api.Module, p []uint32) uint32 {
	var st [64]byte
	st[16] = filetypeSockStrm
	if !mod.Memory().Write(p[1], st[:]) {
		return errnoFault
	}
	return errnoSuccess
}

func (s *sockets) sockAccept(_ context.Context, mod api.Module, p []uint32) uint32 {
	hs := s.sock(int32(p[0]))
	for {
		nfd, _, err := unix.Accept4(hs.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ECONNABORTED) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) && !hs.nonblock {
			if err := s.wait(hs.fd, unix.POLLIN, -1); err != nil {
				return errno(err)
			}
			continue
		}
		if err != nil {
			return errno(err)
		}
		n := s.add(nfd, p[1]&fdflagNonblock != 0)
		if !mod.Memory().WriteUint32Le(p[2], uint32(n)) {
			return errnoFault
		}
		return errnoSuccess
	}
}

func (s *sockets) sockShutdown(_ context.Context, _ api.Module, p []uint32) uint32 {
	how := map[uint32]int{1: unix.SHUT_RD, 2: unix.SHUT_WR, 3: unix.SHUT_RDWR}
	h, ok := how[p[1]]
	if !ok {
		return errnoInval
	}
	if err := unix.Shutdown(s.sock(int32(p[0])).fd, h); err != nil {
		return errno(err)
	}
	return errnoSuccess
}

// sockOpen(af, socktype, *fd): a TCP socket, blocking in the module's view
// until it sets it non-blocking.
func (s *sockets) sockOpen(_ context.Context, mod api.Module, p []uint32) uint32 {
	family := map[uint32]int{wasmedgeAfInet: unix.AF_INET, wasmedgeAfInet6: unix.AF_INET6}
	af, ok := family[p[0]]
	if !ok {
		return errnoAfnosupport
	}
	if p[1] != wasmedgeSockStrm {
		return errnoNotsup // TCP only
	}
	fd, err := unix.Socket(af, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return errno(err)
	}
	n := s.add(fd, false)
	if !mod.Memory().WriteUint32Le(p[2], uint32(n)) {
		return errnoFault
	}
	return errnoSuccess
}

// sockConnect(fd, *{buf, len}, port): the address is the IP's 4 or 16
// bytes. A module that set the socket non-blocking gets EINPROGRESS; a
// blocking one waits here, at most connectTimeout (the module's one thread
// waits with it: prepkey's dialer connects blocking, as a connect to a
// reachable server is quick and one that is refused returns at once).
func (s *sockets) sockConnect(_ context.Context, mod api.Module, p []uint32) uint32 {
	hs := s.sock(int32(p[0]))
	mem := mod.Memory()
	off, ok1 := mem.ReadUint32Le(p[1])
	l, ok2 := mem.ReadUint32Le(p[1] + 4)
	raw, ok3 := mem.Read(off, l)
	if !ok1 || !ok2 || !ok3 {
		return errnoFault
	}
	var sa unix.Sockaddr
	switch len(raw) {
	case 4:
		sa = &unix.SockaddrInet4{Port: int(p[2]), Addr: [4]byte(raw)}
	case 16:
		sa = &unix.SockaddrInet6{Port: int(p[2]), Addr: [16]byte(raw)}
	default:
		return errnoInval
	}
	err := unix.Connect(hs.fd, sa)
	if !errors.Is(err, unix.EINPROGRESS) || hs.nonblock {
		return errno0(err)
	}
	if err := s.wait(hs.fd, unix.POLLOUT, connectTimeout); err != nil {
		return errno(err)
	}
	soerr, err := unix.GetsockoptInt(hs.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return errno(err)
	}
	return errno0(unix.Errno(soerr))
}

func errno0(err error) uint32 {
	if err == nil || err == unix.Errno(0) {
		return errnoSuccess
	}
	return errno(err)
}

// sockGetaddrinfo(node, nodeLen, service, serviceLen, hints, *res,
// maxResLen, *resLen): the module lays out a list of addrinfo (28 bytes:
// flags u16, family u8, socktype u8, protocol u32, addrlen u32, addr
// *sockaddr, canonname, canonnamelen, next) each pointing at a sockaddr
// (family u32, data_len u32, data *: port big-endian, then the address); the
// host fills it with the host resolver's answer, IPv4 first.
func (s *sockets) sockGetaddrinfo(ctx context.Context, mod api.Module, p []uint32) uint32 {
	mem := mod.Memory()
	node, ok := mem.Read(p[0], p[1])
	if !ok {
		return errnoFault
	}
	port := 0
	if p[3] > 0 {
		svc, ok := mem.Read(p[2], p[3])
		if !ok {
			return errnoFault
		}
		port, _ = strconv.Atoi(string(trimNUL(svc)))
	}
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", string(trimNUL(node)))
	if err != nil {
		return errnoNoent
	}
	slices.SortStableFunc(ips, func(a, b netip.Addr) int { return btoi(b.Is4()) - btoi(a.Is4()) })
	cur, ok := mem.ReadUint32Le(p[5])
	if !ok {
		return errnoFault
	}
	var n uint32
	for _, ip := range ips {
		if cur == 0 || n >= p[6] {
			break
		}
		ip = ip.Unmap()
		fam := uint32(wasmedgeAfInet)
		if ip.Is6() {
			fam = wasmedgeAfInet6
		}
		addr, ok1 := mem.ReadUint32Le(cur + 12)
		dataLen, ok2 := mem.ReadUint32Le(addr + 4)
		dataPtr, ok3 := mem.ReadUint32Le(addr + 8)
		if !ok1 || !ok2 || !ok3 {
			return errnoFault
		}
		data := binary.BigEndian.AppendUint16(nil, uint16(port))
		data = append(data, ip.AsSlice()...)
		if int(dataLen) < len(data) {
			continue
		}
		if !mem.WriteByte(cur+2, byte(fam)) || !mem.WriteByte(cur+3, wasmedgeSockStrm) ||
			!mem.WriteUint32Le(cur+4, wasmedgeProtoTCP) || !mem.WriteUint32Le(addr, fam) || !mem.Write(dataPtr, data) {
			return errnoFault
		}
		n++
		cur, _ = mem.ReadUint32Le(cur + 24)
	}
	if !mem.WriteUint32Le(p[7], n) {
		return errnoFault
	}
	return errnoSuccess
}

func trimNUL(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// pollOneoff waits with ppoll on the host's sockets and the stop eventfd.
// A subscription on one of wazero's descriptors, or an absolute clock,
// hands the whole call to wazero's poll_oneoff (the socket module has no
// such descriptor: its sockets are all the host's).
func (s *sockets) pollOneoff(ctx context.Context, mod api.Module, p []uint32) uint32 {
	in, out, nsubs := p[0], p[1], p[2]
	mem := mod.Memory()
	subs, ok := mem.Read(in, nsubs*subscriptionSize)
	if !ok || nsubs == 0 {
		return errnoInval
	}
	timeout := int64(-1)
	clock := -1
	pfds, which, polled := s.pfds[:0], s.which[:0], s.polled[:0]
	for i := range int(nsubs) {
		sub := subs[i*subscriptionSize : (i+1)*subscriptionSize]
		switch sub[8] {
		case subscriptionClock:
			if binary.LittleEndian.Uint16(sub[40:])&1 != 0 { // abstime
				return s.delegatePoll(ctx, mod, p)
			}
			if t := int64(binary.LittleEndian.Uint64(sub[24:])); timeout < 0 || t < timeout {
				timeout, clock = t, i
			}
		case subscriptionRead, subscriptionWrite:
			hs := s.sock(int32(binary.LittleEndian.Uint32(sub[16:])))
			if hs == nil {
				return s.delegatePoll(ctx, mod, p)
			}
			ev := int16(unix.POLLIN)
			if sub[8] == subscriptionWrite {
				ev = unix.POLLOUT
			}
			pfds = append(pfds, unix.PollFd{Fd: int32(hs.fd), Events: ev})
			which = append(which, i)
			polled = append(polled, hs)
		default:
			return errnoInval
		}
	}
	pfds = append(pfds, unix.PollFd{Fd: int32(s.wake), Events: unix.POLLIN})
	s.pfds, s.which, s.polled = pfds, which, polled
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(timeout)
		ts = &t
	}
	n, err := unix.Ppoll(pfds, ts, nil)
	if errors.Is(err, unix.EINTR) {
		n, err = 0, nil // woken early: as a timeout, the module polls again
	}
	if err != nil {
		return errno(err)
	}
	if pfds[len(pfds)-1].Revents != 0 {
		_ = s.exit()
	}
	var events uint32
	ev := s.ev[:]
	put := func(sub []byte, flags uint16) bool {
		clear(ev)
		copy(ev[0:8], sub[0:8]) // userdata
		ev[10] = sub[8]         // type
		binary.LittleEndian.PutUint16(ev[24:], flags)
		ok := mem.Write(out+events*eventSize, ev)
		events++
		return ok
	}
	if n > 0 {
		for j, pfd := range pfds[:len(which)] {
			if pfd.Revents == 0 {
				continue
			}
			var flags uint16
			if pfd.Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				flags = eventFdReadwrite
			}
			if pfd.Revents&unix.POLLIN != 0 {
				polled[j].drained = false // read it
			}
			i := which[j]
			if !put(subs[i*subscriptionSize:(i+1)*subscriptionSize], flags) {
				return errnoFault
			}
		}
	}
	if events == 0 && clock >= 0 {
		if !put(subs[clock*subscriptionSize:(clock+1)*subscriptionSize], 0) {
			return errnoFault
		}
	}
	if !mem.WriteUint32Le(p[3], events) {
		return errnoFault
	}
	return errnoSuccess
}

func (s *sockets) delegatePoll(ctx context.Context, mod api.Module, p []uint32) uint32 {
	stack := []uint64{uint64(p[0]), uint64(p[1]), uint64(p[2]), uint64(p[3])}
	s.orig["poll_oneoff"].Call(ctx, mod, stack)
	return uint32(stack[0])
}
