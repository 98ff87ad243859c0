// Package configtest checks a component's configuration validation the one
// way every component's tests want it: Validate's message names the wrong
// field, and the constructor refuses exactly what Validate refuses.
package configtest

import (
	"strings"
	"testing"
)

// Cases is a Validate table: each case a name, a configuration and the
// start of the message Validate must give for it ("" for a valid one).
type Cases[C any] = []struct {
	Name   string
	Config C
	Want   string
}

// Validator is a component's tuning configuration.
type Validator interface{ Validate() error }

// Run checks every case as a subtest: Validate's message starts with Want
// (nil when Want is ""), and construct, which builds the component from the
// same configuration, fails exactly when Validate does. A case is a name, a
// configuration and the start of the message Validate must give for it.
//
// The zero configuration is always checked first, as valid: every
// component reads its zero values as its defaults, so that is one rule for
// all of them, not a case each table has to remember.
func Run[C Validator](t *testing.T, cases Cases[C], construct func(C) error) {
	t.Helper()
	var zero C
	cases = append(Cases[C]{{"zero", zero, ""}}, cases...)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := c.Config.Validate()
			switch {
			case c.Want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case c.Want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.Want)):
				t.Errorf("Validate() = %v, want an error starting %q", err, c.Want)
			}
			if nerr := construct(c.Config); (nerr == nil) != (err == nil) {
				t.Errorf("New refused with %v where Validate said %v", nerr, err)
			}
		})
	}
}

// WantErr checks an error of loading or validating settings against the
// parts its message must hold: none means no error, else an error that
// holds each of wants (each one missing is reported).
func WantErr(t testing.TB, err error, wants ...string) {
	t.Helper()
	if len(wants) == 0 {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one holding %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
