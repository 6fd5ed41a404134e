//go:build wasip1

// Package wasisock dials TCP from a WebAssembly module (GOOS=wasip1) on the
// WasmEdge socket ABI: sock_open, sock_connect and sock_getaddrinfo, imported
// from the wasi_snapshot_preview1 module. WASI preview 1 itself has no
// connect; WasmEdge implements these functions natively, and prepkey's own
// host (tools/wasmhost) implements them on wazero (docs/wasm.md).
//
// A dialled socket is handed to Go as a file (os.NewFile + net.FileConn),
// non-blocking, so that Go's runtime waits on it in its netpoller
// (poll_oneoff) like on any other socket: a goroutine reading Redis does not
// hold the module's one thread.
//
// The layouts are WasmEdge's (thirdparty/wasi/api.hpp in WasmEdge), as the
// dispatchrun/net project documents them; this is a small TCP-only subset.
package wasisock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// The ABI's constants (WasmEdge's numbering, not Linux's).
const (
	afInet          = 1
	afInet6         = 2
	sockStream      = 2
	ipprotoTCP      = 1
	maxAddrInfo     = 8
	errnoInProgress = 26 // WASI's EINPROGRESS
)

//go:wasmimport wasi_snapshot_preview1 sock_open
//go:noescape
func sockOpen(af int32, socktype int32, fd unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_connect
//go:noescape
func sockConnect(fd int32, addr unsafe.Pointer, port uint32) uint32

//go:wasmimport wasi_snapshot_preview1 sock_getaddrinfo
//go:noescape
func sockGetaddrinfo(node unsafe.Pointer, nodeLen uint32, service unsafe.Pointer, serviceLen uint32, hints unsafe.Pointer, res unsafe.Pointer, maxResLen uint32, resLen unsafe.Pointer) uint32

// addressBuffer is sock_connect's address: the IP's 4 or 16 bytes.
type addressBuffer struct {
	buf    uint32
	bufLen uint32
}

// addrInfo and sockAddr are sock_getaddrinfo's results, laid out by the
// caller and filled in by the host: a list linked by next.
type addrInfo struct {
	flags        uint16
	family       uint8
	socktype     uint8
	protocol     uint32
	addrlen      uint32
	addr         uint32 // *sockAddr
	canonname    uint32
	canonnameLen uint32
	next         uint32 // *addrInfo
}

type sockAddr struct {
	family  uint32
	dataLen uint32
	data    uint32 // port (big-endian) then the address
	_       [4]byte
}

type result struct {
	info addrInfo
	addr sockAddr
	data [26]byte
	name [30]byte
}

// Dial connects to address ("host:port") over TCP, trying each address the
// host resolves in turn. The connect itself is the host's (tools/wasmhost
// bounds it by its own timeout); ctx is checked between attempts.
func Dial(ctx context.Context, address string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("dial %s: bad port %q", address, portStr)
	}
	ips, err := lookup(host)
	if err != nil {
		return nil, fmt.Errorf("dial %s: lookup %s: %w", address, host, err)
	}
	var errs []error
	for _, ip := range ips {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := dialIP(ip, uint16(port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, fmt.Errorf("dial tcp %s: %w", netip.AddrPortFrom(ip, uint16(port)), err))
	}
	return nil, errors.Join(errs...)
}

func dialIP(ip netip.Addr, port uint16) (net.Conn, error) {
	af := int32(afInet6)
	if ip.Is4() || ip.Is4In6() {
		ip, af = ip.Unmap(), afInet
	}
	var fd int32
	if errno := sockOpen(af, sockStream, unsafe.Pointer(&fd)); errno != 0 {
		return nil, fmt.Errorf("sock_open: %w", syscall.Errno(errno))
	}
	raw := ip.AsSlice()
	buf := addressBuffer{buf: uint32(uintptr(unsafe.Pointer(&raw[0]))), bufLen: uint32(len(raw))}
	errno := sockConnect(fd, unsafe.Pointer(&buf), uint32(port))
	runtime.KeepAlive(raw)
	if errno != 0 && errno != errnoInProgress {
		syscall.Close(int(fd))
		return nil, syscall.Errno(errno)
	}
	// Non-blocking, so that os.NewFile registers it with Go's netpoller.
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, fmt.Errorf("set non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(fd), "tcp:"+netip.AddrPortFrom(ip, port).String())
	defer f.Close() // the conn holds its own reference
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// lookup returns host's addresses: an IP literal as is, a name through the
// host's resolver (sock_getaddrinfo: a module has no DNS of its own).
func lookup(host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{ip}, nil
	}
	if host == "" {
		return nil, errors.New("no host")
	}
	node := append([]byte(host), 0) // WasmEdge reads C strings
	hints := addrInfo{socktype: sockStream, protocol: ipprotoTCP}
	var res [maxAddrInfo]result
	for i := range res {
		r := &res[i]
		r.addr.dataLen = uint32(len(r.data))
		r.addr.data = uint32(uintptr(unsafe.Pointer(&r.data)))
		r.info.addrlen = uint32(unsafe.Sizeof(r.addr))
		r.info.addr = uint32(uintptr(unsafe.Pointer(&r.addr)))
		r.info.canonname = uint32(uintptr(unsafe.Pointer(&r.name)))
		r.info.canonnameLen = uint32(len(r.name))
		if i > 0 {
			res[i-1].info.next = uint32(uintptr(unsafe.Pointer(&r.info)))
		}
	}
	first := uint32(uintptr(unsafe.Pointer(&res[0].info)))
	var n uint32
	errno := sockGetaddrinfo(unsafe.Pointer(&node[0]), uint32(len(node)), nil, 0,
		unsafe.Pointer(&hints), unsafe.Pointer(&first), maxAddrInfo, unsafe.Pointer(&n))
	runtime.KeepAlive(node)
	runtime.KeepAlive(&res)
	if errno != 0 {
		return nil, syscall.Errno(errno)
	}
	var ips []netip.Addr
	for _, r := range res[:min(n, maxAddrInfo)] {
		switch r.addr.family {
		case afInet:
			ips = append(ips, netip.AddrFrom4([4]byte(r.data[2:6])))
		case afInet6:
			ips = append(ips, netip.AddrFrom16([16]byte(r.data[2:18])))
		}
	}
	if len(ips) == 0 {
		return nil, errors.New("no address")
	}
	return ips, nil
}
