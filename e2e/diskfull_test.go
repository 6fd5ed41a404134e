//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// smallDisk mounts a tmpfs of size on a new directory, or skips the test
// where mounting is not permitted (not root, no CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("cannot mount a %s tmpfs for a full disk (needs root or CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes a file of n bytes, or up to the end of the space if n < 0.
func fill(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 4096)
	for written := 0; n < 0 || written < n; written += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, n < 0 && errors.Is(err, syscall.ENOSPC), "fill %s: %v", path, err)
			return
		}
	}
}

// prepareUntilRefused sends PK.PREPAREs of k0, k1, … with value, one at a
// time, until one is answered other than :1 (at most 3000); it returns the
// keys acknowledged and that reply ("" if none was refused).
func prepareUntilRefused(r *raw, value string) (acked []string, refused string) {
	for i := 0; i < 3000 && refused == ""; i++ {
		key := fmt.Sprintf("k%d", i)
		r.send(resp("PK.PREPARE", "ns", key, value))
		switch got := r.line(); got {
		case ":1\r\n":
			acked = append(acked, key)
		default:
			refused = got
		}
	}
	return acked, refused
}

// line reads one reply line.
func (r *raw) line() string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(r.wait))
	s, err := r.rd.ReadString('\n')
	require.NoError(r.t, err)
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *sidecar) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("sidecar still running 10s after SIGTERM: %s", s.logs())
	}
	require.Equal(t, 0, s.cmd.ProcessState.ExitCode(), s.logs())
}

// TestDiskFull runs the embedded store on a 2 MiB tmpfs. With a free-space
// reserve, writes are refused with -UNAVAILABLE disk full before the disk
// is full, reads and deletions go on, writes resume by themselves once
// space is freed, SIGTERM is obeyed; on a disk too full to start, the
// sidecar says so in one line and exits 2 within seconds; every
// acknowledged reservation is there after a restart.
func TestDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a tmpfs")
	}
	mnt := smallDisk(t, "2m")
	data := filepath.Join(mnt, "data")
	s := start(t, "--backend", "file:"+data, "--min-free-disk", "256KiB")
	fill(t, filepath.Join(mnt, "other"), 512<<10) // another program's file

	r := s.raw(t)
	value := strings.Repeat("v", 1000)
	acked, refused := prepareUntilRefused(r, value)
	require.True(t, strings.HasPrefix(refused, "-UNAVAILABLE disk full: "), "%q after %d writes", refused, len(acked))
	require.Contains(t, refused, "below the reserve of 256.0 KiB (--min-free-disk)")
	require.Greater(t, len(acked), 100)

	// Reads go on; a command that would write nothing answers as ever; a
	// deletion is let through, as Redis and etcd let DEL through when full.
	r.do("$1000\r\n"+value+"\r\n", "PK.GET", "ns", acked[0])
	r.do(":0\r\n", "PK.PREPARE", "ns", acked[0], "other")
	r.do(":1\r\n", "PK.ROLLBACK", "ns", acked[1])
	released := acked[1]
	acked = append(acked[:1], acked[2:]...)
	r.do("+PONG\r\n", "PING")

	// Space freed: writes resume by themselves.
	require.NoError(t, os.Remove(filepath.Join(mnt, "other")))
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		key := fmt.Sprintf("after%d", i)
		r.send(resp("PK.PREPARE", "ns", key, value))
		got := r.line()
		if got == ":1\r\n" {
			acked = append(acked, key)
			break
		}
		require.True(t, strings.HasPrefix(got, "-UNAVAILABLE disk full: "), got)
		require.True(t, time.Now().Before(deadline), "writes did not resume within 10s of freeing space")
		time.Sleep(20 * time.Millisecond)
	}
	s.stop(t)

	// A disk too full to start: one line, exit 2, within seconds; with the
	// reserve, and without one (pebble itself finds no space).
	fill(t, filepath.Join(mnt, "other"), -1)
	for _, reserve := range []string{"256KiB", "0"} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, sidecarBin, "--backend", "file:"+data, "--min-free-disk", reserve, "--listen", "127.0.0.1:0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, stderr.String())
		require.Equal(t, 2, exit.ExitCode(), stderr.String())
		require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
		require.Contains(t, stderr.String(), "disk full")
	}

	require.NoError(t, os.Remove(filepath.Join(mnt, "other")))
	s = start(t, "--backend", "file:"+data, "--min-free-disk", "256KiB")
	r = s.raw(t)
	for _, key := range acked {
		r.do("$1000\r\n"+value+"\r\n", "PK.GET", "ns", key)
	}
	r.do("$-1\r\n", "PK.GET", "ns", released)
	s.stop(t)
}

// TestDiskFullWithoutReserve fills the disk with no reserve
// (--min-free-disk 0): pebble meets ENOSPC itself. The sidecar does not
// exit (it did: pebble's fatal commit error); the write waits for space and
// its command gets -UNAVAILABLE at the backend timeout (or, when one of
// pebble's own writes met ENOSPC first, -UNAVAILABLE disk full), PING is answered
// meanwhile, writes resume once space is freed, SIGTERM is obeyed, and
// every acknowledged reservation is there after a restart.
func TestDiskFullWithoutReserve(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a tmpfs")
	}
	mnt := smallDisk(t, "2m")
	data := filepath.Join(mnt, "data")
	s := start(t, "--backend", "file:"+data, "--min-free-disk", "0", "--backend-timeout", "500ms")
	fill(t, filepath.Join(mnt, "other"), 1200<<10)

	r := s.raw(t)
	value := strings.Repeat("v", 1000)
	acked, refused := prepareUntilRefused(r, value)
	// The write that meets ENOSPC waits for space and its command gets
	// the timeout; when a background write of pebble's (a flush) met it
	// first, the store knows the disk is full and refuses at once.
	require.Contains(t, []string{
		"-UNAVAILABLE no answer within 500ms\r\n",
		"-UNAVAILABLE disk full: a write found no space on " + data + "; writes resume once space is freed\r\n",
	}, refused, "after %d writes: %s", len(acked), s.logs())
	ping := s.raw(t)
	ping.do("+PONG\r\n", "PING")

	require.NoError(t, os.Remove(filepath.Join(mnt, "other")))
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		key := fmt.Sprintf("after%d", i)
		r.send(resp("PK.PREPARE", "ns", key, value))
		if got := r.line(); got == ":1\r\n" {
			acked = append(acked, key)
			break
		}
		require.True(t, time.Now().Before(deadline), "writes did not resume within 10s of freeing space: %s", s.logs())
		time.Sleep(20 * time.Millisecond)
	}
	s.stop(t)
	require.Contains(t, s.logs(), "disk full: a write of the store found no space")

	s = start(t, "--backend", "file:"+data, "--min-free-disk", "0")
	r = s.raw(t)
	for _, key := range acked {
		r.do("$1000\r\n"+value+"\r\n", "PK.GET", "ns", key)
	}
	s.stop(t)
}
