package client_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeExamples: every Go snippet of README.md is code of
// example_test.go, which go test compiles, so the README's examples build as
// written. Compared paragraph by paragraph (a blank line apart), each line
// without its indentation.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	examples, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	code := "\n" + strings.Join(unindent(string(examples)), "\n") + "\n"
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		for _, para := range strings.Split(b[1], "\n\n") {
			lines := unindent(para)
			if len(lines) == 0 {
				continue
			}
			require.Contains(t, code, "\n"+strings.Join(lines, "\n")+"\n", "README.md's snippet is not in example_test.go")
		}
	}
}

// unindent returns text's non-empty lines without their leading whitespace.
func unindent(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
