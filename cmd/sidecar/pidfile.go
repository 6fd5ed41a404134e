package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// writePidFile writes this process's pid to path, so that an operator (or a
// script) stops this sidecar by its pid, `kill -INT "$(cat path)"`, and
// never by its name, which would stop every sidecar of the host. The
// returned func removes the file if it still names this process.
//
// The file appears whole or not at all: the pid is written to a temporary
// file in the same directory, then linked to path, which fails if path
// exists. An existing file that names a live process other than this one
// is refused: two sidecars sharing a pid file would leave one of them
// unstoppable by it. One that names no live process (a sidecar that was
// killed with -9, a host that rebooted), or this process (pid 1 of a
// container restarted on the same volume), is stale and replaced. A pid
// reused by an unrelated process makes the sidecar refuse to start, with
// the pid in the error: remove the file.
func writePidFile(path string) (remove func(), err error) {
	pid := os.Getpid()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pidfile-*")
	if err != nil {
		return nil, fmt.Errorf("--pidfile: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(strconv.Itoa(pid) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("--pidfile: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("--pidfile: %w", err)
		}
		if old, ok := readPid(path); ok && old != pid && processAlive(old) {
			return nil, fmt.Errorf("--pidfile %s names process %d, which is running: stop it first, or remove the file if that process is not a sidecar", path, old)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return nil, fmt.Errorf("--pidfile: %w", err)
		}
	}
	return func() {
		if p, ok := readPid(path); ok && p == pid {
			_ = os.Remove(path)
		}
	}, nil
}

// readPid is the pid a pid file names, if it names one.
func readPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}
