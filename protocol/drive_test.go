package protocol

import (
	"testing"

	"github.com/prepkey/prepkey/backend"
)

// TestDriveWireWithoutWire: a store whose opener says DriveWire, served
// with no Config.Wire (the conformance suite's server, the WebAssembly
// build), is driven DriveBatch (scheduler.New; package scheduler's test of
// the same name): the runs of several clients go to Handler.Batch
// together.
func TestDriveWireWithoutWire(t *testing.T) {
	h := &echoHandler{}
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
