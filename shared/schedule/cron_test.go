package schedule

import (
	"testing"
	"time"
)

// TestCronNextN covers the cron forms away from DST transitions. Each case
// lists the expected fire times in UTC.
func TestCronNextN(t *testing.T) {
	checkNext(t, "cron", []nextCase{
		{"seconds field", "*/15 * * * * *", "", "2026-01-02T09:59:59Z",
			"2026-01-02T10:00:00Z 2026-01-02T10:00:15Z 2026-01-02T10:00:30Z 2026-01-02T10:00:45Z 2026-01-02T10:01:00Z"},
		{"strictly after a fire", "*/15 * * * * *", "", "2026-01-02T10:00:15Z",
			"2026-01-02T10:00:30Z 2026-01-02T10:00:45Z"},
		{"just before a fire", "*/15 * * * * *", "", "2026-01-02T10:00:14.999999999Z",
			"2026-01-02T10:00:15Z"},
		{"five fields are minutes", "*/5 * * * *", "", "2026-01-02T10:02:30Z",
			"2026-01-02T10:05:00Z 2026-01-02T10:10:00Z"},
		{"five fields weekdays", "30 9 * * 1-5", "", "2026-01-02T10:00:00Z", // a Friday
			"2026-01-05T09:30:00Z 2026-01-06T09:30:00Z"},
		{"names and lists", "0 0 12 1 JAN,JUL *", "", "2026-01-02T00:00:00Z",
			"2026-07-01T12:00:00Z 2027-01-01T12:00:00Z"},
		{"@hourly", "@hourly", "", "2026-01-02T10:20:00Z",
			"2026-01-02T11:00:00Z 2026-01-02T12:00:00Z"},
		{"@daily", "@daily", "", "2026-01-02T10:00:00Z",
			"2026-01-03T00:00:00Z 2026-01-04T00:00:00Z"},
		{"@midnight", "@midnight", "", "2026-01-02T10:00:00Z", "2026-01-03T00:00:00Z"},
		{"@weekly is Sunday", "@weekly", "", "2026-01-02T10:00:00Z",
			"2026-01-04T00:00:00Z 2026-01-11T00:00:00Z"},
		{"@monthly", "@monthly", "", "2026-01-02T10:00:00Z",
			"2026-02-01T00:00:00Z 2026-03-01T00:00:00Z"},
		{"@yearly", "@yearly", "", "2026-01-02T10:00:00Z",
			"2027-01-01T00:00:00Z 2028-01-01T00:00:00Z"},
		{"@annually", "@annually", "", "2026-01-02T10:00:00Z", "2027-01-01T00:00:00Z"},
		{"leap day", "0 0 0 29 2 *", "", "2026-03-01T00:00:00Z",
			"2028-02-29T00:00:00Z 2032-02-29T00:00:00Z"},
		// 2100 is not a leap year: the next Feb 29 after 2096 is in 2104,
		// beyond robfig's five-year search.
		{"leap day over 2100", "0 0 0 29 2 *", "", "2097-03-01T00:00:00Z", "2104-02-29T00:00:00Z"},

		// time zones: fields are read on the zone's wall clock
		{"Tokyo 09:00 is 00:00 UTC", "0 0 9 * * *", "Asia/Tokyo", "2026-01-01T23:59:59Z",
			"2026-01-02T00:00:00Z 2026-01-03T00:00:00Z"},
		{"Tokyo at the fire", "0 0 9 * * *", "Asia/Tokyo", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"},
		{"Tokyo date differs from UTC", "0 0 8 * * MON", "Asia/Tokyo", "2026-01-02T00:00:00Z",
			"2026-01-04T23:00:00Z 2026-01-11T23:00:00Z"},
		{"Kolkata half-hour offset", "0 0 9 * * *", "Asia/Kolkata", "2026-01-02T00:00:00Z",
			"2026-01-02T03:30:00Z 2026-01-03T03:30:00Z"},
		{"New York winter", "0 0 9 * * *", "America/New_York", "2026-01-02T00:00:00Z", "2026-01-02T14:00:00Z"},
		{"New York summer", "0 0 9 * * *", "America/New_York", "2026-07-02T00:00:00Z", "2026-07-02T13:00:00Z"},
		{"@daily in Berlin", "@daily", "Europe/Berlin", "2026-01-02T10:00:00Z", "2026-01-02T23:00:00Z"},

		// @every: a constant delay on whole seconds, whatever the zone
		{"@every 10s", "@every 10s", "", "2026-01-02T10:00:00Z",
			"2026-01-02T10:00:10Z 2026-01-02T10:00:20Z 2026-01-02T10:00:30Z"},
		{"@every drops fractions of after", "@every 10s", "", "2026-01-02T10:00:00.7Z",
			"2026-01-02T10:00:10Z 2026-01-02T10:00:20Z"},
		{"@every truncates its delay", "@every 1.5s", "", "2026-01-02T10:00:00Z",
			"2026-01-02T10:00:01Z 2026-01-02T10:00:02Z"},
		{"@every 1h30m", "@every 1h30m", "Asia/Tokyo", "2026-01-02T10:00:00Z",
			"2026-01-02T11:30:00Z 2026-01-02T13:00:00Z"},
		{"@every ignores fall-back", "@every 30m", "America/New_York", "2026-11-01T05:15:00Z",
			"2026-11-01T05:45:00Z 2026-11-01T06:15:00Z 2026-11-01T06:45:00Z 2026-11-01T07:15:00Z"},
	})
}

// TestCronAfterInAnyLocation checks that the location of `after` does not
// matter, only the instant: callers may pass local times.
func TestCronAfterInAnyLocation(t *testing.T) {
	s := mustParse(t, "cron", "0 0 9 * * *", "Asia/Tokyo")
	utc := ts(t, "2026-01-02T12:00:00Z")
	for _, zone := range []string{"UTC", "America/New_York", "Asia/Tokyo", "Pacific/Kiritimati"} {
		after := utc.In(loadZoneT(t, zone))
		got, ok := s.Next(after)
		if want := ts(t, "2026-01-03T00:00:00Z"); !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("Next(%v) = %v, %v; want %v in UTC", after, got, ok, want)
		}
	}
}

func TestCronIsPeriodic(t *testing.T) {
	for _, expr := range []string{"0 * * * * *", "@every 5s", "@weekly"} {
		if !mustParse(t, "cron", expr, "").Periodic() {
			t.Errorf("cron %q: Periodic() = false", expr)
		}
	}
}
