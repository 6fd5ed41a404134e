package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// TestUnits: sizes and durations are read and shown in human units.
func TestUnits(t *testing.T) {
	for in, want := range map[string]string{
		"67108864": "64MiB", "64MiB": "64MiB", "64mib": "64MiB", "1GiB": "1GiB", "1536": "1536B",
		"2KB": "2KB", "1000000": "1MB", "0": "0", "3 TiB": "3TiB", "65536": "64KiB",
	} {
		var b byteSize
		if err := b.Set(in); err != nil {
			t.Fatalf("Set(%q): %v", in, err)
		}
		if got := b.String(); got != want {
			t.Errorf("Set(%q).String() = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"24h": "24h", "86400s": "24h", "2s": "2s", "90s": "1m30s", "5m": "5m",
		"1h5m": "1h5m", "0": "0s", "250ms": "250ms", "1h0m5s": "1h0m5s"} {
		var d duration
		if err := d.Set(in); err != nil {
			t.Fatalf("Set(%q): %v", in, err)
		}
		if got := d.String(); got != want {
			t.Errorf("duration Set(%q).String() = %q, want %q", in, got, want)
		}
	}
	// --timeout: a bare number is seconds, as Redis's timeout.
	for in, want := range map[string]time.Duration{"300": 300 * time.Second, "300s": 300 * time.Second, "5m": 5 * time.Minute, "0": 0, "1500ms": 1500 * time.Millisecond} {
		var s seconds
		if err := s.Set(in); err != nil {
			t.Fatalf("seconds Set(%q): %v", in, err)
		}
		if time.Duration(s) != want {
			t.Errorf("seconds Set(%q) = %s, want %s", in, time.Duration(s), want)
		}
	}
	for _, bad := range []string{"soon", "5 parsecs", "-1", "1.5s5"} {
		var s seconds
		if bad != "-1" && s.Set(bad) == nil {
			t.Errorf("seconds Set(%q) accepted", bad)
		}
		var b byteSize
		if b.Set(bad) == nil {
			t.Errorf("byteSize Set(%q) accepted", bad)
		}
	}
	c, err := parseConfig([]string{"--timeout", "-1"}, noEnv, nil)
	if err == nil || err.Error() != "--timeout must not be negative, got -1s" {
		t.Errorf("--timeout -1: %v (%v)", err, c.idleTimeout)
	}
}

// TestHelpUnits: --help shows the defaults in the units one writes.
func TestHelpUnits(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, noEnv, &out); err != errHelp {
		t.Fatal(err)
	}
	for _, want := range []string{"(default 64MiB)", "(default 24h)", "(default 2s)", "(default 1KiB)", "(default 64KiB)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	for _, not := range []string{"67108864", "24h0m0s", "65536"} {
		if strings.Contains(out.String(), not) {
			t.Errorf("--help shows %q", not)
		}
	}
}

// TestCheckNotFromEnv: PK_CHECK does not turn the server into a probe.
func TestCheckNotFromEnv(t *testing.T) {
	c, err := parseConfig(nil, envOf("PK_CHECK", "true"), nil)
	if err != nil || c.checkOnly {
		t.Fatalf("PK_CHECK=true: checkOnly %v, err %v", c.checkOnly, err)
	}
	c, err = parseConfig([]string{"--check"}, noEnv, nil)
	if err != nil || !c.checkOnly {
		t.Fatalf("--check: checkOnly %v, err %v", c.checkOnly, err)
	}
}

func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pass := write("pass", "s3cret\n")
	url := write("url", "redis://:pw@localhost:6379/0\r\n")
	empty := write("empty", "\n")
	two := write("two", "a\nb\n")

	c, err := parseConfig(nil, envOf("PK_REQUIREPASS_FILE", pass, "PK_BACKEND_FILE", url), nil)
	if err != nil || c.requirePass != "s3cret" || c.backendURL != "redis://:pw@localhost:6379/0" {
		t.Fatalf("from PK_*_FILE: %q %q %v", c.requirePass, c.backendURL, err)
	}
	c, err = parseConfig([]string{"--requirepass-file", pass}, envOf("PK_REQUIREPASS", "env"), nil)
	if err != nil || c.requirePass != "s3cret" {
		t.Fatalf("flag file over env value: %q %v", c.requirePass, err)
	}
	c, err = parseConfig([]string{"--requirepass", "flag"}, envOf("PK_REQUIREPASS_FILE", pass), nil)
	if err != nil || c.requirePass != "flag" {
		t.Fatalf("flag value over env file: %q %v", c.requirePass, err)
	}
	for _, tt := range []struct {
		args []string
		env  func(string) string
		want string
	}{
		{[]string{"--requirepass", "x", "--requirepass-file", pass}, noEnv, "--requirepass and --requirepass-file are both set (as flags or as PK_REQUIREPASS and PK_REQUIREPASS_FILE): set one"},
		{nil, envOf("PK_BACKEND", "memory:", "PK_BACKEND_FILE", url), "--backend and --backend-file are both set (as flags or as PK_BACKEND and PK_BACKEND_FILE): set one"},
		{[]string{"--requirepass-file", empty}, noEnv, "--requirepass-file: " + empty + " is empty"},
		{[]string{"--requirepass-file", two}, noEnv, "--requirepass-file: " + two + " holds more than one line"},
		{[]string{"--backend-file", dir + "/none"}, noEnv, "--backend-file: open " + dir + "/none: no such file or directory"},
	} {
		if _, err := parseConfig(tt.args, tt.env, nil); err == nil || err.Error() != tt.want {
			t.Errorf("%v: got %v, want %s", tt.args, err, tt.want)
		}
	}
}

