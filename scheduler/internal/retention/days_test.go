package retention

import (
	"slices"
	"testing"
	"time"
)

func day(s string) time.Time {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return d
}

func days(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = day(s)
	}
	return out
}

func dates(ds []time.Time) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Format(time.DateOnly)
	}
	return out
}

// A day is dropped once all of it is older than the retention: it ended
// at or before now - retention.
func TestBounds(t *testing.T) {
	for _, c := range []struct {
		now              string
		retention        time.Duration
		today, firstKept string
	}{
		{"2026-11-27T13:00:00Z", 30 * 24 * time.Hour, "2026-11-27", "2026-10-28"},
		// 10-27 ends exactly at now - retention: all of it is older.
		{"2026-11-27T00:00:00Z", 30 * 24 * time.Hour, "2026-11-27", "2026-10-28"},
		{"2026-11-26T23:59:59Z", 30 * 24 * time.Hour, "2026-11-26", "2026-10-27"},
		// Not a whole number of days: 11-25 22:00 is inside 11-25, kept.
		{"2026-11-27T10:00:00Z", 36 * time.Hour, "2026-11-27", "2026-11-25"},
		// Another zone: the days are UTC days.
		{"2026-11-27T01:00:00+03:00", 24 * time.Hour, "2026-11-26", "2026-11-25"},
	} {
		now, err := time.Parse(time.RFC3339, c.now)
		if err != nil {
			t.Fatal(err)
		}
		today, cutoff := bounds(now, c.retention)
		if !today.Equal(day(c.today)) || !cutoff.Equal(day(c.firstKept)) {
			t.Errorf("now %s, retention %s: today %s, first day kept %s; want %s, %s", c.now, c.retention,
				today.Format(time.DateOnly), cutoff.Format(time.DateOnly), c.today, c.firstKept)
		}
	}
}

// What one round creates, rolls up and drops, for today 11-27, a 30-day
// retention (first day kept 10-28) and 7 days ahead (to 12-04).
func TestRoundDays(t *testing.T) {
	today, cutoff := day("2026-11-27"), day("2026-10-28")
	parts := map[time.Time]string{}
	for _, d := range days("2026-10-20", "2026-10-27", "2026-10-28", "2026-11-26", "2026-11-27", "2026-11-30") {
		parts[d] = "p"
	}
	// Rows in the default partition: too old for a partition, inside the
	// retention, and past the days ahead (a clock running fast).
	defaultDays := days("2026-10-01", "2026-11-10", "2026-12-04", "2026-12-20")

	create := toCreate(today, cutoff, 7, parts, defaultDays)
	if want := []string{"2026-11-10", "2026-11-28", "2026-11-29", "2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"}; !slices.Equal(dates(create), want) {
		t.Errorf("create %v, want %v", dates(create), want)
	}
	if create := toCreate(today, cutoff, 0, map[time.Time]string{}, nil); !slices.Equal(dates(create), []string{"2026-11-27"}) {
		t.Errorf("create with no day ahead and none there: %v, want today only", dates(create))
	}

	all := held(parts, defaultDays)
	if want := []string{"2026-10-01", "2026-10-20", "2026-10-27", "2026-10-28", "2026-11-10", "2026-11-26", "2026-11-27", "2026-11-30",
		"2026-12-04", "2026-12-20"}; !slices.Equal(dates(all), want) {
		t.Fatalf("held %v, want %v", dates(all), want)
	}
	done := map[time.Time]bool{day("2026-10-20"): true, day("2026-11-10"): true}
	if got, want := dates(toRollUp(all, today, done)), []string{"2026-10-01", "2026-10-27", "2026-10-28", "2026-11-26"}; !slices.Equal(got, want) {
		t.Errorf("roll up %v, want the past days not covered %v", got, want)
	}
	if got, want := dates(toDrop(all, cutoff)), []string{"2026-10-01", "2026-10-20", "2026-10-27"}; !slices.Equal(got, want) {
		t.Errorf("drop %v, want the days before %s %v", got, cutoff.Format(time.DateOnly), want)
	}
	if len(all) != 10 {
		t.Errorf("toRollUp or toDrop changed the list they were given: %v", dates(all))
	}
}
