// Package configtest checks a component's configuration validation the one
// way every component's tests want it: Validate's message names the wrong
// field, and the constructor refuses exactly what Validate refuses.
package configtest

import (
	"strings"
	"testing"
)

// Check runs one case of a Validate table. want is "" for a valid config,
// else the start of Validate's message; construct builds the component
// from the same config and must fail exactly when Validate does.
func Check(t *testing.T, want string, validate, construct func() error) {
	t.Helper()
	err := validate()
	switch {
	case want == "" && err != nil:
		t.Errorf("Validate() = %v, want nil", err)
	case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
		t.Errorf("Validate() = %v, want an error starting %q", err, want)
	}
	if nerr := construct(); (nerr == nil) != (err == nil) {
		t.Errorf("New refused with %v where Validate said %v", nerr, err)
	}
}
