package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestQuartzTutorialExamples evaluates the examples of the Quartz CronTrigger
// tutorial, plus the forms xxl-job users write, in UTC. 2026-01-02 is a
// Friday; each case lists the expected fire times in UTC.
func TestQuartzTutorialExamples(t *testing.T) {
	tests := []struct {
		name, expr, after, want string
	}{
		{"noon every day", "0 0 12 * * ?", "2026-01-02T13:00:00Z",
			"2026-01-03T12:00:00Z 2026-01-04T12:00:00Z"},
		{"10:15 every day, ? in day-of-month", "0 15 10 ? * *", "2026-01-02T10:15:00Z",
			"2026-01-03T10:15:00Z 2026-01-04T10:15:00Z"},
		{"10:15 every day of 2030", "0 15 10 * * ? 2030", "2026-01-02T00:00:00Z",
			"2030-01-01T10:15:00Z 2030-01-02T10:15:00Z"},
		{"every minute from 14:00", "0 * 14 * * ?", "2026-01-02T14:58:30Z",
			"2026-01-02T14:59:00Z 2026-01-03T14:00:00Z"},
		{"every 5 minutes from 14:00", "0 0/5 14 * * ?", "2026-01-02T14:50:00Z",
			"2026-01-02T14:55:00Z 2026-01-03T14:00:00Z 2026-01-03T14:05:00Z"},
		{"every 5 minutes at 14 and 18", "0 0/5 14,18 * * ?", "2026-01-02T14:55:00Z",
			"2026-01-02T18:00:00Z 2026-01-02T18:05:00Z"},
		{"after 18:55 comes the next 14:00", "0 0/5 14,18 * * ?", "2026-01-02T18:55:00Z",
			"2026-01-03T14:00:00Z"},
		{"minute range", "0 0-5 14 * * ?", "2026-01-02T14:04:00Z",
			"2026-01-02T14:05:00Z 2026-01-03T14:00:00Z"},
		// March 2026 starts on a Sunday; March 2027 on a Monday.
		{"Wednesdays in March", "0 10,44 14 ? 3 WED", "2026-01-02T00:00:00Z",
			"2026-03-04T14:10:00Z 2026-03-04T14:44:00Z 2026-03-11T14:10:00Z"},
		{"last Wednesday in March, then next year", "0 10,44 14 ? 3 WED", "2026-03-25T14:44:00Z",
			"2027-03-03T14:10:00Z"},
		{"weekdays", "0 15 10 ? * MON-FRI", "2026-01-02T10:15:00Z",
			"2026-01-05T10:15:00Z 2026-01-06T10:15:00Z"},
		{"the 15th", "0 15 10 15 * ?", "2026-01-02T00:00:00Z",
			"2026-01-15T10:15:00Z 2026-02-15T10:15:00Z"},
		{"last day", "0 15 10 L * ?", "2026-01-02T00:00:00Z",
			"2026-01-31T10:15:00Z 2026-02-28T10:15:00Z 2026-03-31T10:15:00Z 2026-04-30T10:15:00Z"},
		{"last day of a leap February", "0 15 10 L * ?", "2028-02-01T00:00:00Z",
			"2028-02-29T10:15:00Z"},
		{"second-to-last day", "0 15 10 L-2 * ?", "2026-01-02T00:00:00Z",
			"2026-01-29T10:15:00Z 2026-02-26T10:15:00Z 2026-03-29T10:15:00Z 2026-04-28T10:15:00Z"},
		{"last Friday", "0 15 10 ? * 6L", "2026-01-02T00:00:00Z",
			"2026-01-30T10:15:00Z 2026-02-27T10:15:00Z 2026-03-27T10:15:00Z"},
		{"last Friday 2030-2032", "0 15 10 ? * 6L 2030-2032", "2026-01-02T00:00:00Z",
			"2030-01-25T10:15:00Z 2030-02-22T10:15:00Z"},
		{"last Friday 2030-2032, the end", "0 15 10 ? * 6L 2030-2032", "2032-11-30T00:00:00Z",
			"2032-12-31T10:15:00Z"},
		{"third Friday", "0 15 10 ? * 6#3", "2026-01-02T00:00:00Z",
			"2026-01-16T10:15:00Z 2026-02-20T10:15:00Z 2026-03-20T10:15:00Z"},
		{"every 5 days from the 1st", "0 0 12 1/5 * ?", "2026-01-02T00:00:00Z",
			"2026-01-06T12:00:00Z 2026-01-11T12:00:00Z 2026-01-16T12:00:00Z 2026-01-21T12:00:00Z " +
				"2026-01-26T12:00:00Z 2026-01-31T12:00:00Z 2026-02-01T12:00:00Z 2026-02-06T12:00:00Z"},
		{"November 11th at 11:11", "0 11 11 11 11 ?", "2026-01-02T00:00:00Z",
			"2026-11-11T11:11:00Z 2027-11-11T11:11:00Z"},

		// W and LW. 2026: Feb 15 and Mar 15 are Sundays, Aug 15 and
		// Aug 1 Saturdays, Feb 1 and Mar 1 Sundays, Jan 31 and Feb 28
		// Saturdays, May 31 a Sunday.
		{"15W on a Sunday is Monday the 16th", "0 0 12 15W * ?", "2026-01-20T00:00:00Z",
			"2026-02-16T12:00:00Z 2026-03-16T12:00:00Z 2026-04-15T12:00:00Z"},
		{"15W on a Saturday is Friday the 14th", "0 0 12 15W * ?", "2026-07-20T00:00:00Z",
			"2026-08-14T12:00:00Z 2026-09-15T12:00:00Z"},
		{"1W on a Saturday is Monday the 3rd", "0 0 12 1W * ?", "2026-07-20T00:00:00Z",
			"2026-08-03T12:00:00Z 2026-09-01T12:00:00Z"},
		{"1W on a Sunday is Monday the 2nd", "0 0 12 1W * ?", "2026-01-20T00:00:00Z",
			"2026-02-02T12:00:00Z 2026-03-02T12:00:00Z"},
		{"31W on a Sunday is Friday the 29th, skips short months", "0 0 12 31W * ?", "2026-05-01T00:00:00Z",
			"2026-05-29T12:00:00Z 2026-07-31T12:00:00Z"},
		{"last weekday", "0 0 12 LW * ?", "2026-01-02T00:00:00Z",
			"2026-01-30T12:00:00Z 2026-02-27T12:00:00Z 2026-03-31T12:00:00Z"},
		{"last weekday when the month ends on Sunday", "0 0 12 LW * ?", "2026-05-01T00:00:00Z",
			"2026-05-29T12:00:00Z"},

		// day-of-week numbers: 1 is Sunday
		{"6 is Friday", "0 0 9 ? * 6", "2026-01-05T00:00:00Z",
			"2026-01-09T09:00:00Z 2026-01-16T09:00:00Z"},
		{"1 is Sunday", "0 0 9 ? * 1", "2026-01-05T00:00:00Z",
			"2026-01-11T09:00:00Z"},
		{"7 is Saturday", "0 0 9 ? * 7", "2026-01-05T00:00:00Z",
			"2026-01-10T09:00:00Z"},
		{"L alone is Saturday", "0 0 9 ? * L", "2026-01-05T00:00:00Z",
			"2026-01-10T09:00:00Z 2026-01-17T09:00:00Z"},
		{"2-6 is Monday to Friday", "0 0 9 ? * 2-6", "2026-01-09T12:00:00Z",
			"2026-01-12T09:00:00Z 2026-01-13T09:00:00Z"},

		// other forms
		{"seconds step", "*/20 * * * * ?", "2026-01-02T10:00:00Z",
			"2026-01-02T10:00:20Z 2026-01-02T10:00:40Z 2026-01-02T10:01:00Z"},
		{"range with step", "0 10-50/10 9 * * ?", "2026-01-02T09:30:00Z",
			"2026-01-02T09:40:00Z 2026-01-02T09:50:00Z 2026-01-03T09:10:00Z"},
		{"wrapping hour range", "0 0 22-1 * * ?", "2026-01-02T21:30:00Z",
			"2026-01-02T22:00:00Z 2026-01-02T23:00:00Z 2026-01-03T00:00:00Z 2026-01-03T01:00:00Z 2026-01-03T22:00:00Z"},
		{"wrapping weekday range", "0 0 9 ? * FRI-MON", "2026-01-05T12:00:00Z", // a Monday
			"2026-01-09T09:00:00Z 2026-01-10T09:00:00Z 2026-01-11T09:00:00Z 2026-01-12T09:00:00Z 2026-01-16T09:00:00Z"},
		{"lower-case names", "0 0 12 ? jan,jul mon#1", "2026-01-02T00:00:00Z",
			"2026-01-05T12:00:00Z 2026-07-06T12:00:00Z"},
		{"* in both day fields", "0 0 12 * * *", "2026-01-02T13:00:00Z",
			"2026-01-03T12:00:00Z"},
		{"* in day-of-month restricts by weekday", "0 0 12 * * MON", "2026-01-02T13:00:00Z",
			"2026-01-05T12:00:00Z"},
		{"year list", "0 0 0 1 1 ? 2027,2029", "2026-01-02T00:00:00Z",
			"2027-01-01T00:00:00Z 2029-01-01T00:00:00Z"},
		{"year *", "0 0 0 1 1 ? *", "2026-01-02T00:00:00Z",
			"2027-01-01T00:00:00Z 2028-01-01T00:00:00Z"},
		{"fractional after", "0 0 12 * * ?", "2026-01-02T11:59:59.999Z",
			"2026-01-02T12:00:00Z 2026-01-03T12:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertNextN(t, mustParse(t, "quartz", tt.expr, ""), ts(t, tt.after), tt.want)
		})
	}
}

