package cmdmain

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	hint := Options{UsageHint: "Run 'x --help' for the settings."}
	for _, tc := range []struct {
		name string
		err  error
		o    Options
		code int
		out  string
	}{
		{"success", nil, hint, ExitOK, ""},
		{"failure", errors.New("nats down"), hint, ExitError, "x: nats down\n"},
		{"usage, wrapped", fmt.Errorf("config: %w", UsageError{Err: errors.New("bad --group")}), Options{}, ExitUsage, "x: config: bad --group\n"},
		{"usage with a hint", UsageError{Err: errors.New("bad --group")}, hint, ExitUsage, "x: bad --group\nRun 'x --help' for the settings.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			if code := Report(&b, "x", tc.err, tc.o); code != tc.code || b.String() != tc.out {
				t.Errorf("Report = %d, %q; want %d, %q", code, b.String(), tc.code, tc.out)
			}
		})
	}
}
