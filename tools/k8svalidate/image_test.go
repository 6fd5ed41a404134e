package k8svalidate

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDockerfile builds the binary exactly as the Dockerfile does (and
// scripts/build-sidecar.sh with the same flags) and checks it is static (no
// ELF interpreter, no dynamic libraries) and stamped with the version it is
// given, that the build stage cross-compiles on the builder's platform for
// TARGETOS/TARGETARCH, that every base is pinned by digest, that the image
// is distroless and non-root, and that its healthcheck is the sidecar's own
// --check (the image has no shell).
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	m := regexp.MustCompile(`RUN (CGO_ENABLED=0 GOOS=\$TARGETOS GOARCH=\$TARGETARCH go build ([^\n&]*?)) -o /out/sidecar (\./cmd/sidecar)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatalf("no static go build for TARGETOS/TARGETARCH in the Dockerfile")
	}
	const pkg = "github.com/prepkey/prepkey/internal/version"
	image := shellWords(t, "VERSION=V COMMIT=C", m[2])
	want := []string{"-trimpath", "-ldflags=-s -w -X " + pkg + ".version=V -X " + pkg + ".commit=C"}
	if !slices.Equal(image, want) {
		t.Errorf("the Dockerfile builds with %q, want %q", image, want)
	}
	// scripts/build-sidecar.sh, which `make build` and every measuring
	// script use, builds with the same flags, so that their figures are
	// the image's binary's.
	sb, err := os.ReadFile("../../scripts/build-sidecar.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(sb)
	line := regexp.MustCompile(`(?m)^CGO_ENABLED=0 go build (.*)$`).FindStringSubmatch(script)
	if line == nil || !strings.Contains(script, "\npkg="+pkg+"\n") {
		t.Fatal("scripts/build-sidecar.sh has no CGO_ENABLED=0 go build line stamping " + pkg)
	}
	var flags []string
	words := shellWords(t, "pkg="+pkg+" version=V commit=C src=S out=O", line[1])
	for i := 0; i < len(words); i++ {
		switch words[i] {
		case "-C", "-o": // where it builds from and to
			i++
		case "./cmd/sidecar":
		default:
			flags = append(flags, words[i])
		}
	}
	if !slices.Equal(flags, image) {
		t.Errorf("scripts/build-sidecar.sh builds with %q, the Dockerfile with %q", flags, image)
	}

	for _, want := range []string{
		"FROM --platform=$BUILDPLATFORM golang:1.26-bookworm@sha256:",
		"ARG TARGETOS TARGETARCH VERSION COMMIT\n",
		"FROM gcr.io/distroless/static-debian12:nonroot@sha256:",
		"USER 65532:65532",
		`CMD ["/usr/local/bin/sidecar", "--check"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	// Every base by digest, with its tag beside it for the reader and
	// for Dependabot.
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)
	froms := regexp.MustCompile(`(?m)^FROM (?:--platform=\S+ )?(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) != 2 {
		t.Errorf("want a build and a final stage, got %d FROM lines", len(froms))
	}
	for _, f := range froms {
		if !pinned.MatchString(f[1]) {
			t.Errorf("FROM %s: not image:tag@sha256:digest", f[1])
		}
	}

	out := filepath.Join(t.TempDir(), "sidecar")
	goos, goarch := goEnv(t, "GOOS"), goEnv(t, "GOARCH")
	cmd := exec.Command("sh", "-c", strings.Replace(m[1], "go build", "go build -o "+out, 1)+" "+m[3])
	cmd.Dir = "../.."
	const commit = "0123456789abcdef0123456789abcdef01234567"
	cmd.Env = append(os.Environ(), "TARGETOS="+goos, "TARGETARCH="+goarch, "VERSION=v9.9.9-test", "COMMIT="+commit)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, b)
	}
	f, err := elf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is not static: it has a %s segment", p.Type)
		}
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary keeps its symbol table: -s did not apply")
	}
	v, err := exec.Command(out, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", out, err)
	}
	if want := "prepkey v9.9.9-test commit " + commit + " "; !strings.HasPrefix(string(v), want) {
		t.Errorf("--version printed %q, want %q…", v, want)
	}
	fi, _ := os.Stat(out)
	t.Logf("binary size: %d bytes", fi.Size())
}

// shellWords is the words sh makes of args with vars (name=value ...) set.
func shellWords(t *testing.T, vars, args string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", vars+`; printf '%s\n' `+args).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
}

func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerignore: the build context leaves out what the image never
// compiles (the VCS, other modules, the clients and their dependencies,
// build outputs, caches), and keeps every package the sidecar is built
// from.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && line[0] != '#' {
			patterns = append(patterns, line)
		}
	}
	for _, want := range []string{".git", "bin", "dist", "tools", "clients", "**/node_modules", "**/__pycache__",
		"**/*.egg-info", "**/.venv", "**/*.wasm", "prepkey-data", ".cache"} {
		if !slices.Contains(patterns, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	ignored := func(path string) string {
		for _, p := range patterns {
			if p[0] == '!' {
				continue
			}
			if rest, ok := strings.CutPrefix(p, "**/"); ok {
				for _, c := range strings.Split(path, "/") {
					if ok, _ := filepath.Match(rest, c); ok {
						return p
					}
				}
				continue
			}
			parts := strings.Split(path, "/")
			for i := 1; i <= len(parts); i++ {
				if ok, _ := filepath.Match(p, strings.Join(parts[:i], "/")); ok {
					return p
				}
			}
		}
		return ""
	}
	if p := ignored("node_modules"); p == "" {
		t.Error("the check itself does not see node_modules ignored")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.Dir}}{{end}}", "./cmd/sidecar")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs("../..")
	needed := []string{"go.mod", "go.sum"}
	for _, d := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(d, root+"/"); ok {
			needed = append(needed, rel)
		}
	}
	if len(needed) < 5 {
		t.Fatalf("the sidecar's own packages not found: %q", needed)
	}
	for _, n := range needed {
		if p := ignored(n); p != "" {
			t.Errorf("%s is needed by the build but .dockerignore's %s leaves it out", n, p)
		}
	}
}

// TestComposeHealthchecks: every sidecar service of docker-compose.yml
// checks itself with --check.
func TestComposeHealthchecks(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Build       any `json:"build"`
			Healthcheck struct {
				Test []string `json:"test"`
			} `json:"healthcheck"`
		} `json:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, s := range compose.Services {
		if s.Build == nil {
			continue // redis, mongo: their own images
		}
		n++
		if strings.Join(s.Healthcheck.Test, " ") != "CMD /usr/local/bin/sidecar --check" {
			t.Errorf("%s: healthcheck %v", name, s.Healthcheck.Test)
		}
	}
	if n == 0 {
		t.Error("no sidecar service")
	}
}
