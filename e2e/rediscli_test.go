package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needTool skips a test when a program it drives is missing, except in CI,
// where `make test` installs it.
func needTool(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := exec.LookPath(n); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is not installed (make test installs it)", n)
			}
			t.Skipf("%s not installed", n)
		}
	}
}

// TestRedisCliHelp types into an interactive redis-cli, in a terminal that
// tmux draws, and reads the screen: the hints redis-cli shows while a PK
// command is typed and what `help` prints come from COMMAND DOCS.
func TestRedisCliHelp(t *testing.T) {
	needTool(t, "redis-cli", "tmux")
	// redis-cli takes its hints from COMMAND DOCS since 7.0; redis-cli 6
	// has a table of its own, which knows no PK command.
	out, err := exec.Command("redis-cli", "--version").Output()
	require.NoError(t, err)
	if v := strings.Fields(string(out)); len(v) < 2 || !atLeastRedis7("\r\nredis_version:"+v[1]) {
		t.Skipf("%s: hints from COMMAND DOCS need redis-cli 7.0 or later", strings.TrimSpace(string(out)))
	}
	s := start(t, "--backend", "memory:")
	host, port := splitAddr(t, s.addr)
	sock := fmt.Sprintf("prepkey-test-%d", time.Now().UnixNano())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		require.NoError(t, err, "tmux %v: %s", args, out)
		return string(out)
	}
	tmux("new-session", "-d", "-s", "cli", "-x", "220", "-y", "60", "redis-cli -h "+host+" -p "+port)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", sock, "kill-server").Run() })
	screenShows := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		var screen string
		for time.Now().Before(deadline) {
			screen = tmux("capture-pane", "-p", "-t", "cli")
			if strings.Contains(screen, want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("the screen never showed %q; it shows:\n%s", want, screen)
	}
	screenShows(host + ":" + port + ">")

	// the hint, as the command is typed
	tmux("send-keys", "-t", "cli", "-l", "PK.PREPARE ")
	screenShows("> PK.PREPARE name key value [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds]")
	tmux("send-keys", "-t", "cli", "-l", "username alice ")
	screenShows("> PK.PREPARE username alice value [EX seconds|")
	tmux("send-keys", "-t", "cli", "C-u")

	tmux("send-keys", "-t", "cli", "-l", "help PK.PREPARE")
	tmux("send-keys", "-t", "cli", "Enter")
	screenShows("summary: Reserves a key for a value unless a live record holds it")
	tmux("send-keys", "-t", "cli", "-l", "help PK.REPREPARE")
	tmux("send-keys", "-t", "cli", "Enter")
	screenShows("PK.REPREPARE name key value [FROM old-key] [IFEQ current-value] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]")
	tmux("send-keys", "-t", "cli", "-l", "help CLIENT KILL")
	tmux("send-keys", "-t", "cli", "Enter")
	screenShows("summary: Kill the connection of a client")
	tmux("send-keys", "-t", "cli", "-l", "help @module")
	tmux("send-keys", "-t", "cli", "Enter")
	screenShows("PK.GETVALUE name key")
}

func splitAddr(t *testing.T, addr string) (string, string) {
	i := strings.LastIndexByte(addr, ':')
	require.Positive(t, i, addr)
	return addr[:i], addr[i+1:]
}
