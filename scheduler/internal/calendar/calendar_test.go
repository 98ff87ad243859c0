package calendar

import (
	"strings"
	"testing"
	"time"
)

const chinaICS = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nSUMMARY:National Day\r\n" +
	"DTSTART;VALUE=DATE:20261001\r\nDTEND;VALUE=DATE:20261008\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nSUMMARY:New Year\r\nDTSTART;VALUE=DATE:2027\r\n 0101\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"

// Holidays come out of an .ics file as ranges, DTEND excluded, folded
// lines joined; an event without DTEND is one day.
func TestParseICS(t *testing.T) {
	rs, err := ParseICS(chinaICS)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{{"2026-10-01", "2026-10-07"}, {"2027-01-01", "2027-01-01"}}
	if len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] {
		t.Fatalf("ranges %v, want %v", rs, want)
	}
	for _, bad := range []string{"", "BEGIN:VEVENT\nDTSTART:2026\nEND:VEVENT\n", "BEGIN:VEVENT\nDTSTART:20260101\nRRULE:FREQ=YEARLY\nEND:VEVENT\n"} {
		if _, err := ParseICS(bad); err == nil {
			t.Errorf("ParseICS(%q) accepted", bad)
		}
	}
}

// The rule: excluded unless included, on the day in the schedule's zone.
func TestJudge(t *testing.T) {
	weekend, err := Days{Weekdays: []string{"sat", "SUN"}, Ranges: []Range{{"2026-10-01", "2026-10-07"}}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	makeup, err := Days{Dates: []string{"2026-10-10"}}.Compile() // a working Saturday
	if err != nil {
		t.Fatal(err)
	}
	ex := []Named{{"cn-off", weekend}}
	in := []Named{{"cn-makeup", makeup}}
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, shanghai)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		when, want string
	}{
		{"2026-10-02 09:00", "cn-off"}, // National Day
		{"2026-10-09 09:00", ""},       // a Friday
		{"2026-10-10 09:00", ""},       // the make-up Saturday
		{"2026-10-11 09:00", "cn-off"}, // a Sunday
	} {
		if got := Judge(at(c.when), shanghai, ex, in); got != c.want {
			t.Errorf("%s: excluded by %q, want %q", c.when, got, c.want)
		}
	}
	// 2026-10-09 20:00 UTC is already Saturday 10 October in Shanghai
	// (a make-up day) but Friday in UTC: the zone decides.
	utcFri := time.Date(2026, 10, 9, 17, 0, 0, 0, time.UTC)  // 01:00 Saturday in Shanghai
	satOff := time.Date(2026, 10, 10, 17, 0, 0, 0, time.UTC) // 01:00 Sunday in Shanghai
	if got := Judge(utcFri, time.UTC, ex, nil); got != "" {
		t.Errorf("Friday in UTC excluded by %q", got)
	}
	if got := Judge(satOff, shanghai, ex, in); got != "cn-off" {
		t.Errorf("Sunday in Shanghai (Saturday in UTC) excluded by %q, want cn-off", got)
	}
	for _, bad := range []Days{{Dates: []string{"2026-13-01"}}, {Weekdays: []string{"Funday"}}, {Ranges: []Range{{"2026-02-01", "2026-01-01"}}}} {
		if _, err := bad.Compile(); err == nil || !strings.Contains(err.Error(), "invalid calendar") {
			t.Errorf("Compile(%+v) = %v, want an invalid calendar error", bad, err)
		}
	}
}