// TestQuartzEnds checks that an expression whose years are over stops
// firing instead of inventing a date.
func TestQuartzEnds(t *testing.T) {
	for _, tt := range []struct{ expr, after string }{
		{"0 15 10 ? * 6L 2030-2032", "2032-12-31T10:15:00Z"},
		{"0 15 10 * * ? 2030", "2030-12-31T10:15:00Z"},
		{"0 0 0 1 1 ? 2020", "2026-01-02T00:00:00Z"}, // accepted, like a past once time
		{"0 0 12 * * ?", "2199-12-31T12:00:00Z"},     // Quartz's last year
	} {
		s := mustParse(t, "quartz", tt.expr, "")
		if got, ok := s.Next(ts(t, tt.after)); ok {
			t.Errorf("%v: Next(%s) = %s, want none", s, tt.after, got.Format(time.RFC3339))
		}
	}
}

// TestQuartzDST pins the package's DST rule for quartz in Europe/Berlin,
// the same as for cron. 2026: spring forward on Mar 29 at 01:00Z (02:00 CET
// becomes 03:00 CEST), fall back on Oct 25 at 01:00Z (03:00 CEST becomes
// 02:00 CET). Both are the last Sunday of their month.
func TestQuartzDST(t *testing.T) {
	const berlin = "Europe/Berlin"
	tests := []struct {
		name, expr, after, want string
	}{
		{"gap time fires at 03:00 CEST", "0 30 2 * * ?", "2026-03-28T12:00:00Z",
			"2026-03-29T01:00:00Z 2026-03-30T00:30:00Z"},
		{"last Sunday 02:30 on the spring-forward day", "0 30 2 ? * 1L", "2026-03-01T00:00:00Z",
			"2026-03-29T01:00:00Z 2026-04-26T00:30:00Z"},
		{"gap times collapse into one fire", "0 0/15 * * * ?", "2026-03-29T00:40:00Z",
			"2026-03-29T00:45:00Z 2026-03-29T01:00:00Z 2026-03-29T01:15:00Z"},
		{"repeated time fires once", "0 30 2 ? * *", "2026-10-24T12:00:00Z",
			"2026-10-25T00:30:00Z 2026-10-26T01:30:00Z"},
		{"last Sunday 02:30 on the fall-back day", "0 30 2 ? * 1L", "2026-10-01T00:00:00Z",
			"2026-10-25T00:30:00Z 2026-11-29T01:30:00Z"},
		{"from inside the second pass", "0 30 2 * * ?", "2026-10-25T01:10:00Z",
			"2026-10-26T01:30:00Z"},
		{"sub-hourly skips the second pass", "0 0/15 * * * ?", "2026-10-25T00:40:00Z",
			"2026-10-25T00:45:00Z 2026-10-25T02:00:00Z 2026-10-25T02:15:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertNextN(t, mustParse(t, "quartz", tt.expr, berlin), ts(t, tt.after), tt.want)
		})
	}
}

