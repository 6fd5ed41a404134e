package main

import (
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// maxModuleMemory is a wasm32 memory's largest size: 65536 pages of 64 KiB.
const maxModuleMemory = 4 << 30

// reservedMemory backs the module's linear memory with one mapping of its
// whole limit, reserved up front and given pages by the kernel only as
// the module touches them. wazero's own memory is a Go slice that every
// memory.grow past its capacity copies into a larger one: the module's Go
// heap grows a few MiB at a time, so under load the host copied hundreds
// of MiB, and each new slice, counted in the host's Go heap, started the
// host's garbage collector, whose stop of the module's goroutine (running
// machine code it cannot preempt) spins for the length of a mark phase
// (issue 34: about a tenth of the host's CPU at pipeline 1, in perf). Here
// a grow moves nothing and the host's heap does not see the memory.
type reservedMemory struct {
	mem  []byte // the whole reservation
	used bool   // handed to the module: a module has one memory
}

// reserveMemory maps limit bytes for the module's memory: the host's
// -max-memory, or all a wasm32 memory can hold.
func reserveMemory(limit uint64) (*reservedMemory, error) {
	if limit == 0 || limit > maxModuleMemory {
		limit = maxModuleMemory
	}
	// MAP_NORESERVE: the reservation is address space, not a claim on
	// memory or swap; a page exists once the module writes it.
	mem, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("reserving %d MiB for the module's memory: %w", limit>>20, err)
	}
	return &reservedMemory{mem: mem}, nil
}

// check refuses a module whose memory starts larger than the reservation
// (wazero would panic instantiating it), or that has more than one memory.
func (m *reservedMemory) check(compiled wazero.CompiledModule) error {
	mems := compiled.ExportedMemories()
	if len(mems) > 1 || len(compiled.ImportedMemories()) > 0 {
		return errors.New("the module has more than one memory, or imports one")
	}
	for _, def := range mems {
		if need := uint64(def.Min()) << 16; need > uint64(len(m.mem)) {
			return fmt.Errorf("the module's memory starts at %d MiB, over -max-memory (%d MiB)", need>>20, len(m.mem)>>20)
		}
	}
	return nil
}

// Allocate implements experimental.MemoryAllocator: the reservation, once.
func (m *reservedMemory) Allocate(_, _ uint64) experimental.LinearMemory {
	if m.used {
		panic("wasmhost: a second memory allocated from one reservation")
	}
	m.used = true
	return m
}

// Reallocate returns the first size bytes; nil (memory.grow fails, the
// module's allocator reports out of memory) past the reservation. wazero
// asks no more than the module's own maximum.
func (m *reservedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.mem)) {
		return nil
	}
	return m.mem[:size:size]
}

// Free unmaps the memory; wazero calls it when the module is closed.
func (m *reservedMemory) Free() {
	if m.mem != nil {
		_ = unix.Munmap(m.mem)
		m.mem = nil
	}
}
