// Package version says which build of jetjob a process is: its version,
// commit and build date, for --version, the scheduler's /healthz and the
// worker registry.
//
// The values come from the build information Go stamps into every binary
// (the module version, vcs.revision, vcs.time, vcs.modified), overridden
// by what the Makefile's build target sets with
//
//	-ldflags "-X github.com/jetjob/jetjob/internal/version.version=$(git describe --tags --always --dirty)
//	          -X github.com/jetjob/jetjob/internal/version.commit=$(git rev-parse HEAD)
//	          -X github.com/jetjob/jetjob/internal/version.date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
//
// Both are needed: go build stamps no module version for a build from a
// source tree ("(devel)") and no VCS data when built without the .git
// directory (a container build context, -buildvcs=false), while a plain
// `go install module@version` or a user's service importing the worker SDK
// has no -X flags but a proper module version.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// module is the path whose version a binary reports (its main module, or a
// dependency when the worker SDK is built into a user's service).
const module = "github.com/jetjob/jetjob"

// Devel is the version of a build that has none: a source tree built
// without the Makefile.
const Devel = "(devel)"

// Set by -ldflags -X (see the package comment); empty otherwise.
var (
	version string
	commit  string
	date    string
)

// Info describes a build. Its JSON form is what /healthz reports.
type Info struct {
	// Version is a release tag (v1.2.0), git describe's output
	// (v1.2.0-3-gabc1234-dirty), or "(devel)".
	Version string `json:"version"`
	// Commit is the full VCS revision, "" when unknown.
	Commit string `json:"commit,omitempty"`
	// Modified reports uncommitted changes in the tree that was built
	// (known only from Go's VCS stamp).
	Modified bool `json:"modified,omitempty"`
	// Date is the build date set by the Makefile, else the commit's time
	// from Go's VCS stamp (RFC 3339), "" when unknown.
	Date string `json:"date,omitempty"`
}

// Get returns this binary's build.
var Get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuild(bi, version, commit, date)
})

// fromBuild combines Go's build information (nil when the binary has none)
// with the -X overrides.
func fromBuild(bi *debug.BuildInfo, xVersion, xCommit, xDate string) Info {
	var i Info
	if bi != nil {
		if bi.Main.Path == module {
			i.Version = bi.Main.Version
		} else {
			for _, d := range bi.Deps {
				if d.Path == module {
					i.Version = d.Version
					if d.Replace != nil && d.Replace.Version != "" {
						i.Version = d.Replace.Version
					}
					break
				}
			}
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.Date = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if i.Version == "" {
		i.Version = Devel
	}
	if xVersion != "" {
		i.Version = xVersion
	}
	if xCommit != "" {
		i.Commit = xCommit
	}
	if xDate != "" {
		i.Date = xDate
	}
	return i
}

// String is the one-line form --version prints:
// "v1.2.0 (commit 0123456789ab, 2026-11-23T10:00:00Z)".
func (i Info) String() string {
	s := i.Version
	var extra string
	if i.Commit != "" {
		extra = "commit " + i.Commit[:min(12, len(i.Commit))]
		if i.Modified {
			extra += "-dirty"
		}
	}
	if i.Date != "" {
		if extra != "" {
			extra += ", "
		}
		extra += i.Date
	}
	if extra != "" {
		s += " (" + extra + ")"
	}
	return s
}

// Short is the version for places with little room (the worker registry):
// the version, or for a "(devel)" build its short commit, so that two
// development builds can still be told apart.
func (i Info) Short() string {
	if i.Version != Devel || i.Commit == "" {
		return i.Version
	}
	dirty := ""
	if i.Modified {
		dirty = "-dirty"
	}
	return fmt.Sprintf("%s %s%s", Devel, i.Commit[:min(12, len(i.Commit))], dirty)
}

// Collector is the gauge jetjob_build_info{version,commit,go_version} = 1,
// for every binary's /metrics: a dashboard counts instances per version
// during a rollout, and an alert can compare the versions in a cluster.
func Collector() prometheus.Collector {
	i := Get()
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "jetjob_build_info",
		Help: "The build this process runs (always 1): its version, VCS commit and Go version.",
		ConstLabels: prometheus.Labels{
			"version": i.Version, "commit": i.Commit, "go_version": runtime.Version(),
		},
	}, func() float64 { return 1 })
}

// Healthz is the /healthz document of every jetjob binary:
// {"status":"ok","version":…,"commit":…,"date":…}. The build is there,
// unauthenticated like the rest of /healthz, so that a rollout can be
// followed instance by instance.
type Healthz struct {
	Status string `json:"status"`
	Info
}

// OK is the /healthz document of a live process of this build.
func OK() Healthz { return Healthz{Status: "ok", Info: Get()} }
