package schedule

import (
	"testing"
	"time"
)

// wallReading reads loc's clock at t through the time fields, independently
// of the offset arithmetic in wallclock.go.
func wallReading(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), 0, time.UTC)
}

// window is the wall clock of a zone read once a second over (from, to].
type window struct {
	from, to time.Time
	start    time.Time   // reading at from
	readings []time.Time // readings[i] is the reading at from+(i+1)s
}

func readWindow(loc *time.Location, from, to time.Time) window {
	w := window{from: from, to: to, start: wallReading(from, loc)}
	for t := from.Add(time.Second); !t.After(to); t = t.Add(time.Second) {
		w.readings = append(w.readings, wallReading(t, loc))
	}
	return w
}

// watcherFires is a model of the documented DST rule that knows nothing
// about transitions: a watcher looks at the wall clock once a second,
// remembers the highest reading it has seen, and fires whenever a scheduled
// wall-clock time lies above that mark and at or below the current reading.
// It returns the fires in (w.from, w.to].
func watcherFires(c civilMatcher, w window) []time.Time {
	var fires []time.Time
	mark := w.start
	due, _ := c.nextMatch(mark) // first scheduled reading above mark
	for i, r := range w.readings {
		if !r.After(mark) {
			continue // the clock was set back: it shows readings seen before
		}
		if !due.After(r) {
			fires = append(fires, w.from.Add(time.Duration(i+1)*time.Second))
		}
		mark = r
		if !due.After(mark) {
			due, _ = c.nextMatch(mark)
		}
	}
	return fires
}

// transitionsIn lists the instants in [from, to) at which loc's offset
// changes.
func transitionsIn(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	for t := from; t.Before(to); {
		_, end := t.In(loc).ZoneBounds()
		if end.IsZero() || !end.Before(to) {
			break
		}
		_, before := end.Add(-time.Second).In(loc).Zone()
		if _, after := end.In(loc).Zone(); before != after {
			out = append(out, end)
		}
		t = end
	}
	return out
}

// TestDSTMatchesWatcherModel compares Next with the watcher model for
// several expressions, three hours either side of every transition of zones
// chosen for their odd transitions, both from each fire (as the planner
// calls it) and from arbitrary instants (as the API does).
func TestDSTMatchesWatcherModel(t *testing.T) {
	zones := []struct {
		name string
		year int
	}{
		{"America/New_York", 2026},
		{"Europe/Berlin", 2026},
		{"Australia/Sydney", 2026},    // southern hemisphere
		{"Australia/Lord_Howe", 2026}, // 30-minute shifts
		{"America/St_Johns", 2026},    // -03:30 standard offset
		{"Antarctica/Troll", 2026},    // 2-hour shifts
		{"America/Sao_Paulo", 2018},   // transitions at midnight
		{"Asia/Tehran", 2021},         // transitions at midnight
		{"Pacific/Apia", 2011},        // a whole day skipped in December
	}
	exprs := []string{
		"0 */15 * * * *", "0 30 * * * *", "@hourly", "@daily",
		"0 30 1 * * *", "0 30 2 * * *", "0 0 12 * * *", "30 59 1,2 * * *",
		"0 0,30 0-3 * * *", "*/20 * 1-3 * * *", "0 45 23 * * *",
	}
	const margin = 3 * time.Hour
	for _, z := range zones {
		loc := loadZoneT(t, z.name)
		yearStart := time.Date(z.year, 1, 1, 0, 0, 0, 0, time.UTC)
		trans := transitionsIn(loc, yearStart, yearStart.AddDate(1, 0, 0))
		if len(trans) < 2 {
			t.Fatalf("%s %d: found %d transitions, want at least 2", z.name, z.year, len(trans))
		}
		for _, tr := range trans {
			w := readWindow(loc, tr.Add(-margin), tr.Add(margin))
			for _, expr := range exprs {
				s := mustParse(t, "cron", expr, z.name)
				want := watcherFires(s.eval.(*cronSchedule), w)
				checkSequence(t, s, w.from, w.to, want)
				checkArbitraryAfters(t, s, w.from, w.to, want)
			}
		}
	}
}

// checkSequence follows Next from fire to fire across the window.
func checkSequence(t *testing.T, s *Schedule, from, to time.Time, want []time.Time) {
	t.Helper()
	var got []time.Time
	// A window holds at most one fire a second; the bound keeps a broken
	// Next that does not advance from spinning forever.
	for after := from; len(got) <= int(to.Sub(from)/time.Second); {
		next, ok := s.Next(after)
		if !ok || next.After(to) {
			break
		}
		if !next.After(after) {
			t.Errorf("%v: Next(%s) = %s, not after it", s, after.Format(time.RFC3339), next.Format(time.RFC3339))
			return
		}
		got = append(got, next)
		after = next
	}
	if utcList(got) != utcList(want) {
		t.Errorf("%v from %s:\n got  %s\n want %s", s, from.Format(time.RFC3339), utcList(got), utcList(want))
	}
}

// checkArbitraryAfters calls Next from instants that are not fires,
// including ones in a fall-back's second pass and fractions of a second.
func checkArbitraryAfters(t *testing.T, s *Schedule, from, to time.Time, fires []time.Time) {
	t.Helper()
	i := 0
	for after := from; after.Before(to); after = after.Add(97*time.Second + 250*time.Millisecond) {
		for i < len(fires) && !fires[i].After(after) {
			i++
		}
		got, ok := s.Next(after)
		switch {
		case !ok:
			t.Errorf("%v: Next(%s) found nothing", s, after.Format(time.RFC3339Nano))
			return
		case i < len(fires) && !got.Equal(fires[i]):
			t.Errorf("%v: Next(%s) = %s, want %s", s, after.Format(time.RFC3339Nano),
				got.Format(time.RFC3339), fires[i].Format(time.RFC3339))
			return
		case i == len(fires) && !got.After(to):
			t.Errorf("%v: Next(%s) = %s, want nothing before %s", s, after.Format(time.RFC3339Nano),
				got.Format(time.RFC3339), to.Format(time.RFC3339))
			return
		}
	}
}
