package mongo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/prepkey/prepkey/backend"
)

// TestWowEdgeValues: values at the edges of what layout=wow stores go
// through every value-taking call and come back byte for byte: empty field
// names, NUL in strings, 64 levels of nesting, non-ASCII. Nested arrays
// MongoDB stores and FerretDB v1 refuses (a failure of the write, not :0).
func TestWowEdgeValues(t *testing.T) {
	s, _ := openWow(t, 0, nil)
	ctx := t.Context()
	ferret := ferretDB(t, s)
	for i, v := range []string{
		`{"":1}`, `{"a":{"":1}}`, `"a\u0000b"`, `{"é":"ü😀"}`, `[1,{"a":[true]},"x"]`,
		strings.Repeat(`{"a":`, 64) + "1" + strings.Repeat("}", 64),
		`[[1,2],[]]`,
	} {
		key := []byte{byte('a' + i)}
		ok, err := (backend.Calls{Runner: s}).Prepare(ctx, "edge", key, []byte(v), backend.Expiry{})
		if ferret && strings.HasPrefix(v, "[[") {
			require.ErrorContains(t, err, "nested arrays are not supported")
			continue
		}
		require.NoError(t, err, v)
		require.True(t, ok, v)
		rec, found, err := (backend.Calls{Runner: s}).Get(ctx, "edge", key)
		require.NoError(t, err, v)
		require.True(t, found, v)
		require.Equal(t, v, string(rec.Value))
		ok, err = (backend.Calls{Runner: s}).Reprepare(ctx, "edge", key, []byte(v), backend.IfEq([]byte(v)), backend.Expiry{})
		require.NoError(t, err, v)
		require.True(t, ok, v)
		ok, err = (backend.Calls{Runner: s}).Rollback(ctx, "edge", key, backend.IfEq([]byte(v)))
		require.NoError(t, err, v)
		require.True(t, ok, v)
	}
}
