package commands

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// globAlphabet is what random patterns and keys are made of: few letters,
// so that segments match often, and every metacharacter.
var globAlphabet = []byte("ab*?[]^-\\\x00\xff")

func randomBytes(r *rand.Rand, n int, from []byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = from[r.IntN(len(from))]
	}
	return b
}

// TestGlobDifferential holds the compiled glob to redisGlobMatch, the port
// of stringmatchlen PK.SCAN used before, on random patterns and keys.
func TestGlobDifferential(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 2))
	for range 200000 {
		p := randomBytes(r, r.IntN(12), globAlphabet)
		s := randomBytes(r, r.IntN(12), []byte("ab*?[]^-\\\x00\xff"[:2+r.IntN(10)]))
		g := compileGlob(p)
		if got, want := g.match(s), redisGlobMatch(p, s); got != want {
			t.Fatalf("pattern %q key %q: compiled %v, stringmatchlen %v", p, s, got, want)
		}
	}
}

// TestGlobEdges: the shapes random patterns rarely make.
func TestGlobEdges(t *testing.T) {
	long := bytes.Repeat([]byte("a"), 1024)
	for _, c := range []struct{ p, s []byte }{
		{[]byte("*"), nil},
		{nil, nil},
		{nil, []byte("a")},
		{[]byte("[a-]b"), []byte("]")},
		{[]byte("[a-]b"), []byte("b")},
		{[]byte("[a-]b]"), []byte("^")},
		{[]byte(`[\`), []byte(`\`)},
		{[]byte(`[a\`), []byte(`\`)},
		{[]byte("[^"), []byte("x")},
		{[]byte("[^]x"), []byte("yx")},
		{[]byte("[]"), []byte("]")},
		{[]byte(`\`), []byte(`\`)},
		{[]byte(`a\`), []byte(`a\`)},
		// Redis's nesting limit: 1000 '*' before the end pass, 1001 refuse
		// every key; trailing ones do not count.
		{bytes.Repeat([]byte("*a"), 1000), long},
		{bytes.Repeat([]byte("*a"), 1001), long},
		{append(bytes.Repeat([]byte("*a"), 1000), '*'), long},
		{append(bytes.Repeat([]byte("a*"), 1001), 'a'), long},
		{append(bytes.Repeat([]byte("*"), 5000), 'a'), long},
		// Segments longer than a word, across word boundaries.
		{[]byte("*" + strings.Repeat("a", 100) + "*" + strings.Repeat("?", 200) + "*"), long},
		{[]byte("x*" + strings.Repeat("a", 63) + "b*" + strings.Repeat("[a]", 70) + "*"), append(append([]byte("x"), long[:500]...), 'b')},
		{[]byte("x*" + strings.Repeat("a", 63) + "b*" + strings.Repeat("[a]", 70) + "*"), append(append(append([]byte("x"), long[:500]...), 'b'), long[:70]...)},
	} {
		if got, want := compileGlob(c.p).match(c.s), redisGlobMatch(c.p, c.s); got != want {
			t.Errorf("pattern %.80q key %.40q: compiled %v, stringmatchlen %v", c.p, c.s, got, want)
		}
	}
}

// FuzzGlob: go test -fuzz FuzzGlob ./commands/
func FuzzGlob(f *testing.F) {
	f.Add([]byte("a*b?[c-d]"), []byte("axbcd"))
	f.Add([]byte(`*[\]x]*a*`), []byte("]aa"))
	f.Fuzz(func(t *testing.T, p, s []byte) {
		if len(p) > 64 || len(s) > 64 {
			return // redisGlobMatch is slow on long ones: that is the point
		}
		if got, want := compileGlob(p).match(s), redisGlobMatch(p, s); got != want {
			t.Fatalf("pattern %q key %q: compiled %v, stringmatchlen %v", p, s, got, want)
		}
	})
}

// TestGlobBudget logs the time of one page's worst matching, the figure
// matchBudget is set from: the abusive shapes of issue 23 over as many
// keys of 1 KiB as matchCount lets one page read, each key the worst for
// its pattern (searched to its end). The least of 20 runs, so that a
// loaded machine's preemptions count less.
func TestGlobBudget(t *testing.T) {
	as := bytes.Repeat([]byte("a"), 1024)
	for _, c := range []struct {
		p   string
		key []byte
	}{
		{"*[" + strings.Repeat("b", 4093) + "]", as},
		{strings.Repeat("*a", 1000) + "b", as},
		{"*" + strings.Repeat("a", 1023) + "b*", as},
		{"*" + strings.Repeat("a", 190) + "b*", as},
		{"*" + strings.Repeat("?", 2047) + "b*", as},
		{strings.Repeat("?", 4096), as},
		{"*" + strings.Repeat("a", 63) + "b*", as},
	} {
		var best, compile time.Duration
		n := 0
		for run := range 20 {
			began := time.Now()
			g := compileGlob([]byte(c.p))
			compiled := time.Since(began)
			n = matchCount(1000, g.cost(1024))
			for range n {
				if g.match(c.key) {
					t.Fatalf("%.20q matches", c.p)
				}
			}
			if took := time.Since(began); run == 0 || took < best {
				best, compile = took, compiled
			}
		}
		t.Logf("%-28.24q (%4d B): compile %v, with %4d keys of 1 KiB %v", c.p, len(c.p), compile, n, best)
	}
}