// TestQuartzDSTMatchesWatcherModel runs quartz expressions through the same
// model of the DST rule as cron, around every 2026 transition of two zones.
func TestQuartzDSTMatchesWatcherModel(t *testing.T) {
	exprs := []string{"0 0/15 * * * ?", "0 30 2 * * ?", "0 30 1 ? * *", "30 59 1,2 ? * 1L", "0 0,30 0-3 L-6 * ?"}
	for _, zone := range []string{"Europe/Berlin", "America/New_York"} {
		loc := loadZoneT(t, zone)
		yearStart := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, tr := range transitionsIn(loc, yearStart, yearStart.AddDate(1, 0, 0)) {
			w := readWindow(loc, tr.Add(-3*time.Hour), tr.Add(3*time.Hour))
			for _, expr := range exprs {
				s := mustParse(t, "quartz", expr, zone)
				want := watcherFires(s.eval.(civilMatcher), w)
				checkSequence(t, s, w.from, w.to, want)
				checkArbitraryAfters(t, s, w.from, w.to, want)
			}
		}
	}
}

// TestQuartzInvalid checks that each bad expression is refused with the
// field and the expected form named, wrapping ErrInvalid (HTTP 400).
func TestQuartzInvalid(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{"", []string{"quartz expression is required"}},
		{"0 0 12 * *", []string{`quartz expression "0 0 12 * *": want 6 or 7 fields`, "got 5"}},
		{"0 0 12 * * ? 2030 x", []string{"want 6 or 7 fields", "got 8"}},
		{"60 0 12 * * ?", []string{`quartz second field "60": want 0-59`}},
		{"0 60 12 * * ?", []string{`quartz minute field "60": want 0-59`}},
		{"0 0 24 * * ?", []string{`quartz hour field "24": want 0-23`}},
		{"0 0 12 32 * ?", []string{`quartz day-of-month field "32": want 1-31`}},
		{"0 0 12 0 * ?", []string{`quartz day-of-month field "0"`}},
		{"0 0 12 ? 13 *", []string{`quartz month field "13": want 1-12 or JAN-DEC`}},
		{"0 0 12 ? FOO *", []string{`quartz month field "FOO"`}},
		{"0 0 12 ? * 8", []string{`quartz day-of-week field "8": want 1-7 or SUN-SAT`}},
		{"0 0 12 ? * 0", []string{`quartz day-of-week field "0": want 1-7 or SUN-SAT`}},
		{"0 0 12 ? * MON-FOO", []string{`quartz day-of-week field "MON-FOO"`}},
		{"0 0 12 ? * 6#6", []string{`quartz day-of-week field "6#6": want n#k with k 1-5`}},
		{"0 0 12 ? * 6#0", []string{"k 1-5"}},
		{"0 0 12 ? * 9L", []string{`quartz day-of-week field "9L": want 1-7`}},
		{"0 0 12 L-31 * ?", []string{`quartz day-of-month field "L-31": want L-n with n 0-30`}},
		{"0 0 12 32W * ?", []string{`quartz day-of-month field "32W": want nW with n 1-31`}},
		{"0 0 12 1-5W * ?", []string{`quartz day-of-month field "1-5W"`}},
		{"0 0 12 15 * MON", []string{`quartz expression "0 0 12 15 * MON"`, `day-of-month "15" and day-of-week "MON" both name days`, "write ? in one"}},
		{"0 0 12 L * 6L", []string{"both name days"}},
		{"0 0 12 * * ? 1969", []string{`quartz year field "1969": want 1970-2199`}},
		{"0 0 12 * * ? 2200", []string{`quartz year field "2200"`}},
		{"0 0 12 * * ? 2032-2030", []string{`quartz year field "2032-2030": range "2032-2030" runs backwards`}},
		{"0 0 12 * * ? ?", []string{`quartz year field "?"`, "? is allowed only in day-of-month and day-of-week"}},
		{"? 0 12 * * ?", []string{`quartz second field "?"`}},
		{"0 */0 12 * * ?", []string{`quartz minute field "*/0": step "0": want 1-60`}},
		{"0 0/x 12 * * ?", []string{`quartz minute field "0/x": step "x"`}},
		{"0 0 12 1,,2 * ?", []string{`quartz day-of-month field "1,,2"`}},
		{"0 0 12 30 2 ?", []string{`quartz expression "0 0 12 30 2 ?": it never fires`}},
		{"0 0 12 29 2 ? 2026-2027", []string{"it never fires"}},
		{"0 0 12 ? 2 2#5 2026", []string{"it never fires"}}, // Feb 2026 has four Mondays
	}
	for _, tt := range tests {
		s, err := Parse("quartz", tt.expr, "")
		if err == nil {
			t.Errorf("Parse(quartz, %q) = %v, want an error", tt.expr, s)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(quartz, %q) error %q does not wrap ErrInvalid", tt.expr, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(quartz, %q) error %q does not contain %q", tt.expr, err, w)
			}
		}
	}
}

