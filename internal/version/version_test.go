package version

import (
	"encoding/json"
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-20T09:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	source := &debug.BuildInfo{Main: debug.Module{Path: module, Version: Devel}, Settings: vcs}
	for _, c := range []struct {
		name                 string
		bi                   *debug.BuildInfo
		xVersion, xCommit, x string
		want                 Info
		str, short           string
	}{
		{
			name: "source tree", bi: source,
			want:  Info{Version: Devel, Commit: "0123456789abcdef0123456789abcdef01234567", Modified: true, Date: "2026-11-20T09:00:00Z"},
			str:   "(devel) (commit 0123456789ab-dirty, 2026-11-20T09:00:00Z)",
			short: "(devel) 0123456789ab-dirty",
		},
		{
			name: "Makefile build", bi: source, xVersion: "v1.2.0-3-gabcdef1-dirty", xCommit: "abcdef1234567890", x: "2026-11-23T10:00:00Z",
			want:  Info{Version: "v1.2.0-3-gabcdef1-dirty", Commit: "abcdef1234567890", Modified: true, Date: "2026-11-23T10:00:00Z"},
			str:   "v1.2.0-3-gabcdef1-dirty (commit abcdef123456-dirty, 2026-11-23T10:00:00Z)",
			short: "v1.2.0-3-gabcdef1-dirty",
		},
		{
			name: "go install module@version", bi: &debug.BuildInfo{Main: debug.Module{Path: module, Version: "v1.3.0"}},
			want: Info{Version: "v1.3.0"}, str: "v1.3.0", short: "v1.3.0",
		},
		{
			name: "worker SDK in a user's service",
			bi: &debug.BuildInfo{Main: debug.Module{Path: "example.com/svc", Version: "v0.1.0"},
				Deps: []*debug.Module{{Path: "github.com/other/x", Version: "v9.9.9"}, {Path: module, Version: "v1.1.0"}}},
			want: Info{Version: "v1.1.0"}, str: "v1.1.0", short: "v1.1.0",
		},
		{
			name: "no build information", bi: nil,
			want: Info{Version: Devel}, str: Devel, short: Devel,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := fromBuild(c.bi, c.xVersion, c.xCommit, c.x)
			if got != c.want {
				t.Errorf("fromBuild = %+v, want %+v", got, c.want)
			}
			if s := got.String(); s != c.str {
				t.Errorf("String = %q, want %q", s, c.str)
			}
			if s := got.Short(); s != c.short {
				t.Errorf("Short = %q, want %q", s, c.short)
			}
		})
	}
}

// /healthz reports these names.
func TestJSON(t *testing.T) {
	b, err := json.Marshal(Info{Version: "v1.2.0", Commit: "abc", Date: "2026-11-23T10:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":"v1.2.0","commit":"abc","date":"2026-11-23T10:00:00Z"}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}
