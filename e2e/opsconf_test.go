package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refusedStart runs the sidecar with args and extra environment, expects
// exit 2, and returns its stderr, which must be one line.
func refusedStart(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(sidecarBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "not refused: %v %s", err, stderr.String())
	require.Equal(t, 2, exit.ExitCode(), stderr.String())
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	require.Empty(t, stdout.String())
	return stderr.String()
}

// TestMalformedURLRefused: `redis://:pw@[::1` was accepted and dialled
// [::1]:6379; it is refused at start, its password hidden.
func TestMalformedURLRefused(t *testing.T) {
	out := refusedStart(t, nil, "--listen", "127.0.0.1:0", "--backend", "redis://:pw@[::1")
	require.Equal(t, `sidecar: --backend: redis: invalid URL "redis://:xxxxx@[::1": bad host "[::1": an IPv6 address is [addr] or [addr]:port`+"\n", out)
	out = refusedStart(t, nil, "--listen", "127.0.0.1:0", "--backend", "file://data/x")
	require.Equal(t, "sidecar: --backend file://data/x: a file: URL names a local directory: file:DIR or file:///absolute/dir\n", out)
}

// TestProtectedModeStart: a non-loopback --listen without a password is
// refused, saying how to allow it; with a password or --protected-mode no
// it serves.
func TestProtectedModeStart(t *testing.T) {
	out := refusedStart(t, nil, "--backend", "memory:", "--listen", "0.0.0.0:0")
	require.Equal(t, "sidecar: --listen 0.0.0.0:0 accepts connections from other hosts and no password is set: set --requirepass (or --requirepass-file, PK_REQUIREPASS), or --protected-mode no to allow it\n", out)
	out = refusedStart(t, []string{"PK_LISTEN=[::]:0", "PK_BACKEND=memory:"})
	require.Contains(t, out, "sidecar: --listen [::]:0 accepts connections from other hosts")

	s := start(t, "--backend", "memory:", "--listen", "0.0.0.0:0", "--protected-mode", "no")
	require.Contains(t, s.logs(), "auth=false")
	pass := t.TempDir() + "/pass"
	require.NoError(t, os.WriteFile(pass, []byte("s3cret\n"), 0o600))
	cmd := exec.Command(sidecarBin, "--backend", "memory:", "--listen", "0.0.0.0:0")
	cmd.Env = []string{"PK_REQUIREPASS_FILE=" + pass}
	s = launch(t, cmd, "")
	require.Contains(t, s.logs(), "auth=true")
}

// TestUnknownEnvWarned: a PK_* variable that names no flag is one warning
// line at start, with the name it was probably meant to be; PK_CHECK in the
// environment leaves the server a server.
func TestUnknownEnvWarned(t *testing.T) {
	cmd := exec.Command(sidecarBin, "--backend", "memory:", "--listen", "127.0.0.1:0")
	cmd.Env = []string{"PK_BACKNED=redis://x", "PK_CHECK=true"}
	s := launch(t, cmd, "")
	logs := s.logs()
	require.Equal(t, 1, strings.Count(logs, "unknown environment variable"), logs)
	require.Contains(t, logs, `level=WARN msg="unknown environment variable PK_BACKNED ignored (did you mean PK_BACKEND?)"`)
	require.Contains(t, logs, `level=WARN msg="PK_CHECK is ignored: --check is a flag only`)
	c := s.client(t, 2)
	check(t, c, "PONG", "PING")
	// A refused start stays one line: the warnings come once it serves.
	out := refusedStart(t, []string{"PK_BACKNED=x"}, "--listen", "127.0.0.1:0", "--backend", "nowhere")
	require.NotContains(t, out, "PK_BACKNED")
}

// TestHelpHumanUnits: --help shows sizes and durations as one writes them.
func TestHelpHumanUnits(t *testing.T) {
	out, err := exec.Command(sidecarBin, "--help").Output()
	require.NoError(t, err)
	for _, want := range []string{"-min-free-disk size\n", "-backend-timeout duration\n", "(default 64MiB)", "(default 24h)", "(default 2s)", "(default 64KiB)", "-timeout duration"} {
		require.Contains(t, string(out), want)
	}
	for _, not := range []string{"67108864", "24h0m0s", "65536"} {
		require.NotContains(t, string(out), not)
	}
}
