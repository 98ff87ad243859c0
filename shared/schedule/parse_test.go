package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseValid(t *testing.T) {
	tests := []struct {
		typ, expr, tz string
		wantExpr      string
		wantTZ        string
		periodic      bool
	}{
		{"cron", "*/15 * * * * *", "", "*/15 * * * * *", "UTC", true},
		{"cron", "0 */59 * * * *", "", "0 */59 * * * *", "UTC", true}, // the largest step of the minute field
		{"cron", "0 9 * * 1-5", "Europe/Berlin", "0 9 * * 1-5", "Europe/Berlin", true},
		{"cron", "  @hourly\t", " Asia/Tokyo ", "@hourly", "Asia/Tokyo", true},
		{"cron", "@every 10s", "UTC", "@every 10s", "UTC", true},
		{"cron", "0 0 0 29 2 *", "", "0 0 0 29 2 *", "UTC", true}, // leap day only
		{"fix_rate", "30s", "", "30s", "UTC", true},
		{"fix_rate", "1s", "", "1s", "UTC", true},             // lower bound
		{"fix_rate", "8784h", "", "8784h", "UTC", true},       // upper bound, 366 days
		{"fix_rate", "31622400", "", "31622400", "UTC", true}, // 366 days in seconds
		{"fix_delay", "90", "", "90", "UTC", false},
		{"once", "2026-01-02T15:04:05Z", "", "2026-01-02T15:04:05Z", "UTC", false},
		{"once", "2020-01-02T15:04:05+01:00", "", "2020-01-02T15:04:05+01:00", "UTC", false}, // past is fine
		{"none", "", "America/New_York", "", "America/New_York", false},
		{"none", "   ", "", "", "UTC", false},
	}
	for _, tt := range tests {
		s := mustParse(t, tt.typ, tt.expr, tt.tz)
		if s.Type() != Type(tt.typ) || s.Expr() != tt.wantExpr || s.TimeZone() != tt.wantTZ || s.Periodic() != tt.periodic {
			t.Errorf("Parse(%q, %q, %q) = type %q expr %q tz %q periodic %v; want %q %q %q %v",
				tt.typ, tt.expr, tt.tz, s.Type(), s.Expr(), s.TimeZone(), s.Periodic(),
				tt.typ, tt.wantExpr, tt.wantTZ, tt.periodic)
		}
		if s.Location().String() != tt.wantTZ {
			t.Errorf("Parse(%q, %q, %q).Location() = %v, want %s", tt.typ, tt.expr, tt.tz, s.Location(), tt.wantTZ)
		}
	}
}

