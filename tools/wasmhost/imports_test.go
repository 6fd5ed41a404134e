package main

import (
	"os"
	"testing"
)

// TestImportsSocketABI reads the import section of both modules when
// WASM_PLAIN and WASM_SOCK name them (make wasm, make wasm-sock), and of a
// hand-made binary always.
func TestImportsSocketABI(t *testing.T) {
	// (import "wasi_snapshot_preview1" "sock_open" (func (type 0))), after
	// a type section.
	mod := []byte("\x00asm\x01\x00\x00\x00" + "\x01\x04\x01\x60\x00\x00" + "\x02\x24\x01" +
		"\x16wasi_snapshot_preview1" + "\x09sock_open" + "\x00\x00")
	if got, err := importsSocketABI(mod); err != nil || !got {
		t.Fatalf("hand-made module: %v, %v; want true", got, err)
	}
	mod[len(mod)-3] = 'x' // sock_opex
	if got, err := importsSocketABI(mod); err != nil || got {
		t.Fatalf("sock_opex: %v, %v; want false", got, err)
	}
	if _, err := importsSocketABI(mod[:20]); err == nil {
		t.Fatal("truncated module: no error")
	}
	for env, want := range map[string]bool{"WASM_PLAIN": false, "WASM_SOCK": true} {
		path := os.Getenv(env)
		if path == "" {
			continue
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := importsSocketABI(bin); err != nil || got != want {
			t.Fatalf("%s: %v, %v; want %v", path, got, err, want)
		}
	}
}