// TestQuartzParseResult checks what Parse records for a quartz schedule.
func TestQuartzParseResult(t *testing.T) {
	s := mustParse(t, "quartz", "  0 15 10 ? * MON-FRI\t", "Europe/Berlin")
	if s.Type() != Quartz || s.Expr() != "0 15 10 ? * MON-FRI" || !s.Periodic() || s.TimeZone() != "Europe/Berlin" {
		t.Errorf("Parse = type %q expr %q periodic %v tz %q", s.Type(), s.Expr(), s.Periodic(), s.TimeZone())
	}
	if got, want := s.String(), `quartz "0 15 10 ? * MON-FRI" (Europe/Berlin)`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestCheckQuartz checks Quartz's rule on the day fields, which Parse
// relaxes for stored jobs: exactly one of day-of-month and day-of-week is
// ?, refused otherwise with Quartz's reason.
func TestCheckQuartz(t *testing.T) {
	for expr, ok := range map[string]bool{
		"0 0 0 * * ?":         true,
		"0 15 10 ? * MON-FRI": true,
		"0 0 0 1 1 ? 2030":    true,
		"0 0 0 * * *":         false, // xxl-job never fired it
		"0 0 0 ? * ?":         false,
		"0 0 12 * * MON":      false,
		"0 0 12 15 * *":       false,
		"0 0 12 * *":          true, // not 6 or 7 fields: Parse's business
	} {
		err := CheckQuartz(expr)
		if (err == nil) != ok {
			t.Errorf("CheckQuartz(%q) = %v, want ok %v", expr, err, ok)
		}
		if err != nil && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Support for specifying both a day-of-week AND a day-of-month parameter is not implemented")) {
			t.Errorf("CheckQuartz(%q) error %q: want ErrInvalid with Quartz's reason", expr, err)
		}
	}
	// Steps: Quartz refuses a second or minute step over 59 and an hour
	// step over 23, which Parse reads (they fire once).
	for expr, reason := range map[string]string{
		"0/60 * * * * ?":       "Increment > 60 : 60",
		"0 5/60 * * * ?":       "Increment > 60 : 60",
		"0 0 0,1/24 * * ?":     "Increment > 24 : 24",
		"0/59 0/59 0/23 * * ?": "",
		"0 0 0 1/31 * ?":       "",
	} {
		if _, err := Parse("quartz", expr, "UTC"); err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
		}
		err := CheckQuartz(expr)
		switch {
		case reason == "" && err != nil:
			t.Errorf("CheckQuartz(%q) = %v, want ok", expr, err)
		case reason != "" && (err == nil || !strings.Contains(err.Error(), reason)):
			t.Errorf("CheckQuartz(%q) = %v, want Quartz's %q", expr, err, reason)
		}
	}
}
