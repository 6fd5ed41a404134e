// Package version decides which version of prepkey is running, in one
// place: --version, the start log line, INFO's prepkey_version and the
// prepkey_build_info metric all read Get.
//
// A release build stamps the version and commit with the linker
// (scripts/build-sidecar.sh, the Dockerfile and .goreleaser.yaml pass
// `git describe --tags --always --dirty` and `git rev-parse HEAD`):
//
//	-ldflags "-X github.com/prepkey/prepkey/internal/version.version=v0.2.0 -X github.com/prepkey/prepkey/internal/version.commit=3e49e5b…"
//
// A build that was not stamped falls back on what the Go toolchain records
// in the binary (debug.ReadBuildInfo): the module's version for
// `go install github.com/prepkey/prepkey/cmd/sidecar@v0.2.0`, else the VCS
// revision of a `go build` in a checkout, else "devel".
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker (-X); empty in a plain `go build`.
var (
	version string
	commit  string
)

// Info is what a binary knows of its own build.
type Info struct {
	Version   string // v0.2.0, v0.2.0-3-g3e49e5b-dirty, a module version, or "devel"
	Commit    string // the full VCS revision, "" when unknown
	GoVersion string // the toolchain that built it, e.g. go1.26.8
}

// Get is this binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
}

// resolve decides Info from the linker's stamps and the toolchain's record
// (bi, nil when the binary has none).
func resolve(stampedVersion, stampedCommit string, bi *debug.BuildInfo) Info {
	info := Info{Version: stampedVersion, Commit: stampedCommit, GoVersion: runtime.Version()}
	if bi == nil {
		if info.Version == "" {
			info.Version = "devel"
		}
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	var revision string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if info.Commit == "" {
		info.Commit = revision
	}
	switch {
	case info.Version != "":
	// "(devel)" is what the toolchain records for a main module built
	// from a directory it could not version.
	case bi.Main.Version != "" && bi.Main.Version != "(devel)":
		info.Version = bi.Main.Version
	case revision != "":
		info.Version = "devel-" + short(revision)
		if modified {
			info.Version += "-dirty"
		}
	default:
		info.Version = "devel"
	}
	return info
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is the line --version prints:
//
//	prepkey v0.2.0 commit 3e49e5b0c1d2… go1.26.8 linux/amd64
func (i Info) String() string {
	c := i.Commit
	if c == "" {
		c = "unknown"
	}
	return fmt.Sprintf("prepkey %s commit %s %s %s/%s", i.Version, c, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}
