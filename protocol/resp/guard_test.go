package resp

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func req(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// scanAll feeds stream to a guard in pieces cut at random, as TCP may
// deliver it, and returns the first refusal.
func scanAll(stream string, lim Limits, seed uint64) string {
	g := &FramingGuard{lim: func() Limits { return lim }}
	rng := rand.New(rand.NewPCG(seed, seed))
	for len(stream) > 0 {
		n := 1 + rng.IntN(min(len(stream), 7))
		if msg, _ := g.Scan([]byte(stream[:n])); msg != "" {
			return msg
		}
		stream = stream[n:]
	}
	return ""
}

func TestGuard(t *testing.T) {
	pre := Limits{MaxArgs: PreAuthMaxArgs, MaxBulk: PreAuthMaxBulk, MaxRequest: PreAuthMaxRequest, PreAuth: true}
	post := Limits{MaxArgs: 1024, MaxBulk: 2 << 20}
	sixteen := make([]string, 16)
	for i := range sixteen {
		sixteen[i] = "a"
	}
	tests := []struct {
		name   string
		stream string
		lim    Limits
		want   string
	}{
		{"pipeline within Limits", req("AUTH", "pw") + req(sixteen...) + req("PING", strings.Repeat("x", 65532)) + "PING\r\n" + req("ECHO", "\r\n$5\r\n*99\r\n"), pre, ""},
		{"17 args before auth", req(append(sixteen, "b")...), pre, "unauthenticated multibulk length"},
		{"bulk of 64 KiB + 1 before auth", req("AUTH", strings.Repeat("x", 65537)), pre, "unauthenticated bulk length"},
		{"refused on the header alone", "*1\r\n$65537\r\n", pre, "unauthenticated bulk length"},
		{"16 bulks of 60 KiB before auth", req(append([]string{"AUTH"}, slices.Repeat([]string{strings.Repeat("x", 60<<10)}, 15)...)...), pre, "unauthenticated request length"},
		{"arguments of 64 KiB + 1 before auth", req("AUTH", strings.Repeat("x", 65536-3)), pre, "unauthenticated request length"},
		{"refused on the header that passes it", "*3\r\n$4\r\nAUTH\r\n$60000\r\n" + strings.Repeat("x", 60000) + "\r\n$6000\r\n", pre, "unauthenticated request length"},
		{"many small requests before auth", strings.Repeat(req("PING"), 100000), pre, ""},
		{"17 args after auth", req(append(sixteen, "b")...), post, ""},
		{"1 MiB bulk after auth", req("PK.PREPARE", "ns", "k", strings.Repeat("v", 1<<20)), post, ""},
		{"huge header after auth", "*2\r\n$3\r\nGET\r\n$99999999999\r\n", post, "invalid bulk length"},
		{"too many args after auth", "*1025\r\n", post, "invalid multibulk length"},
		{"long header", "*" + strings.Repeat("1", 30), post, ""},
		{"long header line", "*" + strings.Repeat("1", 30) + "\r\n", post, "invalid multibulk length"},
		{"long bulk header line", "*1\r\n$" + strings.Repeat("1", 30) + "\r\n", post, "invalid bulk length"},
		{"endless header", "*" + strings.Repeat("1", 65536), post, "too big mbulk count string"},
		{"endless bulk header", "*1\r\n$" + strings.Repeat("1", 65536), post, "too big bulk count string"},
		{"endless inline line", strings.Repeat("P", 65537), pre, "too big inline request"},
		{"endless inline line after auth", strings.Repeat("P", 65537), post, "too big inline request"},
		{"inline line of 64 KiB after auth", strings.Repeat("P", 65536) + "\n", post, ""},
		{"negative bulk length", "*2\r\n$4\r\nPING\r\n$-2\r\n", post, "invalid bulk length"},
		{"non-numeric bulk length", "*1\r\n$x\r\n", post, "invalid bulk length"},
		{"negative multibulk length", "*-1\r\n", post, "invalid multibulk length"},
		{"a bulk without its $", "*1\r\n+PING\r\n", post, "expected '$', got '+'"},
		{"empty requests pass", "*0\r\n\r\n" + req("PING"), pre, ""},
		{"second request checked too", req("PING") + "*17\r\n", pre, "unauthenticated multibulk length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(20) {
				require.Equal(t, tt.want, scanAll(tt.stream, tt.lim, seed), "seed %d", seed)
			}
		})
	}
}