// TestParseInvalid checks that each bad input is refused with a message that
// names the problem, and that the error wraps ErrInvalid (HTTP 400).
func TestParseInvalid(t *testing.T) {
	tests := []struct {
		typ, expr, tz string
		want          []string // substrings of the error text
	}{
		// type
		{"", "0 * * * * *", "", []string{"schedule type is required", "want cron, quartz, fix_rate, fix_delay, once or none"}},
		{"hourly", "", "", []string{`unknown schedule type "hourly"`}},
		{"CRON", "0 * * * * *", "", []string{`unknown schedule type "CRON"`}},
		{"", "", "Mars/Base", []string{"schedule type is required"}}, // the type is reported first

		// time zone
		{"cron", "0 * * * * *", "Mars/Base", []string{`unknown time zone "Mars/Base"`, "IANA"}},
		{"fix_rate", "30s", "Local", []string{`time zone "Local"`, "IANA"}},
		{"cron", "0 * * * * *", "../../etc/passwd", []string{`unknown time zone "../../etc/passwd"`}},
		{"cron", "0 * * * * *", "europe/berlin", []string{`unknown time zone "europe/berlin"`}},

		// cron
		{"cron", "", "", []string{"cron expression is required"}},
		{"cron", "61 * * * * *", "", []string{`invalid cron expression "61 * * * * *"`, "above maximum"}},
		{"cron", "0 0 25 * * *", "", []string{`invalid cron expression "0 0 25 * * *"`, "(25) above maximum (23)"}},
		{"cron", "* * *", "", []string{`invalid cron expression "* * *"`, "expected 5 to 6 fields, found 3"}},
		{"cron", "0 0 0 * * * 2026", "", []string{"expected 5 to 6 fields, found 7"}},
		{"cron", "0 0 * * 7", "", []string{`invalid cron expression "0 0 * * 7"`, "above maximum (6)"}},
		{"cron", "*/0 * * * *", "", []string{"step of range should be a positive number"}},
		{"cron", "a b c d e", "", []string{`invalid cron expression "a b c d e"`}},
		{"cron", "@fortnightly", "", []string{`invalid cron expression "@fortnightly"`, "unrecognized descriptor"}},
		{"cron", "TZ=Europe/Berlin 0 0 * * *", "", []string{"remove the TZ= prefix", "timezone field"}},
		{"cron", "CRON_TZ=Europe/Berlin 0 0 * * *", "", []string{"remove the CRON_TZ= prefix", "timezone field"}},
		{"cron", "TZ=UTC", "", []string{"remove the TZ= prefix"}}, // robfig itself would panic on this
		{"cron", "cron_tz=UTC 0 0 * * *", "", []string{"remove the CRON_TZ= prefix"}},
		{"cron", "0 0 0 31 2 *", "", []string{`invalid cron expression "0 0 0 31 2 *"`, "never fires"}},
		// A step larger than its field's range would match only its start.
		{"cron", "0 */61 * * * *", "", []string{`invalid cron expression "0 */61 * * * *"`, "step /61 in the minute field is larger than its range 0-59"}},
		{"cron", "0 0 */24 * * *", "", []string{"step /24 in the hour field"}},
		{"cron", "0 0 1-5/40 * *", "", []string{"step /40 in the day-of-month field"}},
		{"cron", "*/60 * * * * *", "", []string{"step /60 in the second field"}},
		{"cron", "0 0 31 4 *", "", []string{"never fires"}},
		{"cron", "@every", "", []string{`invalid cron expression "@every"`, `want a duration like "@every 10s"`}},
		{"cron", "@every abc", "", []string{`invalid cron expression "@every abc"`, `want a duration like "@every 10s"`}},
		{"cron", "@every 10s 5s", "", []string{`want a duration like "@every 10s"`}},
		{"cron", "@every 500ms", "", []string{`invalid cron expression "@every 500ms"`, "at least 1s"}},
		{"cron", "@every -5s", "", []string{"at least 1s"}},
		{"cron", "@every 0s", "", []string{"at least 1s"}},
		{"cron", "@every 8785h", "", []string{"at most 366 days"}},

		// fix_rate, fix_delay
		{"fix_rate", "", "", []string{"fix_rate interval is required", `want a duration like "30s"`}},
		{"fix_rate", "abc", "", []string{`fix_rate interval "abc": want a duration like "30s"`}},
		{"fix_delay", "1x", "", []string{`fix_delay interval "1x": want a duration like "30s"`}},
		{"fix_rate", "1d", "", []string{`fix_rate interval "1d": want a duration`}}, // Go durations have no days
		{"fix_rate", "1.5", "", []string{`fix_rate interval "1.5": want a duration`}},
		{"fix_rate", "0", "", []string{`fix_rate interval "0": must be at least 1s`}},
		{"fix_rate", "-5", "", []string{`fix_rate interval "-5": must be at least 1s`}},
		{"fix_delay", "999ms", "", []string{`fix_delay interval "999ms": must be at least 1s`}},
		{"fix_rate", "-1h", "", []string{"must be at least 1s"}},
		{"fix_rate", "8784h1s", "", []string{`fix_rate interval "8784h1s": must be at most 366 days`}},
		{"fix_delay", "31622401", "", []string{`fix_delay interval "31622401": must be at most 366 days`}},
		{"fix_rate", "99999999999999999999", "", []string{"must be at most 366 days"}},
		{"fix_rate", "-99999999999999999999", "", []string{"must be at least 1s"}},
		{"fix_rate", "9223372037", "", []string{"must be at most 366 days"}}, // seconds that overflow a Duration

		// once
		{"once", "", "", []string{"once time is required", "want RFC 3339 like 2026-01-02T15:04:05Z"}},
		{"once", "x", "", []string{`once time "x": want RFC 3339 like 2026-01-02T15:04:05Z`}},
		{"once", "2026-01-02 15:04:05Z", "", []string{`once time "2026-01-02 15:04:05Z"`, "RFC 3339"}},
		{"once", "2026-01-02T15:04:05", "", []string{`once time "2026-01-02T15:04:05"`}}, // no offset
		{"once", "2026-13-01T00:00:00Z", "", []string{`once time "2026-13-01T00:00:00Z"`}},
		{"once", "1767366245", "", []string{`once time "1767366245"`}}, // no Unix seconds

		// none
		{"none", "x", "", []string{`schedule type none takes no expression, got "x"`}},
	}
	for _, tt := range tests {
		s, err := Parse(tt.typ, tt.expr, tt.tz)
		if err == nil {
			t.Errorf("Parse(%q, %q, %q) = %v, want an error", tt.typ, tt.expr, tt.tz, s)
			continue
		}
		if s != nil {
			t.Errorf("Parse(%q, %q, %q) returned a schedule with its error", tt.typ, tt.expr, tt.tz)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q, %q, %q) error %q does not wrap ErrInvalid", tt.typ, tt.expr, tt.tz, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Parse(%q, %q, %q) error %q does not contain %q", tt.typ, tt.expr, tt.tz, err, w)
			}
		}
	}
}

// TestParseErrorCause checks that the underlying error stays reachable, so
// that callers can log details without parsing text.
func TestParseErrorCause(t *testing.T) {
	_, err := Parse("once", "2026-01-02", "")
	var pe *time.ParseError
	if !errors.As(err, &pe) {
		t.Errorf("once error %v does not unwrap to *time.ParseError", err)
	}
	_, err = Parse("cron", "0 * * * * *", "Mars/Base")
	if !errors.Is(err, ErrInvalid) || strings.Count(err.Error(), "Mars/Base") != 1 {
		t.Errorf("zone error %q: want ErrInvalid and the name once", err)
	}
}

func TestStringDescribesSchedule(t *testing.T) {
	tests := []struct{ typ, expr, tz, want string }{
		{"cron", "0 0 9 * * *", "Asia/Tokyo", `cron "0 0 9 * * *" (Asia/Tokyo)`},
		{"fix_rate", "30s", "", `fix_rate "30s"`},
		{"none", "", "", "none"},
	}
	for _, tt := range tests {
		if got := mustParse(t, tt.typ, tt.expr, tt.tz).String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
