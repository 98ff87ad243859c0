package schedule

import (
	"errors"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones load even where the OS has no zone database
)

const (
	minInterval = time.Second
	maxInterval = 366 * 24 * time.Hour
)

const wantTypes = "want cron, quartz, fix_rate, fix_delay, once or none"

// Parse validates a schedule given as user input: its type, its expression
// and the IANA time zone cron and quartz fields are evaluated in ("" means UTC).
// Surrounding white space in expr and timezone is ignored. Every error names
// the offending value and what was expected, and wraps ErrInvalid.
//
// A once time in the past is accepted: whether that is an error depends on
// the caller (creating a job versus loading a finished one).
func Parse(typ, expr, timezone string) (*Schedule, error) {
	switch Type(typ) {
	case Cron, Quartz, FixRate, FixDelay, Once, None:
	case "":
		return nil, invalidf(nil, "schedule type is required (%s)", wantTypes)
	default:
		return nil, invalidf(nil, "unknown schedule type %q (%s)", typ, wantTypes)
	}
	expr = strings.TrimSpace(expr)
	tz := strings.TrimSpace(timezone)
	loc, err := loadZone(tz)
	if err != nil {
		return nil, err
	}
	if tz == "" {
		tz = "UTC"
	}
	s := &Schedule{typ: Type(typ), expr: expr, tz: tz, loc: loc}
	switch s.typ {
	case Cron:
		if expr == "" {
			return nil, invalidf(nil, "cron expression is required, e.g. \"0 */5 * * * *\" or \"@hourly\"")
		}
		s.eval, err = parseCron(expr, loc)
	case Quartz:
		s.eval, err = parseQuartz(expr, loc)
	case FixRate, FixDelay:
		var d time.Duration
		d, err = parseInterval(s.typ, expr)
		s.eval = intervalSchedule{interval: d}
	case Once:
		s.at, err = parseOnce(expr)
		s.eval = onceSchedule{at: s.at}
	case None:
		if expr != "" {
			err = invalidf(nil, "schedule type none takes no expression, got %q", expr)
		}
		s.eval = never{}
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// loadZone resolves an IANA zone name; "" is UTC.
func loadZone(name string) (*time.Location, error) {
	switch name {
	case "", "UTC":
		return time.UTC, nil
	case "Local":
		return nil, invalidf(nil, "time zone %q would depend on the server; name an IANA zone like \"Europe/Berlin\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, invalidf(err, "unknown time zone %q: want an IANA name like \"Europe/Berlin\"", name)
	}
	return loc, nil
}

// parseInterval reads a fix_rate or fix_delay interval: a Go duration or a
// bare number of seconds.
func parseInterval(typ Type, expr string) (time.Duration, error) {
	const want = `want a duration like "30s" or a number of seconds`
	if expr == "" {
		return 0, invalidf(nil, "%s interval is required: %s", typ, want)
	}
	d, err := durationOrSeconds(expr)
	if err != nil {
		return 0, invalidf(err, "%s interval %q: %s", typ, expr, want)
	}
	if err := checkInterval(d); err != nil {
		return 0, invalidf(nil, "%s interval %q: %v", typ, expr, err)
	}
	return d, nil
}

// durationOrSeconds parses "90" as 90s and anything else as a Go duration.
// A number of seconds too large for a Duration saturates, so that it is
// reported as too long rather than as malformed.
func durationOrSeconds(expr string) (time.Duration, error) {
	n, err := strconv.ParseInt(expr, 10, 64)
	switch {
	case err == nil:
		const maxSeconds = int64(1<<63-1) / int64(time.Second)
		return time.Duration(max(min(n, maxSeconds), -maxSeconds)) * time.Second, nil
	case errors.Is(err, strconv.ErrRange):
		if strings.HasPrefix(expr, "-") {
			return time.Duration(-1 << 63), nil
		}
		return time.Duration(1<<63 - 1), nil
	}
	return time.ParseDuration(expr)
}

// checkInterval enforces the interval bounds shared by fix_rate, fix_delay
// and @every.
func checkInterval(d time.Duration) error {
	if d < minInterval {
		return errors.New("must be at least 1s")
	}
	if d > maxInterval {
		return errors.New("must be at most 366 days (8784h)")
	}
	return nil
}

// parseOnce reads a once schedule's RFC 3339 instant and returns it in UTC.
func parseOnce(expr string) (time.Time, error) {
	const want = "want RFC 3339 like 2026-01-02T15:04:05Z"
	if expr == "" {
		return time.Time{}, invalidf(nil, "once time is required: %s", want)
	}
	t, err := time.Parse(time.RFC3339, expr)
	if err != nil {
		return time.Time{}, invalidf(err, "once time %q: %s", expr, want)
	}
	return t.UTC(), nil
}