func TestUnknownEnv(t *testing.T) {
	c, err := parseConfig(nil, noEnv, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := unknownEnv([]string{"PATH=/bin", "PK_BACKNED=memory:", "PK_LISTEN=x", "PK_MAX_VALUE_BYTE=1",
		"PK_CHECK=true", "PK_ZZZ=1", "PK_REQUIREPASS_FILE=/x"}, c.flagNames)
	want := []string{
		"PK_CHECK is ignored: --check is a flag only (the server would otherwise become a one-shot healthcheck)",
		"unknown environment variable PK_BACKNED ignored (did you mean PK_BACKEND?)",
		"unknown environment variable PK_MAX_VALUE_BYTE ignored (did you mean PK_MAX_VALUE_BYTES?)",
		"unknown environment variable PK_ZZZ ignored",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestProtectedMode(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		refused bool
	}{
		{[]string{"--listen", "0.0.0.0:6380"}, true},
		{[]string{"--listen", ":6380"}, true},
		{[]string{"--listen", "[::]:6380"}, true},
		{[]string{"--listen", "10.1.2.3:6380"}, true},
		{[]string{"--listen", "127.0.0.1:6380"}, false},
		{[]string{"--listen", "[::1]:6380"}, false},
		{[]string{"--listen", "localhost:6380"}, false}, // judged once listening
		{[]string{"--listen", "unix:/tmp/x.sock"}, false},
		{[]string{"--listen", "0.0.0.0:6380", "--requirepass", "x"}, false},
		{[]string{"--listen", "0.0.0.0:6380", "--protected-mode", "no"}, false},
	} {
		c, err := parseConfig(tt.args, noEnv, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.checkProtectedListen()
		if (err != nil) != tt.refused {
			t.Errorf("%v: refused %v, want %v", tt.args, err, tt.refused)
		}
	}
	c, _ := parseConfig([]string{"--listen", "localhost:6380"}, noEnv, nil)
	if err := c.checkProtectedAddr(&net.TCPAddr{IP: net.IPv4(192, 168, 1, 2), Port: 6380}); err == nil {
		t.Error("a host name resolving to 192.168.1.2: not refused")
	}
	if err := c.checkProtectedAddr(&net.TCPAddr{IP: net.IPv6loopback, Port: 6380}); err != nil {
		t.Error(err)
	}
	if _, err := parseConfig([]string{"--protected-mode", "off"}, noEnv, nil); err == nil || err.Error() != `--protected-mode must be yes or no, got "off"` {
		t.Error(err)
	}
}

// TestMalformedBackendURLs: a URL that cannot be what was meant is refused
// at start, with its reason, before anything is dialled.
func TestMalformedBackendURLs(t *testing.T) {
	for url, want := range map[string]string{
		"redis://:pw@[::1":        `--backend: redis: invalid URL "redis://:xxxxx@[::1": bad host "[::1": an IPv6 address is [addr] or [addr]:port`,
		"redis://::1":             `--backend: redis: invalid URL "redis://::1": bad host "::1": want host:port, or [addr]:port for an IPv6 address`,
		"redis://[nothost]:6379":  `--backend: redis: invalid URL "redis://[nothost]:6379": bad host "[nothost]:6379": not an IPv6 address in brackets`,
		"redis://[host]":          `--backend: redis: invalid URL "redis://[host]": bad host "[host]": not an IPv6 address in brackets`,
		"redis://host:":           `--backend: redis: invalid URL "redis://host:": bad port in "host:"`,
		"redis://host:99999":      `--backend: redis: invalid URL "redis://host:99999": bad port in "host:99999"`,
		"redis://host:1:2":        `--backend: redis: invalid URL "redis://host:1:2": bad host "host:1:2": want host:port, or [addr]:port for an IPv6 address`,
		"redis://":                `--backend: redis: invalid URL "redis://": empty host`,
		"redis://host#frag":       `--backend: redis: invalid URL "redis://host#frag": bad host "host#frag"`,
		"redis://host/0/1":        `--backend: redis: invalid URL "redis://host/0/1": unexpected path "0/1"`,
		"redis://host/x":          `--backend: redis: invalid URL "redis://host/x": bad database number "x"`,
		"redis://us%zz:pw@host":   `--backend: redis: invalid URL "redis://us%zz:xxxxx@host": bad user name: invalid URL escape "%zz"`,
		"redis://host?tls=1":      `--backend: redis: invalid URL "redis://host?tls=1": unknown parameter "tls"`,
		"rediss://:pw@[::1":       `--backend: redis: invalid URL "rediss://:xxxxx@[::1": bad host "[::1": an IPv6 address is [addr] or [addr]:port`,
		"rediss://h:6379,h2:6379": `--backend: redis: invalid URL "rediss://h:6379,h2:6379": one host expected`,
		"redis+sentinel://h1,h2":  `--backend: redis: invalid URL "redis+sentinel://h1,h2": the master name is missing`,
		"mongodb://[::1":          `--backend: mongo: invalid URL: `,
		"mongodb://host:port":     `--backend: mongo: invalid URL: `,
		"mongodb://":              `--backend: mongo: invalid URL: `,
		"mongodb://h/db?w=0":      `--backend: mongo: invalid URL: an unacknowledged write concern (w=0)`,
		"file:":                   `--backend file: needs a directory, e.g. file:./prepkey-data`,
		"file://":                 `--backend file://: a file: URL names a local directory`,
		"file://data/x":           `--backend file://data/x: a file: URL names a local directory: file:DIR or file:///absolute/dir`,
		"file:/tmp/x?sync=1":      `--backend file:/tmp/x?sync=1: a file: URL takes no query or fragment (? or #)`,
	} {
		t.Run(url, func(t *testing.T) {
			c, err := parseConfig([]string{"--backend", url}, noEnv, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			o, err := openBackend(ctx, c, slog.New(slog.DiscardHandler))
			if err == nil {
				o.store.Close()
				t.Fatalf("accepted")
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("got  %v\nwant %s…", err, want)
			}
		})
	}
}
