package resp

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// feed gives a request to an assembler in pieces cut at random, as TCP may
// deliver it, and returns what it took, whether it completed, and the error.
func feed(stream string, seed uint64) (args [][]byte, n int, done bool, msg string) {
	var a Assembler
	a.Start()
	rng := rand.New(rand.NewPCG(seed, seed))
	for len(stream) > 0 {
		k := 1 + rng.IntN(min(len(stream), 9))
		m, ok, e := a.Feed([]byte(stream[:k]))
		n += m
		if e != "" || ok {
			if ok {
				args = a.Take()
			}
			return args, n, ok, e
		}
		if m != k {
			panic("a piece not taken whole before the end")
		}
		stream = stream[k:]
	}
	return nil, n, false, ""
}

// TestAssembler: the assembler takes a request in as redcon parses it
// whole: the same arguments, the same end, redcon's errors.
func TestAssembler(t *testing.T) {
	long := strings.Repeat("v", 5000)
	for _, stream := range []string{
		req("PK.MPREPARE", "2", "ns", "a", long, "ns", "b", long),
		req("x"),
		req("", "", "a"),
		"*0\r\n",
		req("a", "b") + req("c"), // it stops at the end of the first
	} {
		for seed := range uint64(20) {
			args, n, done, msg := feed(stream, seed)
			ok, want, _, rest, err := redcon.ReadNextCommand([]byte(stream), nil)
			require.NoError(t, err)
			require.True(t, ok)
			require.Empty(t, msg)
			require.True(t, done)
			require.Equal(t, len(stream)-len(rest), n)
			require.Equal(t, len(want), len(args))
			for i := range want {
				require.Equal(t, string(want[i]), string(args[i]))
			}
		}
	}
	for stream, want := range map[string]string{
		"*2\n":                        "invalid multibulk length",
		"*x\r\n":                      "invalid multibulk length",
		"*1\r\n$3\nabc\r\n":           "invalid bulk length",
		"*1\r\n$3\r\nabcd\r\n":        "invalid bulk length",
		"*1\r\n$3\r\nabc\rx":          "invalid bulk length",
		"*2\r\n$1\r\na\r\n+1\r\n":     "expected '$', got '+'",
		"*1\r\n$12345678901234567890": "invalid bulk length",
	} {
		for seed := range uint64(5) {
			_, _, done, msg := feed(stream+strings.Repeat("x", 50), seed)
			require.False(t, done, stream)
			require.Equal(t, want, msg, stream)
		}
		if !strings.HasPrefix(stream, "*1\r\n$1234") {
			_, _, _, _, err := redcon.ReadNextCommand([]byte(stream+strings.Repeat("x", 50)), nil)
			require.ErrorContains(t, err, want, "redcon's error for %q", stream)
		}
	}
}
