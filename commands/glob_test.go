package commands

import "testing"

// TestGlobMatch holds globMatch to Redis's stringmatchlen on the cases of
// Redis's own util.c tests and the SCAN MATCH uses of the contract.
func TestGlobMatch(t *testing.T) {
	cases := []struct {
		p, s string
		want bool
	}{
		{"*", "anything", true},
		{"a*", "abc", true},
		{"a*", "bac", false},
		{"*c", "abc", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a[bc]d", "acd", true},
		{"a[^bc]d", "acd", false},
		{"a[^bc]d", "axd", true},
		{"a[a-c]d", "abd", true},
		{"a[c-a]d", "abd", true}, // reversed range
		{"a[a-c]d", "axd", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{`a[\]]b`, "a]b", true},
		{`a\?`, "a?", true},
		{`\[x\]`, "[x]", true},
		{"[x", "x", true}, // unterminated class
		{"a**b", "axxb", true},
		{"a*b*", "ab", true},
		{"*\x00*", "a\x00b", true},
		{"\xff?", "\xff\x01", true},
		{"[\x80-\xff]", "\x90", true},
		{"abc", "abcd", false},
		{"abcd", "abc", false},
		{"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, c := range cases {
		if got := globMatch([]byte(c.p), []byte(c.s)); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
