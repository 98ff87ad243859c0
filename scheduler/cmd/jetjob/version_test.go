package main

import (
	"testing"

	"github.com/jetjob/jetjob/internal/version"
)

// --version prints the build and needs no API.
func TestVersion(t *testing.T) {
	code, out, errOut := cli(t, "--version")
	if want := "jetjob " + version.Get().String() + "\n"; code != exitOK || out != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d and %q", code, out, errOut, exitOK, want)
	}
}
