// Package calendar is what a calendar is: a named set of days (dates, date
// ranges, weekdays, holidays read from an iCalendar file) that jobs
// exclude from their fires or include back (make-up working days), and
// the one rule that judges a fire against a job's calendars (Judge).
//
// A fire is judged on the day it falls on in the zone of the schedule
// that fires it: 00:30 UTC on 2 January is still 1 January in New York.
// The rule: a fire on a day of an exclude calendar is skipped unless that
// day is in an include calendar too. The store writes calendars; Load
// (load.go) is the one read of them for judging, by the planner and the
// previews, which then ask Judge.
package calendar

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ErrInvalid marks a calendar refused as input (an HTTP 400).
var ErrInvalid = errors.New("invalid calendar")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Limits: a calendar is a few years of holidays, not a database.
const (
	MaxDays    = 5000
	MaxRanges  = 1000
	MaxICSSize = 1 << 20
	// MaxRangeDays bounds one range (ten years).
	MaxRangeDays = 3660
)

// DateLayout is how days are written: 2026-10-01.
const DateLayout = "2006-01-02"

// Range is the days From to To, both included, as DateLayout.
type Range struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Days are what a calendar holds, as the API and files write it.
type Days struct {
	Dates    []string `json:"dates,omitempty"`
	Ranges   []Range  `json:"ranges,omitempty"`
	Weekdays []string `json:"weekdays,omitempty"`
}

// Set is Days compiled for lookups.
type Set struct {
	days     map[int32]bool // days since the epoch (civil, zone-free)
	weekdays [7]bool
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// CheckName validates a calendar's name: 1 to 64 letters, digits, "_",
// "." or "-" (it is a path segment and a reference in job files).
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return invalidf("name %q: want 1 to 64 letters, digits, '_', '.' or '-'", name)
	}
	return nil
}

var weekdayNames = map[string]time.Weekday{"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday,
	"WED": time.Wednesday, "THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday}

// Compile validates d and returns its set; every problem is named.
func (d Days) Compile() (*Set, error) {
	s := &Set{days: make(map[int32]bool, len(d.Dates))}
	if len(d.Dates) > MaxDays {
		return nil, invalidf("%d dates, at most %d", len(d.Dates), MaxDays)
	}
	if len(d.Ranges) > MaxRanges {
		return nil, invalidf("%d ranges, at most %d", len(d.Ranges), MaxRanges)
	}
	for _, v := range d.Dates {
		n, err := dayNumber(v)
		if err != nil {
			return nil, invalidf("dates: %v", err)
		}
		s.days[n] = true
	}
	for _, r := range d.Ranges {
		from, err := dayNumber(r.From)
		if err != nil {
			return nil, invalidf("ranges: from: %v", err)
		}
		to, err := dayNumber(r.To)
		if err != nil {
			return nil, invalidf("ranges: to: %v", err)
		}
		if to < from || to-from >= MaxRangeDays {
			return nil, invalidf("range %s..%s: want from on or before to, at most %d days", r.From, r.To, MaxRangeDays)
		}
		for n := from; n <= to; n++ {
			s.days[n] = true
		}
		if len(s.days) > MaxDays*4 {
			return nil, invalidf("the ranges hold more than %d days", MaxDays*4)
		}
	}
	for _, w := range d.Weekdays {
		wd, ok := weekdayNames[strings.ToUpper(strings.TrimSpace(w))]
		if !ok {
			return nil, invalidf("weekday %q: want SUN, MON, TUE, WED, THU, FRI or SAT", w)
		}
		s.weekdays[wd] = true
	}
	return s, nil
}

// Normalized is d with weekdays upper-case, dates and weekdays sorted and
// unique: how a calendar is stored, so that equal calendars compare equal.
func (d Days) Normalized() Days {
	out := Days{Ranges: d.Ranges}
	for _, v := range d.Dates {
		out.Dates = append(out.Dates, strings.TrimSpace(v))
	}
	slices.Sort(out.Dates)
	out.Dates = slices.Compact(out.Dates)
	for _, w := range d.Weekdays {
		out.Weekdays = append(out.Weekdays, strings.ToUpper(strings.TrimSpace(w)))
	}
	slices.SortFunc(out.Weekdays, func(a, b string) int { return int(weekdayNames[a]) - int(weekdayNames[b]) })
	out.Weekdays = slices.Compact(out.Weekdays)
	return out
}

// dayNumber is a DateLayout day as days since 1970-01-01.
func dayNumber(v string) (int32, error) {
	t, err := time.Parse(DateLayout, strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("%q is not a date like 2026-10-01", v)
	}
	return int32(t.Unix() / 86400), nil
}

// Contains reports whether the civil day y-m-d is in the set.
func (s *Set) Contains(y int, m time.Month, d int) bool {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return s.weekdays[t.Weekday()] || s.days[int32(t.Unix()/86400)]
}

// Named is a compiled calendar with its name, as a job refers to it.
type Named struct {
	Name string
	Set  *Set
}

// Judge applies the rule to a fire at t, judged on its day in loc: the
// name of the first exclude calendar holding that day, "" when the fire
// runs (no exclude calendar holds the day, or an include calendar does).
func Judge(t time.Time, loc *time.Location, exclude, include []Named) string {
	y, m, d := t.In(loc).Date()
	for _, c := range exclude {
		if c.Set.Contains(y, m, d) {
			for _, in := range include {
				if in.Set.Contains(y, m, d) {
					return ""
				}
			}
			return c.Name
		}
	}
	return ""
}

// Message is the text of a SKIPPED run a calendar excluded.
func Message(name string) string { return "excluded by calendar " + name }
