package paramtmpl

import (
	"errors"
	"testing"
	"time"
)

// The same instant renders its own day in each zone; add and addDays move
// it; a day back across a DST change is a calendar day, 23 or 25 hours.
func TestRenderInZones(t *testing.T) {
	at := time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC) // 03:30 EDT, the spring-forward day in New York
	const text = `{"day":"{{ .ScheduledAt | date "2006-01-02" }}","prev":"{{ .ScheduledAt | addDays -1 | date "2006-01-02 15:04 MST" }}","h":"{{ .ScheduledAt | add "-24h" | date "15:04" }}","job":{{ .JobID }}}`
	for _, c := range []struct{ zone, want string }{
		{"UTC", `{"day":"2026-03-08","prev":"2026-03-07 07:30 UTC","h":"07:30","job":7}`},
		{"America/New_York", `{"day":"2026-03-08","prev":"2026-03-07 03:30 EST","h":"02:30","job":7}`},
		{"Asia/Tokyo", `{"day":"2026-03-08","prev":"2026-03-07 16:30 JST","h":"16:30","job":7}`},
		{"Pacific/Honolulu", `{"day":"2026-03-07","prev":"2026-03-06 21:30 HST","h":"21:30","job":7}`},
	} {
		got, err := Render(text, c.zone, Data{ScheduledAt: at, JobID: 7})
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: %s\nwant %s", c.zone, got, c.want)
		}
	}
}

// Mistakes are refused when the job is written, naming the problem.
func TestParseRefuses(t *testing.T) {
	for _, bad := range []string{`{{ .Nope }}`, `{{ .ScheduledAt | add "yesterday" }}`, `{{ .ScheduledAt | shell "rm" }}`, `{{ if }}`} {
		if _, err := Parse(bad, "UTC"); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
