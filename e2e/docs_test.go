package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readmeSession is the redis-cli session README.md shows: the commands
// typed at its prompt, and what redis-cli printed.
func readmeSession(t *testing.T) (cmds []string, want []string) {
	t.Helper()
	f, err := os.Open("../README.md")
	require.NoError(t, err)
	defer f.Close()
	const prompt = "127.0.0.1:6380> "
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "$ redis-cli -p 6380"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, prompt):
			cmds = append(cmds, strings.TrimPrefix(line, prompt))
		case in:
			want = append(want, line)
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, cmds, "README.md has no redis-cli session")
	return cmds, want
}

// TestReadmeSession types the README's redis-cli session into redis-cli, as
// a reader pasting it would, against the binary, and compares what
// redis-cli prints with what the README shows.
func TestReadmeSession(t *testing.T) {
	needTool(t, "redis-cli")
	cmds, want := readmeSession(t)
	s := start(t, "--backend", "memory:")
	host, port := splitAddr(t, s.addr)
	cli := exec.Command("redis-cli", "-h", host, "-p", port, "--no-raw")
	cli.Stdin = strings.NewReader(strings.Join(cmds, "\n") + "\n")
	out, err := cli.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, strings.Join(want, "\n"), strings.TrimRight(string(out), "\n"))
}

// unquotedJSON finds a JSON object typed bare on a command line: redis-cli
// splits it at its quotes and the sidecar sees other arguments.
var unquotedJSON = regexp.MustCompile(`(^|\s)\{"`)

// TestDocsQuoteJSON checks every command line in the README's and docs'
// examples (a redis-cli prompt, "> ", or "$ redis-cli") quotes its JSON
// arguments, so that each works pasted into redis-cli.
func TestDocsQuoteJSON(t *testing.T) {
	files, err := filepath.Glob("../docs/*.md")
	require.NoError(t, err)
	files = append(files, "../README.md")
	command := regexp.MustCompile(`^(\S+:\d+> |> |\$ redis-cli )`)
	checked := 0
	for _, name := range files {
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		for i, line := range strings.Split(string(b), "\n") {
			if !command.MatchString(line) {
				continue
			}
			checked++
			if unquotedJSON.MatchString(line) {
				t.Errorf("%s:%d: JSON not quoted for redis-cli: %s", name, i+1, line)
			}
		}
	}
	require.Greater(t, checked, 10, "no command lines found in the docs")
}
