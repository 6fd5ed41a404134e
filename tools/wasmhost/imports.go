package main

import (
	"encoding/binary"
	"errors"
)

// importsSocketABI reports whether a WebAssembly binary imports sock_open
// from wasi_snapshot_preview1 (the WasmEdge socket ABI), read from its
// import section: the host must choose its runtime's configuration before
// it compiles the module (see run).
func importsSocketABI(bin []byte) (bool, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return false, errors.New("not a WebAssembly module")
	}
	p := bin[8:]
	bad := errors.New("malformed WebAssembly module")
	uleb := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	name := func() (string, bool) {
		l, ok := uleb()
		if !ok || l > uint64(len(p)) {
			return "", false
		}
		s := string(p[:l])
		p = p[l:]
		return s, true
	}
	for len(p) > 0 {
		id := p[0]
		p = p[1:]
		size, ok := uleb()
		if !ok || size > uint64(len(p)) {
			return false, bad
		}
		if id != 2 { // not the import section
			p = p[size:]
			continue
		}
		p = p[:size]
		count, ok := uleb()
		if !ok {
			return false, bad
		}
		for range count {
			mod, ok1 := name()
			field, ok2 := name()
			if !ok1 || !ok2 || len(p) == 0 {
				return false, bad
			}
			kind := p[0]
			p = p[1:]
			if kind == 0 && mod == "wasi_snapshot_preview1" && field == "sock_open" {
				return true, nil
			}
			switch kind {
			case 0: // function: a type index
				_, ok = uleb()
			case 1: // table: a reference type, then limits
				if len(p) == 0 {
					return false, bad
				}
				p = p[1:]
				ok = limits(&p)
			case 2: // memory: limits
				ok = limits(&p)
			case 3: // global: a value type and mutability
				ok = len(p) >= 2
				if ok {
					p = p[2:]
				}
			default:
				ok = false
			}
			if !ok {
				return false, bad
			}
		}
		return false, nil
	}
	return false, nil
}

func limits(p *[]byte) bool {
	if len(*p) == 0 {
		return false
	}
	flag := (*p)[0]
	*p = (*p)[1:]
	for range 1 + int(flag&1) {
		_, n := binary.Uvarint(*p)
		if n <= 0 {
			return false
		}
		*p = (*p)[n:]
	}
	return true
}
