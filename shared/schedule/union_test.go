package schedule

import (
	"testing"
	"time"
)

// A union fires at every fire of each part, each on its own zone's wall
// clock, and once at an instant two parts share.
func TestUnionFiresEachPartOnceAtSharedInstants(t *testing.T) {
	weekdays, err := Parse("cron", "0 9 * * MON-FRI", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	saturday, err := Parse("cron", "0 12 * * SAT", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// 08:00 UTC is 09:00 in Berlin in winter: the same instant as the first
	// part's weekday fires.
	utc8, err := Parse("cron", "0 8 * * *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	u, err := Union(weekdays, saturday, utc8)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC) // a Monday
	got := u.NextN(from, 9)
	want := []string{
		"2026-01-05T08:00:00Z", "2026-01-06T08:00:00Z", "2026-01-07T08:00:00Z", "2026-01-08T08:00:00Z",
		"2026-01-09T08:00:00Z", "2026-01-10T08:00:00Z", "2026-01-10T17:00:00Z", "2026-01-11T08:00:00Z",
		"2026-01-12T08:00:00Z",
	}
	if len(got) != len(want) {
		t.Fatalf("fires %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Format(time.RFC3339) != want[i] {
			t.Fatalf("fire %d is %s, want %s (all: %v)", i, got[i].Format(time.RFC3339), want[i], got)
		}
	}
	if loc := u.LocationAt(got[6]); loc.String() != "America/New_York" {
		t.Errorf("the Saturday fire's zone is %s, want the part that fires it (America/New_York)", loc)
	}
	if loc := u.LocationAt(got[0]); loc.String() != "Europe/Berlin" {
		t.Errorf("a shared fire's zone is %s, want the first part that fires it (Europe/Berlin)", loc)
	}
}

// Only wall-clock schedules combine; one part is itself.
func TestUnionRefusesIntervalSchedules(t *testing.T) {
	c, _ := Parse("cron", "@hourly", "UTC")
	r, _ := Parse("fix_rate", "30s", "UTC")
	if _, err := Union(c, r); err == nil {
		t.Error("a union with a fix_rate part was accepted")
	}
	if u, err := Union(c); err != nil || u != c {
		t.Errorf("a union of one = %v, %v; want the schedule itself", u, err)
	}
}
