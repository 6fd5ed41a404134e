package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// growModule is a module of one memory of minPages pages, exported as
// "memory", and grow(delta) = memory.grow(delta).
func growModule(minPages byte) []byte {
	return []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
		0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, // type: (i32) -> i32
		0x03, 0x02, 0x01, 0x00, // function 0 of type 0
		0x05, 0x03, 0x01, 0x00, minPages, // memory: no maximum, minPages
		0x07, 0x11, 0x02, // exports: 2
		0x04, 'g', 'r', 'o', 'w', 0x00, 0x00, // "grow": function 0
		0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, // "memory": memory 0
		0x0a, 0x08, 0x01, 0x06, 0x00, // code: 1 body, 6 bytes, no locals
		0x20, 0x00, 0x40, 0x00, 0x0b, // local.get 0; memory.grow 0; end
	}
}

// TestReservedMemory: the module's memory grows in place (wazero's own
// memory is copied to a new slice when it outgrows its capacity), up to
// -max-memory and no further; a module whose memory starts larger is
// refused before it is instantiated.
func TestReservedMemory(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	compiled, err := r.CompileModule(ctx, growModule(1))
	if err != nil {
		t.Fatal(err)
	}
	mem, err := reserveMemory(16 << 20) // 256 pages
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Free()
	if err := mem.check(compiled); err != nil {
		t.Fatal(err)
	}
	mod, err := r.InstantiateModule(experimental.WithMemoryAllocator(ctx, mem), compiled, wazero.NewModuleConfig())
	if err != nil {
		t.Fatal(err)
	}
	base := func() *byte {
		b, ok := mod.Memory().Read(0, 1)
		if !ok {
			t.Fatal("no memory")
		}
		return &b[0]
	}
	before := base()
	grow := mod.ExportedFunction("grow")
	for _, tc := range []struct{ delta, want uint64 }{
		{100, 1},         // pages before the grow
		{155, 101},       // to 256 pages, the whole reservation
		{1, 0xffff_ffff}, // past it: -1
		{0, 256},         // the size
	} {
		res, err := grow.Call(ctx, tc.delta)
		if err != nil {
			t.Fatal(err)
		}
		if uint32(res[0]) != uint32(tc.want) {
			t.Fatalf("memory.grow(%d) = %d, want %d", tc.delta, uint32(res[0]), uint32(tc.want))
		}
	}
	if got := mod.Memory().Size(); got != 16<<20 {
		t.Fatalf("memory size %d, want %d", got, 16<<20)
	}
	if base() != before {
		t.Fatal("the memory moved when it grew")
	}
	// The last page is the module's to write.
	if !mod.Memory().WriteByte(16<<20-1, 7) {
		t.Fatal("the last page is not writable")
	}

	big, err := r.CompileModule(ctx, growModule(0x7f)) // 127 pages: 7.9 MiB
	if err != nil {
		t.Fatal(err)
	}
	small, err := reserveMemory(4 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	if err := small.check(big); err == nil || !strings.Contains(err.Error(), "over -max-memory (4 MiB)") {
		t.Fatalf("a module starting at 7.9 MiB under a 4 MiB limit: %v", err)
	}
}
