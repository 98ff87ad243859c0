package localpg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ErrBinariesNotFound is returned (possibly wrapped) by FindBinaries and Start
// when no PostgreSQL server binaries can be found. Its text tells the reader
// exactly what to install, because the usual reader is a developer running
// `make test` on a fresh machine who should not have to read this package to
// find out.
var ErrBinariesNotFound = errors.New("PostgreSQL server binaries not found (initdb, pg_ctl): " +
	"install them with `apt-get install -y postgresql` (Debian/Ubuntu) or set JETJOB_PG_BIN")

// debianPGRoot is where Debian and Ubuntu put the server binaries, one
// directory per major version. They are deliberately not on PATH there
// (only the pg_wrapper client tools are), so looking on PATH alone would miss
// the most common installation.
var debianPGRoot = "/usr/lib/postgresql"

// FindBinaries returns the directory holding initdb and pg_ctl.
//
// It looks, in order, at $JETJOB_PG_BIN, at the newest
// /usr/lib/postgresql/<version>/bin, and at the directory of pg_ctl on PATH.
// An explicitly set JETJOB_PG_BIN that lacks the binaries is an error rather
// than a reason to fall back: silently using some other PostgreSQL than the
// one asked for would make version-specific failures very confusing.
func FindBinaries() (string, error) {
	if dir := os.Getenv("JETJOB_PG_BIN"); dir != "" {
		if hasServerBinaries(dir) {
			return filepath.Clean(dir), nil
		}
		return "", fmt.Errorf("JETJOB_PG_BIN=%s has no initdb and pg_ctl: %w", dir, ErrBinariesNotFound)
	}
	for _, dir := range debianBinDirs() {
		if hasServerBinaries(dir) {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if dir := filepath.Dir(p); hasServerBinaries(dir) {
			return dir, nil
		}
	}
	return "", ErrBinariesNotFound
}

// debianBinDirs lists /usr/lib/postgresql/*/bin, newest major version first.
// Versions are compared numerically so that 10 sorts above 9.6.
func debianBinDirs() []string {
	matches, _ := filepath.Glob(filepath.Join(debianPGRoot, "*", "bin"))
	sort.SliceStable(matches, func(i, j int) bool {
		return versionLess(filepath.Base(filepath.Dir(matches[j])), filepath.Base(filepath.Dir(matches[i])))
	})
	return matches
}

// versionLess compares dotted version strings numerically; a part that is
// not a number sorts below any number.
func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		na, errA := strconv.Atoi(pa[i])
		nb, errB := strconv.Atoi(pb[i])
		switch {
		case errA != nil && errB == nil:
			return true
		case errA == nil && errB != nil:
			return false
		case errA != nil && errB != nil:
			if pa[i] != pb[i] {
				return pa[i] < pb[i]
			}
		case na != nb:
			return na < nb
		}
	}
	return len(pa) < len(pb)
}

func hasServerBinaries(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "pg_ctl"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
