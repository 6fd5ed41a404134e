package resp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The cases are what redis-server 7.0.15 (Debian) answers to "ECHO <line>"
// and the like, checked by hand against it; cmd/sidecar's
// TestInlineCompatWithRedis compares them with a running redis-server.
func TestSplitArgsAsSdssplitargs(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"", []string{}},
		{" \t\v\f\r\n ", []string{}},
		{"PING", []string{"PING"}},
		{"  ECHO   a  ", []string{"ECHO", "a"}},
		{"ECHO\ta\t\tb", []string{"ECHO", "a", "b"}},
		{"ECHO\ra\nb", []string{"ECHO", "a", "b"}},
		{"ECHO\va", []string{"ECHO\va"}},    // \v ends no word
		{"ECHO \va", []string{"ECHO", "a"}}, // but is a blank before one
		{"ECHO\fa", []string{"ECHO\fa"}},
		{`ECHO "\x41"`, []string{"ECHO", "A"}},
		{`ECHO "\xFf\x00z"`, []string{"ECHO", "\xff\x00z"}},
		{`ECHO "\x4g\x4"`, []string{"ECHO", "x4gx4"}}, // not two hex digits: \x is x
		{`ECHO "\n\r\t\b\a\\\"\q"`, []string{"ECHO", "\n\r\t\b\a\\\"q"}},
		{`ECHO "a b"`, []string{"ECHO", "a b"}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO ''`, []string{"ECHO", ""}},
		{`ECHO a"b c"`, []string{"ECHO", "ab c"}},
		{`ECHO a'b c'`, []string{"ECHO", "ab c"}},
		{`ECHO 'it\'s'`, []string{"ECHO", "it's"}},
		{`ECHO 'a\nb\x41'`, []string{"ECHO", `a\nb\x41`}},
		{"ECHO \"a\"\tb", []string{"ECHO", "a", "b"}},
		{"ECHO 'a'\vb", []string{"ECHO", "a", "b"}}, // isspace after a quote
		{"ECHO a\x00b c", []string{"ECHO", "a"}},    // a C string: ends at NUL
		{`ECHO "a`, nil},
		{`ECHO 'a`, nil},
		{`ECHO "a\"`, nil},
		{`ECHO "a\`, nil},
		{`ECHO "a"b`, nil},
		{`ECHO 'a'b`, nil},
		{"ECHO \"a\x00\"", nil},
	} {
		got, ok := SplitArgs([]byte(tc.line), nil)
		if tc.want == nil {
			require.False(t, ok, "%q: %q", tc.line, got)
			continue
		}
		require.True(t, ok, "%q", tc.line)
		strs := []string{}
		for _, a := range got {
			strs = append(strs, string(a))
		}
		require.Equal(t, tc.want, strs, "%q", tc.line)
	}
}

func TestReadCommandInline(t *testing.T) {
	complete, args, rest, err := ReadCommand([]byte("ECHO\t\"\\x41\"\r\nPING"), nil)
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, [][]byte{[]byte("ECHO"), []byte("A")}, args)
	require.Equal(t, "PING", string(rest))

	complete, _, rest, err = ReadCommand(rest, nil) // no newline yet
	require.NoError(t, err)
	require.False(t, complete)
	require.Equal(t, "PING", string(rest))

	complete, args, rest, err = ReadCommand([]byte("$3\n"), nil) // Redis: an inline "$3"
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, [][]byte{[]byte("$3")}, args)
	require.Empty(t, rest)

	_, _, _, err = ReadCommand([]byte("ECHO \"a\r\n"), nil)
	require.ErrorIs(t, err, ErrUnbalancedQuotes)

	complete, args, rest, err = ReadCommand([]byte("*2\r\n$4\r\nECHO\r\n$1\r\na\r\n+"), nil)
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, [][]byte{[]byte("ECHO"), []byte("a")}, args)
	require.Equal(t, "+", string(rest))
}
