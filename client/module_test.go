package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModuleGraph: a program that imports only this package resolves
// go-redis and this module's own requirements, none of the sidecar's (issue
// 29: in the root module it pulled 57 modules, pebble and mongo-driver
// among them), and `go mod tidy` keeps the program's go line (it raised it
// to 1.26.0). The program is a module of its own in a temporary directory,
// with a replace to this directory.
func TestModuleGraph(t *testing.T) {
	here, err := os.Getwd()
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("go.mod", "module example.com/user\n\ngo 1.23\n\n"+
		"require github.com/prepkey/prepkey/client v0.0.0\n\n"+
		"replace github.com/prepkey/prepkey/client => "+here+"\n")
	write("main.go", `package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/prepkey/prepkey/client"
)

func main() { _ = client.New(redis.NewClient(&redis.Options{})) }
`)
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// GOTOOLCHAIN=local: the go line is judged, never met by fetching
		// a toolchain; GOWORK=off: no workspace of the caller's.
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	gocmd("mod", "tidy")
	gocmd("build", "-o", os.DevNull, ".")

	mods := strings.Fields(gocmd("list", "-m", "-f", "{{.Path}}", "all"))
	require.Contains(t, mods, "github.com/redis/go-redis/v9")
	for _, m := range mods {
		for _, heavy := range []string{"pebble", "mongo-driver", "gnet", "miniredis", "rueidis", "prometheus", "github.com/prepkey/prepkey/"} {
			if strings.Contains(m, heavy) && m != "github.com/prepkey/prepkey/client" {
				t.Errorf("the client's module graph holds %s (%q)", m, heavy)
			}
		}
	}
	t.Logf("%d modules: %s", len(mods), strings.Join(mods, " "))

	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	require.Regexp(t, regexp.MustCompile(`(?m)^go 1\.23$`), string(gomod), "go mod tidy raised the program's go line")
	require.NotRegexp(t, regexp.MustCompile(`(?m)^toolchain `), string(gomod))
}
