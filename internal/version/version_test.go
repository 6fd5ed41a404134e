package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	const rev = "3e49e5b0c1d2e3f4a5b6c7d8e9f00112233445566"
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name              string
		stamped, stampedC string
		bi                *debug.BuildInfo
		want              Info
	}{
		{"stamped by the linker wins", "v0.2.0-3-g3e49e5b-dirty", "abc",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"}, Settings: vcs("true")},
			Info{"v0.2.0-3-g3e49e5b-dirty", "abc", "go1.26.8"}},
		{"stamped version, commit from vcs", "v0.2.0", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Settings: vcs("false")},
			Info{"v0.2.0", rev, "go1.26.8"}},
		{"go install @v0.2.0: the module version", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Path: "github.com/prepkey/prepkey", Version: "v0.2.0"}},
			Info{"v0.2.0", "", "go1.26.1"}},
		{"go build in a clean checkout", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			Info{"devel-3e49e5b0c1d2", rev, "go1.26.8"}},
		{"go build in an edited checkout", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			Info{"devel-3e49e5b0c1d2-dirty", rev, "go1.26.8"}},
		{"no vcs (-buildvcs=false, a tarball)", "", "",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			Info{"devel", "", "go1.26.8"}},
		{"no build info at all", "", "", nil,
			Info{"devel", "", runtime.Version()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resolve(tc.stamped, tc.stampedC, tc.bi); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	want := "prepkey v0.2.0 commit unknown go1.26.8 " + runtime.GOOS + "/" + runtime.GOARCH
	if got := (Info{Version: "v0.2.0", GoVersion: "go1.26.8"}).String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
