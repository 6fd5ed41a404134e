package resp

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	preAuth  = Limits{MaxArgs: PreAuthMaxArgs, MaxBulk: PreAuthMaxBulk, MaxRequest: PreAuthMaxRequest, PreAuth: true}
	postAuth = Limits{MaxArgs: 1024, MaxBulk: 2 << 20}
)

// TestParse: the one-pass parse takes the requests clients send, in
// place, and leaves every other to the guard and redcon.
func TestParse(t *testing.T) {
	prepare := req("PK.PREPARE", "ns", "k:1", "v", "PX", "60000")
	tests := []struct {
		name string
		in   string
		lim  Limits
		args []string // nil: not taken (ok false)
	}{
		{"a PK.PREPARE", prepare, postAuth, []string{"PK.PREPARE", "ns", "k:1", "v", "PX", "60000"}},
		{"before auth", req("AUTH", "pw"), preAuth, []string{"AUTH", "pw"}},
		{"*0", "*0\r\n", postAuth, []string{}},
		{"CRLF inside an argument", req("ECHO", "\r\n$5\r\n*99\r\n"), postAuth, []string{"ECHO", "\r\n$5\r\n*99\r\n"}},
		{"an empty argument", req("ECHO", ""), postAuth, []string{"ECHO", ""}},
		{"leading zeros", "*01\r\n$04\r\nPING\r\n", postAuth, []string{"PING"}},
		{"16 arguments before auth", req(slices.Repeat([]string{"a"}, 16)...), preAuth, slices.Repeat([]string{"a"}, 16)},
		{"64 KiB of arguments before auth", req("AUTH", strings.Repeat("x", 65536-4)), preAuth, []string{"AUTH", strings.Repeat("x", 65536-4)}},

		{"incomplete", prepare[:len(prepare)-1], postAuth, nil},
		{"only the header", "*2\r\n", postAuth, nil},
		{"empty", "", postAuth, nil},
		{"inline", "PING\r\n", postAuth, nil},
		{"a $ line is inline", "$4\r\nPING\r\n", postAuth, nil},
		{"17 arguments before auth", req(slices.Repeat([]string{"a"}, 17)...), preAuth, nil},
		{"a bulk past MaxBulk", req("AUTH", strings.Repeat("x", 65537)), preAuth, nil},
		{"arguments past MaxRequest", req("AUTH", strings.Repeat("x", 65536-3)), preAuth, nil},
		{"a plus sign", "*+1\r\n$4\r\nPING\r\n", postAuth, nil},
		{"a minus sign", "*-1\r\n", postAuth, nil},
		{"a negative bulk", "*1\r\n$-2\r\n", postAuth, nil},
		{"no CR", "*1\n$4\r\nPING\r\n", postAuth, nil},
		{"no CR after a bulk header", "*1\r\n$4\nPING\r\n", postAuth, nil},
		{"no CRLF after a bulk", "*1\r\n$4\r\nPINGX\r\n", postAuth, nil},
		{"a bulk without its $", "*1\r\n+PING\r\n", postAuth, nil},
		{"a space in a header", "*1 \r\n$4\r\nPING\r\n", postAuth, nil},
		{"an empty header", "*\r\n", postAuth, nil},
		{"19 digits", "*" + strings.Repeat("0", 18) + "1\r\n$4\r\nPING\r\n", postAuth, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewFramingGuard(func() Limits { return tt.lim })
			const next = "*1\r\n" // the next request, incomplete
			in := tt.in + next
			args, n, ok := g.Parse([]byte(in), nil)
			if tt.args == nil {
				require.False(t, ok)
				return
			}
			require.True(t, ok)
			got := []string{}
			for _, a := range args {
				got = append(got, string(a))
			}
			require.Equal(t, tt.args, got)
			require.Equal(t, next, in[n:], "what follows the request")
			require.Equal(t, atRequest, g.state)
		})
	}
}

// FuzzParse: what the one-pass parse takes, the guard passes whole and
// redcon reads as the same arguments and the same length; what the guard
// or redcon refuse, or read otherwise, it does not take.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		req("PK.PREPARE", "ns", "k", "v", "PX", "60000") + req("PING"),
		req("AUTH", "pw"), "*0\r\n", "*01\r\n$04\r\nPING\r\n", "*1\r\n$-2\r\n", "*-1\r\n",
		"*+1\r\n$4\r\nPING\r\n", "*1\r\n$4\nPING\r\n", "*1\r\n$4\r\nPINGX\r\n", "PING\r\n",
		req(slices.Repeat([]string{"a"}, 17)...), "*2\r\n$3\r\nGET\r\n$99999999999\r\n",
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	f.Fuzz(func(t *testing.T, b []byte, pre bool) {
		lim := Limits{MaxArgs: 8, MaxBulk: 64, MaxRequest: 100, PreAuth: pre}
		if !pre {
			lim = Limits{MaxArgs: 16, MaxBulk: 256}
		}
		g := NewFramingGuard(func() Limits { return lim })
		args, n, ok := g.Parse(b, nil)
		if !ok {
			return
		}
		scan := NewFramingGuard(func() Limits { return lim })
		msg, _ := scan.Scan(b[:n])
		require.Empty(t, msg, "the guard refuses what Parse took")
		require.Equal(t, atRequest, scan.state, "the guard ends elsewhere")
		complete, want, rest, err := ReadCommand(b, nil)
		require.NoError(t, err)
		require.True(t, complete)
		require.Equal(t, len(b)-len(rest), n)
		require.Equal(t, len(want), len(args))
		for i := range want {
			require.Equal(t, string(want[i]), string(args[i]))
		}
	})
}

// BenchmarkParse is a PK.PREPARE checked and parsed in one pass
// (FramingGuard.Parse), against the guard's scan then redcon's parse.
func BenchmarkParse(b *testing.B) {
	in := []byte(req("PK.PREPARE", "ns", "k:000123456", "v", "PX", "60000"))
	g := NewFramingGuard(func() Limits { return postAuth })
	var buf [][]byte
	b.Run("one pass", func(b *testing.B) {
		for b.Loop() {
			buf, _, _ = g.Parse(in, buf)
		}
	})
	b.Run("scan then parse", func(b *testing.B) {
		for b.Loop() {
			g.Scan(in)
			_, buf, _, _ = ReadCommand(in, buf)
		}
	})
}
