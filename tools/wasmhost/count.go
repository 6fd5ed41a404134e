package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// calls counts the module's calls of each wasi_snapshot_preview1 function,
// when WASMHOST_COUNT is set: every call is a trip out of the module's
// machine code, and the ones made per request bound its speed (issue 34).
// The counts are printed when the module ends. A nil calls counts nothing
// and costs nothing.
type calls map[string]*atomic.Uint64

// wrap returns f counted under name.
func (c calls) wrap(name string, f api.GoModuleFunction) api.GoModuleFunction {
	if c == nil {
		return f
	}
	n := c[name]
	if n == nil {
		n = new(atomic.Uint64)
		c[name] = n
	}
	return api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
		n.Add(1)
		f.Call(ctx, mod, stack)
	})
}

// report writes the functions called, most called first, on one line.
func (c calls) report(w io.Writer) {
	type nc struct {
		name string
		n    uint64
	}
	var all []nc
	for name, n := range c {
		if v := n.Load(); v > 0 {
			all = append(all, nc{name, v})
		}
	}
	slices.SortFunc(all, func(a, b nc) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.name, b.name)) })
	var b strings.Builder
	b.WriteString("wasmhost: calls:")
	for _, e := range all {
		fmt.Fprintf(&b, " %s=%d", e.name, e.n)
	}
	fmt.Fprintln(w, b.String())
}

// wazeroWASI compiles wazero's wasi_snapshot_preview1 to keep its
// functions callable: the socket host delegates to them, the counter wraps
// them.
func wazeroWASI(ctx context.Context, r wazero.Runtime) (map[string]api.GoModuleFunction, map[string]api.FunctionDefinition, error) {
	compiled, err := wasi_snapshot_preview1.NewBuilder(r).Compile(ctx)
	if err != nil {
		return nil, nil, err
	}
	funcs := map[string]api.GoModuleFunction{}
	defs := compiled.ExportedFunctions()
	for name, def := range defs {
		f, ok := def.GoFunction().(api.GoModuleFunction)
		if !ok {
			return nil, nil, fmt.Errorf("wazero's %s is not a Go module function", name)
		}
		funcs[name] = f
	}
	return funcs, defs, nil
}

// exportCounted exports wazero's WASI functions, each counted, into b,
// but for those in skip (the host's own).
func exportCounted(b wazero.HostModuleBuilder, funcs map[string]api.GoModuleFunction, defs map[string]api.FunctionDefinition, skip map[string]bool, c calls) {
	for name, f := range funcs {
		if skip[name] {
			continue
		}
		def := defs[name]
		b.NewFunctionBuilder().WithGoModuleFunction(c.wrap(name, f), def.ParamTypes(), def.ResultTypes()).
			WithParameterNames(def.ParamNames()...).Export(name)
	}
}
