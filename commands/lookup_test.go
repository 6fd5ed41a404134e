package commands

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookup: every PK command is found by its name in any ASCII case,
// and nothing else is: not a name one letter off, nor one that only
// Unicode's case folding makes equal.
func TestLookup(t *testing.T) {
	h := New(&fakeStore{}, DefaultLimits, nil)
	for i := range specs {
		name := specs[i].Name
		for _, n := range []string{name, strings.ToUpper(name), strings.ToUpper(name[:1]) + name[1:]} {
			require.Same(t, &specs[i], h.lookup([]byte(n)), n)
			require.True(t, h.IsPK([]byte(n)), n)
		}
		require.Nil(t, h.lookup([]byte(name[:len(name)-1])), name)
		require.Nil(t, h.lookup([]byte(name+"x")), name)
	}
	for _, n := range []string{"", "pk", "pk.", "PK.", "pk_prepare", "xk.get", "px.get", "pk,get", "p\u212a.get",
		"pk.get\x00", "pk.ge\x14", "PING", "GET", "SET", strings.Repeat("pk.prepare", 10)} {
		require.Nil(t, h.lookup([]byte(n)), "%q", n)
	}
}
