package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero/api"
)

// TestCalls: a wrapped function is counted and still called; report names
// the functions called, most called first; a nil calls wraps nothing.
func TestCalls(t *testing.T) {
	ran := 0
	f := api.GoModuleFunc(func(context.Context, api.Module, []uint64) { ran++ })
	c := calls{}
	clock, read := c.wrap("clock_time_get", f), c.wrap("fd_read", f)
	_ = c.wrap("fd_write", f) // never called: not reported
	for range 3 {
		clock.Call(context.Background(), nil, nil)
	}
	read.Call(context.Background(), nil, nil)
	if ran != 4 {
		t.Fatalf("the wrapped function ran %d times, want 4", ran)
	}
	var b strings.Builder
	c.report(&b)
	if got, want := b.String(), "wasmhost: calls: clock_time_get=3 fd_read=1\n"; got != want {
		t.Fatalf("report %q, want %q", got, want)
	}
	var none calls
	if g := none.wrap("fd_read", f); g == nil {
		t.Fatal("a nil calls returned no function")
	}
}
