package schedule

import (
	"sync"
	"testing"
	"time"
)

// TestIntervalArithmetic: fix_rate and fix_delay fire exactly one interval
// after the time they are given, to the nanosecond, whatever the zone.
func TestIntervalArithmetic(t *testing.T) {
	tests := []struct {
		typ, expr, tz, after, want string
	}{
		{"fix_rate", "30s", "", "2026-01-02T10:00:00Z",
			"2026-01-02T10:00:30Z 2026-01-02T10:01:00Z 2026-01-02T10:01:30Z"},
		{"fix_rate", "1m30s", "", "2026-01-02T10:00:00Z",
			"2026-01-02T10:01:30Z 2026-01-02T10:03:00Z"},
		{"fix_rate", "90", "", "2026-01-02T10:00:00Z", // bare seconds
			"2026-01-02T10:01:30Z 2026-01-02T10:03:00Z"},
		{"fix_delay", "45", "", "2026-01-02T10:00:00Z",
			"2026-01-02T10:00:45Z 2026-01-02T10:01:30Z"},
		{"fix_rate", "8784h", "", "2026-01-02T10:00:00Z", "2027-01-03T10:00:00Z"},
		// Elapsed time: the fall-back hour counts like any other.
		{"fix_rate", "30m", "America/New_York", "2026-11-01T05:15:00Z",
			"2026-11-01T05:45:00Z 2026-11-01T06:15:00Z 2026-11-01T06:45:00Z"},
	}
	for _, tt := range tests {
		assertNextN(t, mustParse(t, tt.typ, tt.expr, tt.tz), ts(t, tt.after), tt.want)
	}

	// Fractions are kept: a fix_delay run that ended at .25s is followed
	// by one at .25s.
	s := mustParse(t, "fix_delay", "1.5s", "")
	end := ts(t, "2026-01-02T10:00:00.25Z")
	if got, ok := s.Next(end); !ok || !got.Equal(ts(t, "2026-01-02T10:00:01.75Z")) {
		t.Errorf("fix_delay 1.5s Next(%v) = %v, %v; want 10:00:01.75", end, got, ok)
	}
}

func TestPeriodicByType(t *testing.T) {
	tests := []struct {
		typ, expr string
		want      bool
	}{
		{"cron", "@hourly", true},
		{"fix_rate", "10s", true},
		{"fix_delay", "10s", false},
		{"once", "2026-01-02T15:04:05Z", false},
		{"none", "", false},
	}
	for _, tt := range tests {
		if got := mustParse(t, tt.typ, tt.expr, "").Periodic(); got != tt.want {
			t.Errorf("%s Periodic() = %v, want %v", tt.typ, got, tt.want)
		}
	}
}

func TestOnce(t *testing.T) {
	s := mustParse(t, "once", "2026-01-02T16:04:05.5+01:00", "Asia/Tokyo")
	at := ts(t, "2026-01-02T15:04:05.5Z")

	if got, ok := s.At(); !ok || !got.Equal(at) || got.Location() != time.UTC {
		t.Errorf("At() = %v, %v; want %v in UTC", got, ok, at)
	}
	tests := []struct {
		after string
		want  bool
	}{
		{"2020-01-01T00:00:00Z", true},           // future
		{"2026-01-02T15:04:05.499999999Z", true}, // just before
		{"2026-01-02T15:04:05.5Z", false},        // at: not strictly after
		{"2026-01-02T15:04:06Z", false},          // past
	}
	for _, tt := range tests {
		got, ok := s.Next(ts(t, tt.after))
		if ok != tt.want || (ok && !got.Equal(at)) {
			t.Errorf("once Next(%s) = %v, %v; want ok=%v at %v", tt.after, got, ok, tt.want, at)
		}
	}
	if got := s.NextN(ts(t, "2020-01-01T00:00:00Z"), 5); len(got) != 1 || !got[0].Equal(at) {
		t.Errorf("once NextN(before, 5) = %v, want [%v]", got, at)
	}

	// A once time already in the past parses: the API decides.
	past := mustParse(t, "once", "2001-02-03T04:05:06Z", "")
	if _, ok := past.Next(time.Now()); ok {
		t.Error("past once schedule fires after now")
	}
	if got, ok := past.At(); !ok || got.Year() != 2001 {
		t.Errorf("past once At() = %v, %v", got, ok)
	}
}

func TestAtIsOnlyForOnce(t *testing.T) {
	for _, typ := range []string{"cron", "fix_rate", "fix_delay", "none"} {
		expr := map[string]string{"cron": "@daily", "fix_rate": "1m", "fix_delay": "1m"}[typ]
		if got, ok := mustParse(t, typ, expr, "").At(); ok || !got.IsZero() {
			t.Errorf("%s At() = %v, %v; want zero, false", typ, got, ok)
		}
	}
}

func TestNone(t *testing.T) {
	s := mustParse(t, "none", "", "Europe/Berlin")
	for _, after := range []time.Time{{}, time.Now(), ts(t, "2099-12-31T23:59:59Z")} {
		if got, ok := s.Next(after); ok || !got.IsZero() {
			t.Errorf("none Next(%v) = %v, %v; want nothing", after, got, ok)
		}
	}
	got := s.NextN(time.Now(), 3)
	if got == nil || len(got) != 0 {
		t.Errorf("none NextN(now, 3) = %#v, want an empty non-nil slice", got)
	}
}

func TestZeroScheduleNeverFires(t *testing.T) {
	var s Schedule
	if _, ok := s.Next(time.Now()); ok {
		t.Error("zero Schedule fires")
	}
	if s.Location() != time.UTC {
		t.Errorf("zero Schedule Location() = %v, want UTC", s.Location())
	}
}

func TestNextNBounds(t *testing.T) {
	s := mustParse(t, "fix_rate", "1s", "")
	after := ts(t, "2026-01-02T10:00:00Z")
	for _, n := range []int{0, -1, -1000} {
		if got := s.NextN(after, n); got != nil {
			t.Errorf("NextN(n=%d) = %v, want nil", n, got)
		}
	}
	for _, tt := range []struct{ n, want int }{{1, 1}, {7, 7}, {MaxNextN, MaxNextN}, {MaxNextN + 1, MaxNextN}, {1 << 30, MaxNextN}} {
		got := s.NextN(after, tt.n)
		if len(got) != tt.want {
			t.Errorf("NextN(n=%d) returned %d times, want %d", tt.n, len(got), tt.want)
			continue
		}
		// Each time is computed from the previous one.
		if last := got[len(got)-1]; !last.Equal(after.Add(time.Duration(tt.want) * time.Second)) {
			t.Errorf("NextN(n=%d) ends at %v, want %v", tt.n, last, after.Add(time.Duration(tt.want)*time.Second))
		}
	}
}

// TestConcurrentUse runs Next from many goroutines on one Schedule; under
// -race it proves the documented immutability.
func TestConcurrentUse(t *testing.T) {
	s := mustParse(t, "cron", "0 */15 * * * *", "America/New_York")
	from := ts(t, "2026-11-01T04:00:00Z")
	want := utcList(s.NextN(from, 20))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if got := utcList(s.NextN(from, 20)); got != want {
				t.Errorf("concurrent NextN = %s, want %s", got, want)
			}
		})
	}
	wg.Wait()
}
