package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The binary as scripts/build-sidecar.sh builds it (make build, every
// measuring script), stamped by it with `git describe`; built once.
var built struct {
	once sync.Once
	bin  string
	err  error
	out  []byte
}

func sidecarBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the sidecar")
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "prepkey-bin")
		if err != nil {
			built.err = err
			return
		}
		built.bin = filepath.Join(dir, "sidecar")
		built.out, built.err = exec.Command("../../scripts/build-sidecar.sh", built.bin).CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("scripts/build-sidecar.sh: %v\n%s", built.err, built.out)
	}
	return built.bin
}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Skipf("git %s: %v (not a checkout)", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// TestVersionFlag: --version and -v print the version stamped from
// `git describe`, the commit and the Go version, and exit 0.
func TestVersionFlag(t *testing.T) {
	bin := sidecarBinary(t)
	want := "prepkey " + gitOut(t, "describe", "--tags", "--always", "--dirty") +
		" commit " + gitOut(t, "rev-parse", "HEAD") + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	for _, flag := range []string{"--version", "-v"} {
		// A bad PK_ variable does not matter to --version.
		cmd := exec.Command(bin, flag)
		cmd.Env = append(os.Environ(), "PK_MAX_CLIENTS=zero")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", flag, err)
		}
		if string(out) != want {
			t.Errorf("%s printed %q, want %q", flag, out, want)
		}
	}
}

// TestGoRunVersion: `go run ./cmd/sidecar --version` (unstamped) prints a
// version line and exits 0.
func TestGoRunVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the sidecar")
	}
	out, err := exec.Command("go", "run", ".", "--version").Output()
	if err != nil {
		t.Fatalf("go run . --version: %v", err)
	}
	re := regexp.MustCompile(`^prepkey (devel|devel-[0-9a-f]{12}(-dirty)?|v\S+) commit (unknown|[0-9a-f]{40}) ` +
		regexp.QuoteMeta(runtime.Version()) + ` \w+/\w+\n$`)
	if !re.Match(out) {
		t.Errorf("go run . --version printed %q", out)
	}
}

// proc is a sidecar started by a test.
type proc struct {
	cmd     *exec.Cmd
	serving map[string]string // the fields of its "serving" log line
	admin   string
	exited  chan error
}

var logField = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)

// startBinary runs the sidecar on memory: with args and waits for its
// "serving" log line.
func startBinary(t *testing.T, args ...string) *proc {
	t.Helper()
	bin := sidecarBinary(t)
	args = append([]string{"--backend", "memory:", "--listen", "127.0.0.1:0", "--log-format", "text"}, args...)
	p := &proc{cmd: exec.Command(bin, args...), exited: make(chan error, 1)}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	var log []string
	for line := range lines {
		log = append(log, line)
		fields := map[string]string{}
		for _, m := range logField.FindAllStringSubmatch(line, -1) {
			fields[m[1]] = strings.Trim(m[2], `"`)
		}
		switch fields["msg"] {
		case "serving operators":
			p.admin = fields["admin_listen"]
		case "serving":
			p.serving = fields
			go func() {
				for range lines {
				}
			}()
			go func() { p.exited <- p.cmd.Wait() }()
			return p
		}
	}
	t.Fatalf("the sidecar exited before serving: %v\n%s", p.cmd.Wait(), strings.Join(log, "\n"))
	return nil
}

// TestStartLogAndPidFile: the start log line names the pid, the version
// and the commit; --pidfile holds the pid while the sidecar runs, a second
// sidecar on the same pid file refuses to start, and the file is gone
// after a SIGINT. A stale pid file is replaced.
func TestStartLogAndPidFile(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "prepkey.pid")
	p := startBinary(t, "--pidfile", pidFile)
	pid := strconv.Itoa(p.cmd.Process.Pid)
	if p.serving["pid"] != pid {
		t.Errorf("serving line pid=%q, want %s (%v)", p.serving["pid"], pid, p.serving)
	}
	if v := gitOut(t, "describe", "--tags", "--always", "--dirty"); p.serving["version"] != v {
		t.Errorf("serving line version=%q, want %q", p.serving["version"], v)
	}
	if c := gitOut(t, "rev-parse", "HEAD"); p.serving["commit"] != c {
		t.Errorf("serving line commit=%q, want %q", p.serving["commit"], c)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil || string(b) != pid+"\n" {
		t.Fatalf("pid file holds %q (%v), want %q", b, err, pid+"\n")
	}

	// A second sidecar on the same pid file: refused, the file untouched.
	out, err := exec.Command(sidecarBinary(t), "--backend", "memory:", "--listen", "127.0.0.1:0", "--pidfile", pidFile).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("second sidecar: %v, want exit 2\n%s", err, out)
	}
	if want := "sidecar: --pidfile " + pidFile + " names process " + pid + ", which is running"; !strings.HasPrefix(string(out), want) {
		t.Errorf("second sidecar said %q, want %q…", out, want)
	}
	if b, _ := os.ReadFile(pidFile); string(b) != pid+"\n" {
		t.Errorf("the refused sidecar changed the pid file to %q", b)
	}

	// Stopped by its pid, as the README says: kill -INT "$(cat pidfile)".
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30 s after SIGINT")
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file left after a clean exit: %v", err)
	}

	// A pid file left by a process that is gone (the one just stopped) is
	// stale: the next sidecar takes it over, through PK_PIDFILE.
	if err := os.WriteFile(pidFile, []byte(pid+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PK_PIDFILE", pidFile)
	q := startBinary(t)
	if b, _ := os.ReadFile(pidFile); string(b) != strconv.Itoa(q.cmd.Process.Pid)+"\n" {
		t.Errorf("stale pid file not replaced: %q", b)
	}
}

// TestBuildInfoMetric: /metrics carries prepkey_build_info with the
// stamped version and commit and the Go version; INFO server's
// prepkey_version is the stamped version.
func TestBuildInfoMetric(t *testing.T) {
	p := startBinary(t, "--admin-listen", "127.0.0.1:0")
	if p.admin == "" {
		t.Fatal("no admin address logged")
	}
	c, err := net.Dial("tcp", p.serving["listen"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		t.Fatal(err)
	}
	info := bufio.NewReader(c)
	head, err := info.ReadString('\n')
	if err != nil || head[0] != '$' {
		t.Fatalf("INFO server: %q %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, n)
	if _, err := io.ReadFull(info, body); err != nil {
		t.Fatal(err)
	}
	if want := "\r\nprepkey_version:" + gitOut(t, "describe", "--tags", "--always", "--dirty") + "\r\n"; !strings.Contains(string(body), want) {
		t.Errorf("INFO server lacks %q:\n%s", want, body)
	}

	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ = io.ReadAll(resp.Body)
	want := `prepkey_build_info{backend="memory",commit="` + gitOut(t, "rev-parse", "HEAD") + `",goversion="` + runtime.Version() +
		`",version="` + gitOut(t, "describe", "--tags", "--always", "--dirty") + `"} 1` + "\n"
	if !strings.Contains(string(body), want) {
		t.Errorf("/metrics lacks %q:\n%s", want, regexp.MustCompile(`(?m)^prepkey_build_info.*$`).FindString(string(body)))
	}
}
