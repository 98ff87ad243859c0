package calendar

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ParseICS reads the days of an iCalendar file's events (RFC 5545): each
// VEVENT's DTSTART to DTEND, DTEND not included as the standard says (an
// event without DTEND is its start day). Holiday calendars write DATE
// values (DTSTART;VALUE=DATE:20261001); a DATE-TIME value counts as its
// date. Only these two properties are read: recurrence rules (RRULE) are
// refused rather than silently ignored, so a calendar never holds fewer
// days than its file says.
func ParseICS(text string) ([]Range, error) {
	if len(text) > MaxICSSize {
		return nil, invalidf("ics: %d bytes, at most %d", len(text), MaxICSSize)
	}
	var (
		out        []Range
		in         bool
		start, end string
		line       int
	)
	for _, l := range unfold(text) {
		line++
		name, value, ok := property(l)
		if !ok {
			continue
		}
		switch {
		case name == "BEGIN" && value == "VEVENT":
			in, start, end = true, "", ""
		case name == "END" && value == "VEVENT":
			if !in {
				continue
			}
			in = false
			r, err := eventRange(start, end)
			if err != nil {
				return nil, invalidf("ics: event ending at line %d: %v", line, err)
			}
			out = append(out, r)
			if len(out) > MaxRanges {
				return nil, invalidf("ics: more than %d events", MaxRanges)
			}
		case in && name == "DTSTART":
			start = value
		case in && name == "DTEND":
			end = value
		case in && name == "RRULE":
			return nil, invalidf("ics: event at line %d repeats (RRULE): list its days instead", line)
		}
	}
	if len(out) == 0 {
		return nil, invalidf("ics: no VEVENT with a DTSTART found")
	}
	return out, nil
}

// unfold joins the file's folded lines (a line starting with a space or a
// tab continues the one before).
func unfold(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(out) > 0 {
			out[len(out)-1] += l[1:]
			continue
		}
		out = append(out, l)
	}
	return out
}

// property splits "NAME;PARAM=X:value" into its upper-case name and value.
func property(l string) (name, value string, ok bool) {
	head, value, ok := strings.Cut(l, ":")
	if !ok {
		return "", "", false
	}
	name, _, _ = strings.Cut(head, ";")
	return strings.ToUpper(strings.TrimSpace(name)), strings.TrimSpace(value), true
}

// eventRange turns DTSTART and DTEND values into an inclusive Range.
func eventRange(start, end string) (Range, error) {
	if start == "" {
		return Range{}, errors.New("no DTSTART")
	}
	from, err := icsDate(start)
	if err != nil {
		return Range{}, err
	}
	to := from
	if end != "" {
		e, err := icsDate(end)
		if err != nil {
			return Range{}, err
		}
		if e.After(from) {
			to = e.AddDate(0, 0, -1) // DTEND is exclusive
		}
	}
	return Range{From: from.Format(DateLayout), To: to.Format(DateLayout)}, nil
}

// icsDate reads a DATE (20261001) or the date of a DATE-TIME
// (20261001T090000Z).
func icsDate(v string) (time.Time, error) {
	if len(v) >= 8 {
		if t, err := time.Parse("20060102", v[:8]); err == nil && (len(v) == 8 || v[8] == 'T') {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an iCalendar date like 20261001", v)
}
