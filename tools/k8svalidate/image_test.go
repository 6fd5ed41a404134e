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
// scripts/build-sidecar.sh with the same flags) and checks it is static (no ELF interpreter, no dynamic libraries), that the
// image is distroless and non-root, and that its healthcheck is the
// sidecar's own --check (the image has no shell).
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	m := regexp.MustCompile(`RUN (CGO_ENABLED=0 go build [^\n&]*?) -o /out/sidecar (\./cmd/sidecar)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatalf("no static go build in the Dockerfile")
	}
	for _, want := range []string{"-trimpath", "-ldflags='-s -w'"} {
		if !strings.Contains(m[1], want) {
			t.Errorf("the build lacks %s: %s", want, m[1])
		}
	}
	// scripts/build-sidecar.sh, which `make build` and every measuring
	// script use, builds with the same flags, so that their figures are
	// the image's binary's.
	sb, err := os.ReadFile("../../scripts/build-sidecar.sh")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^CGO_ENABLED=0 go build .*$`).FindString(string(sb))
	if line == "" {
		t.Error("scripts/build-sidecar.sh has no CGO_ENABLED=0 go build line")
	}
	flag := regexp.MustCompile(`-[A-Za-z]+(?:='[^']*'|=\S+)?`)
	var script []string
	for _, f := range flag.FindAllString(line, -1) {
		if f != "-C" && f != "-o" { // where it builds from and to
			script = append(script, f)
		}
	}
	if image := flag.FindAllString(m[1], -1); !slices.Equal(script, image) {
		t.Errorf("scripts/build-sidecar.sh builds with %q, the Dockerfile with %q", script, image)
	}

	for _, want := range []string{
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"USER 65532:65532",
		`CMD ["/usr/local/bin/sidecar", "--check"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}

	out := filepath.Join(t.TempDir(), "sidecar")
	cmd := exec.Command("sh", "-c", strings.Replace(m[1], "go build", "go build -o "+out, 1)+" "+m[2])
	cmd.Dir = "../.."
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
	fi, _ := os.Stat(out)
	t.Logf("binary size: %d bytes", fi.Size())
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
