package testtier

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records a skip or a failure instead of
// ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                          {}
func (r *recorder) Skip(args ...any)                 { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Skipf(format string, args ...any) { r.skipped = fmt.Sprintf(format, args...) }
func (r *recorder) Fatal(args ...any)                { r.failed = fmt.Sprint(args...) }

// A missing prerequisite skips, naming the make target, unless
// JETJOB_TEST_REQUIRED asks for a failure.
func TestMissing(t *testing.T) {
	for _, c := range []struct {
		env  string
		fail bool
	}{{"", false}, {"0", false}, {"false", false}, {"1", true}, {"true", true}} {
		t.Setenv(RequiredEnv, c.env)
		r := &recorder{TB: t}
		Missing(r, "the e2e images", errors.New("images missing: x"), "make e2e")
		const want = "needs the e2e images: run make e2e (images missing: x)"
		got, other := r.skipped, r.failed
		if c.fail {
			got, other = r.failed, r.skipped
		}
		if got != want || other != "" {
			t.Errorf("%s=%q: skipped %q, failed %q; want %s %q", RequiredEnv, c.env, r.skipped, r.failed,
				map[bool]string{false: "skipped", true: "failed"}[c.fail], want)
		}
	}
}

// Needs skips under -short only, naming what the test needs and the tier
// that runs it.
func TestNeeds(t *testing.T) {
	was := testing.Short()
	t.Cleanup(func() { _ = flag.Set("test.short", fmt.Sprint(was)) })
	for _, short := range []bool{false, true} {
		if err := flag.Set("test.short", fmt.Sprint(short)); err != nil {
			t.Fatal(err)
		}
		r := &recorder{TB: t}
		Needs(r, PostgreSQL)
		if short != (r.skipped != "") || r.failed != "" {
			t.Errorf("short=%v: skipped %q, failed %q", short, r.skipped, r.failed)
		}
		if short && (!strings.Contains(r.skipped, "needs PostgreSQL") || !strings.Contains(r.skipped, "make test")) {
			t.Errorf("skip message %q names neither the need nor the full tier", r.skipped)
		}
	}
}
