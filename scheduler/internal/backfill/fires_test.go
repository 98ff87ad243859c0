package backfill

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
)

func plan(t *testing.T, typ, expr, tz string) timing.Plan {
	t.Helper()
	s, err := schedule.Parse(typ, expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return timing.Plan{Sched: s}
}

// A backfill covers [from, to): from itself when it is a fire, never to;
// page by page from the cursor gives the same fires as one walk.
func TestFiresRangeAndPaging(t *testing.T) {
	p := plan(t, "cron", "0 */15 * * * *", "UTC")
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(2 * time.Hour)
	all, exhausted := Fires(p, from, to, time.Time{}, 100)
	if !exhausted || len(all) != 8 || !all[0].Equal(from) || !all[7].Equal(to.Add(-15*time.Minute)) {
		t.Fatalf("fires %v (exhausted %t), want the 8 quarter hours from %s to before %s", all, exhausted, from, to)
	}
	var paged []time.Time
	var cursor time.Time
	for {
		page, done := Fires(p, from, to, cursor, 3)
		paged = append(paged, page...)
		if done {
			break
		}
		cursor = page[len(page)-1]
	}
	if len(paged) != len(all) {
		t.Fatalf("paged %d fires, want %d", len(paged), len(all))
	}
	for i := range all {
		if !paged[i].Equal(all[i]) {
			t.Fatalf("paged fire %d = %s, want %s", i, paged[i], all[i])
		}
	}
	if n, more := Count(p, from, to, 7); n != 7 || !more {
		t.Errorf("Count with limit 7 = %d, more %t: want 7, true", n, more)
	}
	// fix_rate has no phase of its own: it starts at from.
	rate := plan(t, "fix_rate", "40m", "UTC")
	if got, _ := Fires(rate, from.Add(time.Minute), to, time.Time{}, 10); len(got) != 3 || !got[0].Equal(from.Add(time.Minute)) {
		t.Errorf("fix_rate fires %v, want 3 from %s", got, from.Add(time.Minute))
	}
}

// Across a DST change a cron backfill follows the zone's wall clock: the
// spring-forward night has no 02:xx hour, the fall-back night has two
// 02:00s (robfig/cron runs the first).
func TestFiresAcrossDST(t *testing.T) {
	p := plan(t, "cron", "0 0 * * * *", "Europe/Berlin")
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 2026-03-29: 02:00 local does not exist.
	from := time.Date(2026, 3, 29, 0, 0, 0, 0, berlin)
	to := time.Date(2026, 3, 29, 5, 0, 0, 0, berlin)
	got, _ := Fires(p, from, to, time.Time{}, 100)
	if len(got) != 4 {
		t.Fatalf("spring forward: %d hourly fires in 00:00..05:00 local, want 4 (no 02:00): %v", len(got), got)
	}
	for _, f := range got {
		if f.In(berlin).Hour() == 2 {
			t.Errorf("a fire at 02:xx local on the spring-forward night: %s", f.In(berlin))
		}
	}
	// Real elapsed hours between fires stay one hour: 4 fires, 4 real hours.
	if d := got[len(got)-1].Sub(got[0]); d != 3*time.Hour {
		t.Errorf("spring forward: first to last fire %s, want 3h of real time", d)
	}
	// 2026-10-25: 02:00-03:00 local happens twice.
	from = time.Date(2026, 10, 25, 0, 0, 0, 0, berlin)
	to = time.Date(2026, 10, 25, 5, 0, 0, 0, berlin)
	got, _ = Fires(p, from, to, time.Time{}, 100)
	if n := len(got); n < 5 || n > 6 {
		t.Fatalf("fall back: %d hourly fires in 00:00..05:00 local (6 real hours), want 5 or 6: %v", n, got)
	}
	for i := 1; i < len(got); i++ {
		if !got[i].After(got[i-1]) {
			t.Fatalf("fall back: fires out of order: %v", got)
		}
	}
}
