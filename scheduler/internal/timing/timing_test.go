package timing

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/schedule"
)

func mustParse(t *testing.T, typ, expr, tz string) *schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(typ, expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// The jitter of a fire is the same every time it is asked (so a replay or
// a retry keeps its scheduled_at), lies in [0, jitter), differs between
// fires and between jobs, and is whole microseconds.
func TestOffsetIsDeterministicAndBounded(t *testing.T) {
	s := mustParse(t, "cron", "@every 1m", "UTC")
	const jitter = 30 * time.Second
	a := Plan{Sched: s, JobID: 7, Jitter: jitter}
	b := Plan{Sched: s, JobID: 8, Jitter: jitter}
	distinct := map[time.Duration]bool{}
	sameAcrossJobs := 0
	for i := range 200 {
		at := t0.Add(time.Duration(i) * time.Minute)
		off := a.Offset(at)
		if off < 0 || off >= jitter {
			t.Fatalf("offset %s of fire %s outside [0, %s)", off, at, jitter)
		}
		if off%time.Microsecond != 0 {
			t.Fatalf("offset %s is not whole microseconds", off)
		}
		if again := (Plan{Sched: s, JobID: 7, Jitter: jitter}).Offset(at); again != off {
			t.Fatalf("offset of the same fire changed: %s then %s", off, again)
		}
		if b.Offset(at) == off {
			sameAcrossJobs++
		}
		distinct[off] = true
		if got := a.At(at); !got.Equal(at.Add(off)) {
			t.Fatalf("At(%s) = %s, want nominal + offset %s", at, got, off)
		}
	}
	if len(distinct) < 150 {
		t.Errorf("only %d distinct offsets over 200 fires: not spread", len(distinct))
	}
	if sameAcrossJobs > 5 {
		t.Errorf("jobs 7 and 8 got the same offset for %d of 200 fires", sameAcrossJobs)
	}
	if off := (Plan{Sched: s, JobID: 7}).Offset(t0); off != 0 {
		t.Errorf("no jitter gave offset %s", off)
	}
}

// No fire before start_at nor after end_at; after end, no next fire.
func TestStartAndEnd(t *testing.T) {
	hourly := mustParse(t, "cron", "0 0 * * * *", "UTC")
	start, end := t0.Add(90*time.Minute), t0.Add(5*time.Hour)
	p := Plan{Sched: hourly, Start: start, End: end}
	got := p.NextN(time.Time{}, t0, 10)
	want := []time.Time{t0.Add(2 * time.Hour), t0.Add(3 * time.Hour), t0.Add(4 * time.Hour), t0.Add(5 * time.Hour)}
	if len(got) != len(want) {
		t.Fatalf("fires %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("fires %v, want %v", got, want)
		}
	}
	if next, ok := p.Next(end); ok {
		t.Errorf("a fire after end_at: %s", next)
	}
	// An interval schedule starts at start_at itself.
	rate := Plan{Sched: mustParse(t, "fix_rate", "10m", "UTC"), Start: start}
	if next, ok := rate.Next(t0); !ok || !next.Equal(start) {
		t.Errorf("fix_rate before start: next %s %t, want start_at %s", next, ok, start)
	}
}

// Newest finds the last fire before a time without walking every fire
// from the first.
func TestNewest(t *testing.T) {
	daily := Plan{Sched: mustParse(t, "cron", "0 0 0 * * *", "UTC")}
	first := time.Date(2025, 10, 1, 0, 0, 0, 0, time.UTC)
	before := time.Date(2026, 4, 19, 15, 4, 5, 0, time.UTC)
	got, ok := daily.Newest(first, before)
	if want := time.Date(2026, 4, 19, 0, 0, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Errorf("Newest = %s %t, want %s", got, ok, want)
	}
	if _, ok := daily.Newest(before.Add(-time.Hour), before); ok {
		t.Error("Newest found a fire in an hour without one")
	}
	if n, exact := daily.Count(first, before, 1000); !exact || n != 200 {
		t.Errorf("Count = %d (exact %t), want the 200 midnights after %s", n, exact, first)
	}
}

// The shortest gap between fires bounds a jitter.
func TestMinGap(t *testing.T) {
	s := mustParse(t, "cron", "0 0,10 * * * *", "UTC") // :00 and :10 each hour
	if got := MinGap(s, t0, 64); got != 10*time.Minute {
		t.Errorf("MinGap = %s, want 10m", got)
	}
	if got := MinGap(mustParse(t, "none", "", "UTC"), t0, 64); got != 0 {
		t.Errorf("MinGap of none = %s, want 0", got)
	}
}
