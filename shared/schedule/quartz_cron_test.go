package schedule

import (
	"testing"
	"time"
)

// TestQuartzToCron checks the conversion an importer uses, and that each
// converted expression fires at the same instants as the original.
func TestQuartzToCron(t *testing.T) {
	tests := []struct {
		quartz, cron string // cron "" means not convertible
	}{
		{"0 0 12 * * ?", "0 0 12 * * *"},
		{"0 15 10 ? * *", "0 15 10 * * *"},
		{"0 0/5 14,18 * * ?", "0 0/5 14,18 * * *"},
		{"0 15 10 ? * MON-FRI", "0 15 10 * * MON-FRI"},
		{"0 0 9 ? * 6", "0 0 9 * * 5"},       // Friday
		{"0 0 9 ? * 1", "0 0 9 * * 0"},       // Sunday
		{"0 0 9 ? * 2-6", "0 0 9 * * 1-5"},   // Monday to Friday
		{"0 0 9 ? * 1,7", "0 0 9 * * 0,6"},   // the weekend
		{"0 0 9 ? * 2/2", "0 0 9 * * 1/2"},   // Mon, Wed, Fri
		{"0 0 9 ? * */2", "0 0 9 * * */2"},   // Sun, Tue, Thu, Sat
		{"0 0 9 ? * L", "0 0 9 * * SAT"},     // L alone is Saturday
		{"0 0 12 1/5 * ?", "0 0 12 1/5 * *"}, // a day-of-month step
		{"0 11 11 11 NOV ?", "0 11 11 11 NOV *"},
		{" 0 0 12 * * ? * ", "0 0 12 * * *"}, // year * is dropped
		{"0 0 12 L * ?", ""},
		{"0 0 12 L-2 * ?", ""},
		{"0 0 12 15W * ?", ""},
		{"0 0 12 LW * ?", ""},
		{"0 15 10 ? * 6L", ""},
		{"0 15 10 ? * 6#3", ""},
		{"0 15 10 * * ? 2030", ""},
		{"0 0 22-2 * * ?", ""},    // cron ranges do not wrap
		{"0 0 9 ? * FRI-MON", ""}, // nor do its weekday ranges
		{"0 0 12 * *", ""},        // invalid
		{"0 0 12 15 * MON", ""},   // invalid: both day fields
	}
	from := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		got, ok := QuartzToCron(tt.quartz)
		if got != tt.cron || ok != (tt.cron != "") {
			t.Errorf("QuartzToCron(%q) = %q, %v; want %q, %v", tt.quartz, got, ok, tt.cron, tt.cron != "")
			continue
		}
		if !ok {
			continue
		}
		q := mustParse(t, "quartz", tt.quartz, "Europe/Berlin")
		c := mustParse(t, "cron", got, "Europe/Berlin")
		if a, b := utcList(q.NextN(from, 60)), utcList(c.NextN(from, 60)); a != b {
			t.Errorf("quartz %q and cron %q differ:\n quartz %s\n cron   %s", tt.quartz, got, a, b)
		}
	}
}

// FuzzQuartz checks, for any expression Parse accepts, that fire times move
// strictly forward, that the search agrees with itself when started just
// before a fire, and that a conversion to cron fires at the same instants.
// Without -fuzz it runs the seeds.
func FuzzQuartz(f *testing.F) {
	for _, s := range []string{
		"0 0 12 * * ?", "*/7 */13 * ? * 2-6", "0 0/5 14,18 * * ?", "0 15 10 L-2 * ?", "0 0 12 15W * ?",
		"0 0 12 LW * ?", "0 15 10 ? * 6L 2030-2032", "0 15 10 ? * 6#3", "5/20 1-59/7 22-3 ? 1,6,11 FRI-TUE",
		"0 0 0 29 2 ? *", "30 30 2 ? * 1L", "0 0 12 1/5 * ?", "0 0 9 ? * 2/2",
	} {
		f.Add(s, int64(1767312000)) // 2026-01-02
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		s, err := Parse("quartz", expr, "Europe/Berlin")
		if err != nil {
			return
		}
		after := time.Unix(unix%(250*365*86400), 0).UTC()
		prev := after
		var fires []time.Time
		for range 20 {
			next, ok := s.Next(prev)
			if !ok {
				break
			}
			if !next.After(prev) {
				t.Fatalf("%v: Next(%s) = %s, not after it", s, prev, next)
			}
			if again, _ := s.Next(next.Add(-time.Second)); !again.Equal(next) {
				t.Fatalf("%v: Next(%s) = %s, but Next from a second earlier = %s", s, prev, next, again)
			}
			fires = append(fires, next)
			prev = next
		}
		if c, ok := QuartzToCron(expr); ok {
			cs := mustParse(t, "cron", c, "Europe/Berlin")
			if a, b := utcList(fires), utcList(cs.NextN(after, len(fires))); a != b {
				t.Fatalf("quartz %q and cron %q differ from %s:\n quartz %s\n cron   %s", expr, c, after, a, b)
			}
		}
	})
}
