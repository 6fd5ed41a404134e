package protocol

import (
	"fmt"
	"testing"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/protocol/transport"
)

// TestDriveWireWithoutWire: a store whose opener says DriveWire, served
// with no Config.Wire (the conformance suite's server, the WebAssembly
// build), is driven DriveBatch: the runs of several clients go to
// Handler.Batch together.
func TestDriveWireWithoutWire(t *testing.T) {
	h := &echoHandler{}
	srv := New(Config{Drive: backend.DriveWire}, h, readyPinger{})
	if srv.drive != backend.DriveBatch {
		t.Fatalf("drive %v, want %v", srv.drive, backend.DriveBatch)
	}
	addr := serve(t, Config{Drive: backend.DriveWire}, h)
	c := dialLines(t, addr)
	c.send(echoReq(1) + echoReq(2) + echoReq(3))
	c.expect(":1\r\n")
	c.expect(":2\r\n")
	c.expect(":3\r\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.sizes) != 1 || h.sizes[0] != 3 {
		t.Fatalf("Handler.Batch calls of %v commands, want one of 3", h.sizes)
	}
}

// fakeLoop is a loop that runs nothing: driverFor only keys its drivers by
// it.
type fakeLoop struct{ _ int }

func (*fakeLoop) Later(func()) error     { return nil }
func (*fakeLoop) CloseConn(transport.IO) {}

// TestDriverFor: each Drive gets its driver, one per loop; the portable
// transport (no loop) drives a store that batches a run at a time, as
// DriveCalls does, maxCallCmds commands per store call.
func TestDriverFor(t *testing.T) {
	loop := &fakeLoop{}
	for _, tc := range []struct {
		h       *echoHandler
		driver  string
		perCall int // on the portable transport
	}{
		{&echoHandler{inline: true}, "protocol.inlineDriver", 0},
		{&echoHandler{batches: true}, "*protocol.batchDriver", maxCallCmds},
		{&echoHandler{}, "*protocol.callsDriver", 1},
	} {
		srv := New(Config{Drive: tc.h.Drive()}, tc.h, readyPinger{})
		d := srv.driverFor(loop)
		if got := fmt.Sprintf("%T", d); got != tc.driver {
			t.Errorf("%v: driver %s, want %s", srv.drive, got, tc.driver)
		}
		if srv.driverFor(loop) != d {
			t.Errorf("%v: a second driver for the same loop", srv.drive)
		}
		switch p := srv.driverFor(nil).(type) {
		case inlineDriver:
		case *callsDriver:
			if p.perCall != tc.perCall {
				t.Errorf("%v, portable: %d commands per store call, want %d", srv.drive, p.perCall, tc.perCall)
			}
		default:
			t.Errorf("%v, portable: driver %T", srv.drive, p)
		}
		d.close()
	}
}
