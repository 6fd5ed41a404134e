package main

import (
	"io"
	"math"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMaxClientsMemoryFlag: --max-clients-memory and PK_MAX_CLIENTS_MEMORY
// take human sizes; 0 given turns the bound off; not given, the default is
// half of GOMEMLIMIT, else 512 MiB.
func TestMaxClientsMemoryFlag(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := parseConfig([]string{"--max-clients-memory", "256MiB"}, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, byteSize(256<<20), c.maxClientsMemory)
	require.True(t, c.clientsMemoryGiven)

	c, err = parseConfig(nil, env(map[string]string{"PK_MAX_CLIENTS_MEMORY": "0"}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, byteSize(0), c.maxClientsMemory)
	require.True(t, c.clientsMemoryGiven, "0 given is off, not the default")

	c, err = parseConfig(nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.False(t, c.clientsMemoryGiven)

	_, err = parseConfig([]string{"--max-clients-memory", "lots"}, env(nil), io.Discard)
	require.ErrorContains(t, err, "want bytes")

	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	debug.SetMemoryLimit(math.MaxInt64)
	require.Equal(t, int64(512<<20), defaultClientsMemory())
	debug.SetMemoryLimit(96 << 20)
	require.Equal(t, int64(48<<20), defaultClientsMemory())
}
