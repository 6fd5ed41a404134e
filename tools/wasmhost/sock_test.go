package main

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/tetratelabs/wazero/experimental/wazerotest"
	"golang.org/x/sys/unix"
)

// TestReadAfterShortRead: a read of a non-blocking socket that took less
// than it asked for makes the next read answer EAGAIN without reading (Go
// then polls; at pipeline 1 that read always found nothing); what arrived
// meanwhile is read after that, and a poll that finds the socket readable
// has it read at once.
func TestReadAfterShortRead(t *testing.T) {
	ctx := context.Background()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	peer := pair[1]
	defer unix.Close(peer)
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	s := &sockets{wake: wake}
	defer s.close()
	fd := s.add(pair[0], true)

	mod := wazerotest.NewModule(wazerotest.NewMemory(1 << 16))
	mem := mod.Memory()
	// The module's buffers: an iovec at 0 for 16 bytes at 64, the count
	// read at 8.
	const iov, nread, buf = 0, 8, 64
	mem.WriteUint32Le(iov, buf)
	mem.WriteUint32Le(iov+4, 16)
	read := func() (uint32, string) {
		errno := s.fdRead(ctx, mod, []uint32{uint32(fd), iov, 1, nread})
		n, _ := mem.ReadUint32Le(nread)
		b, _ := mem.Read(buf, n)
		mem.WriteUint32Le(nread, 0)
		return errno, string(b)
	}
	send := func(msg string) {
		if _, err := unix.Write(peer, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}

	send("hello")
	if errno, got := read(); errno != errnoSuccess || got != "hello" {
		t.Fatalf("first read: errno %d, %q", errno, got)
	}
	send("world") // arrives after the short read
	if errno, got := read(); errno != errnoAgain || got != "" {
		t.Fatalf("read after a short read: errno %d, %q; want EAGAIN", errno, got)
	}
	if errno, got := read(); errno != errnoSuccess || got != "world" {
		t.Fatalf("read after EAGAIN: errno %d, %q", errno, got)
	}
	if errno, got := read(); errno != errnoAgain || got != "" {
		t.Fatalf("read after a short read: errno %d, %q; want EAGAIN", errno, got)
	}
	// Now really empty: EAGAIN from read(2).
	if errno, got := read(); errno != errnoAgain || got != "" {
		t.Fatalf("read of an empty socket: errno %d, %q; want EAGAIN", errno, got)
	}

	// A full read leaves the next one to read(2).
	send("0123456789abcdefXY")
	if errno, got := read(); errno != errnoSuccess || got != "0123456789abcdef" {
		t.Fatalf("full read: errno %d, %q", errno, got)
	}
	if errno, got := read(); errno != errnoSuccess || got != "XY" {
		t.Fatalf("read after a full read: errno %d, %q", errno, got)
	}

	// After a short read, a poll that reports the socket readable has the
	// next read read it.
	send("again")
	const sub, out, nevents = 128, 256, 16
	var subscription [subscriptionSize]byte
	binary.LittleEndian.PutUint64(subscription[0:], 42) // userdata
	subscription[8] = subscriptionRead
	binary.LittleEndian.PutUint32(subscription[16:], uint32(fd))
	mem.Write(sub, subscription[:])
	if errno := s.pollOneoff(ctx, mod, []uint32{sub, out, 1, nevents}); errno != errnoSuccess {
		t.Fatalf("poll_oneoff: errno %d", errno)
	}
	if n, _ := mem.ReadUint32Le(nevents); n != 1 {
		t.Fatalf("poll_oneoff: %d events, want 1", n)
	}
	if userdata, _ := mem.ReadUint64Le(out); userdata != 42 {
		t.Fatalf("poll_oneoff: event of %d, want 42", userdata)
	}
	if errno, got := read(); errno != errnoSuccess || got != "again" {
		t.Fatalf("read after a poll: errno %d, %q", errno, got)
	}
}

// TestSocketTable: descriptors are numbered from sockBase, a closed one is
// no longer the host's (wazero's function would get it) and its number is
// given to the next socket.
func TestSocketTable(t *testing.T) {
	var s sockets
	open := func() int {
		fd, err := unix.Eventfd(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	a, b := s.add(open(), false), s.add(open(), true)
	if a != sockBase || b != sockBase+1 {
		t.Fatalf("descriptors %d, %d; want %d, %d", a, b, sockBase, sockBase+1)
	}
	if s.sock(a) == nil || !s.sock(b).nonblock || s.sock(sockBase+2) != nil || s.sock(3) != nil {
		t.Fatal("the table does not hold what was added, or holds more")
	}
	if errno := s.fdClose(context.Background(), nil, []uint32{uint32(a)}); errno != errnoSuccess {
		t.Fatalf("fd_close: errno %d", errno)
	}
	if s.sock(a) != nil {
		t.Fatal("a closed descriptor is still the host's")
	}
	if c := s.add(open(), false); c != a {
		t.Fatalf("the next socket is %d, want the closed %d", c, a)
	}
	s.wake = open()
	s.close()
}
