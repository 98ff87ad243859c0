package schedule

import (
	"strings"
	"testing"
	"time"
)

// mustParse parses a schedule the test expects to be valid.
func mustParse(t *testing.T, typ, expr, tz string) *Schedule {
	t.Helper()
	s, err := Parse(typ, expr, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q, %q): %v", typ, expr, tz, err)
	}
	return s
}

// ts parses an RFC 3339 instant written in a test table.
func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	return v
}

// utcList renders instants in UTC so that failures read as tables.
func utcList(times []time.Time) string {
	parts := make([]string, len(times))
	for i, v := range times {
		parts[i] = v.UTC().Format(time.RFC3339)
	}
	return strings.Join(parts, " ")
}

// assertNextN checks NextN against a space-separated list of UTC instants
// and that every returned time is in UTC.
func assertNextN(t *testing.T, s *Schedule, after time.Time, want string) {
	t.Helper()
	n := len(strings.Fields(want))
	got := s.NextN(after, n)
	if g := utcList(got); g != want {
		t.Errorf("%v NextN(%s, %d):\n got  %s\n want %s", s, after.Format(time.RFC3339Nano), n, g, want)
	}
	prev := after
	for _, v := range got {
		if v.Location() != time.UTC {
			t.Errorf("%v: fire time %v is not in UTC", s, v)
		}
		if !v.After(prev) {
			t.Errorf("%v: fire time %v is not after %v", s, v, prev)
		}
		prev = v
	}
}

// nextCase is a row of a fire-times table: a schedule's expression and
// zone, the instant after which to look and the fires it must give, in
// UTC, space-separated (assertNextN).
type nextCase struct{ name, expr, tz, after, want string }

// checkNext checks every row of a table of schedules of type typ as a
// subtest.
func checkNext(t *testing.T, typ string, cases []nextCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assertNextN(t, mustParse(t, typ, c.expr, c.tz), ts(t, c.after), c.want)
		})
	}
}

func loadZoneT(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}
