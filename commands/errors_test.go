package commands

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCatalogue: every code has a line, which begins with its prefix, and no
// two codes without arguments share a line.
func TestCatalogue(t *testing.T) {
	seen := map[string]ErrCode{}
	for c := NoError + 1; c < numErrCodes; c++ {
		line := c.Line()
		require.NotEmpty(t, line, "code %d has no line", c)
		require.True(t, strings.HasPrefix(line, c.Prefix().String()+" "), "%q does not begin with %s", line, c.Prefix())
		require.NotContains(t, line, "\r")
		require.NotContains(t, line, "\n")
		if prev, ok := seen[line]; ok {
			t.Fatalf("codes %d and %d share %q", prev, c, line)
		}
		seen[line] = c
	}
	require.Equal(t, Reply{Kind: Error, Err: ErrSyntax, Text: "ERR syntax error"}, ErrSyntax.Reply())
	require.Equal(t, Reply{Kind: Error, Err: ErrArity, Text: "ERR wrong number of arguments for 'pk.get' command"}, ErrArity.Replyf("pk.get"))
	require.Equal(t, ErrArity, lineCode("ERR wrong number of arguments for 'pk.get' command"))
	require.Equal(t, ErrSubcommandArity, lineCode("ERR wrong number of arguments for 'client|id' command"))
	require.Equal(t, ErrClientName, lineCode("ERR Client names cannot contain spaces, newlines or special characters."))
}

// lineCode is the code whose line (or format) text is: the tests write the
// replies they expect as text, and check the code the reply carries too.
// It panics unless one code matches best.
func lineCode(text string) ErrCode {
	var found []ErrCode
	for c := NoError + 1; c < numErrCodes; c++ {
		line := c.Line()
		if line == text {
			return c // a line without arguments is the closest match
		}
		if !strings.Contains(line, "%") {
			continue
		}
		re := regexp.QuoteMeta(line)
		re = strings.NewReplacer("%s", "(?s:.*)", "%d", `-?\d+`).Replace(re)
		if regexp.MustCompile("^" + re + "$").MatchString(text) {
			found = append(found, c)
		}
	}
	// Of formats that both match, the longer is the more specific
	// ('%s|%s' against '%s').
	slices.SortFunc(found, func(a, b ErrCode) int { return len(b.Line()) - len(a.Line()) })
	if len(found) == 0 || len(found) > 1 && len(found[0].Line()) == len(found[1].Line()) {
		panic(fmt.Sprintf("codes %v match %q", found, text))
	}
	return found[0]
}
