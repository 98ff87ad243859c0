package schedule

import (
	"strconv"
	"strings"
	"time"
)

// Quartz expressions are what xxl-job and Java's Quartz scheduler store, so
// a job brought over from them keeps its schedule verbatim. The syntax
// (quartz-scheduler.org, CronTrigger tutorial) is 6 or 7 fields:
//
//	second minute hour day-of-month month day-of-week [year]
//
// with lists, ranges, steps ("0/5", "*/5", "10-50/10"), month names JAN-DEC,
// day names SUN-SAT and day-of-week numbers 1-7 where 1 is Sunday (not
// Monday, and not 0 as in cron). Ranges may wrap ("22-2", "FRI-MON") except
// in the year field. Day-of-month also takes L (last day), L-n (n days
// before it), nW (the weekday nearest the nth, never crossing into another
// month) and LW (the last weekday); day-of-week takes nL (the last such day
// of the month), n#k (the kth such day) and L alone (7, Saturday). Years run
// 1970-2199, as in Quartz; nothing fires after 2199. A day the month lacks
// does not fire in it: "31W" skips June, "L-30" fires only in 31-day months,
// "5#5" only in months with five Thursdays (Quartz is loose about these).
//
// Quartz requires ? in exactly one of day-of-month and day-of-week. Parse
// keeps the part of that rule that prevents ambiguity, refusing expressions
// in which both fields name specific days, and reads * like ?, so that a
// job saved before CheckQuartz existed ("0 0 12 * * *") stays planned.
// Where a schedule is written (the API, job files, the xxl-job import)
// CheckQuartz applies the whole rule, so that the quartz type accepts
// exactly what Quartz, and so xxl-job, accepts.

// CheckQuartz refuses what Quartz's CronExpression refuses beyond the
// syntax Parse reads, with Quartz's own reason: exactly one of
// day-of-month and day-of-week must be ?, and a step of the second or
// minute field must be at most 59, of the hour field at most 23 (Parse
// takes up to the field's size, 60 or 24, which fire once: "0/60" is
// second 0). It says nothing of an expression without six or seven fields
// (Parse does).
func CheckQuartz(expr string) error {
	f := strings.Fields(expr)
	if len(f) != 6 && len(f) != 7 {
		return nil
	}
	if (f[3] == "?") == (f[5] == "?") {
		return invalidf(nil, "quartz expression %q: Support for specifying both a day-of-week AND a day-of-month parameter is not implemented "+
			"(Quartz's reason: write ? in exactly one of day-of-month %q and day-of-week %q)", expr, f[3], f[5])
	}
	for i, field := range []*quartzField{&quartzSecond, &quartzMinute, &quartzHour} {
		for _, part := range strings.Split(f[i], ",") {
			_, step, ok := strings.Cut(part, "/")
			if n, err := strconv.Atoi(step); ok && err == nil && n > field.hi {
				return invalidf(nil, "quartz expression %q: Increment > %d : %d (Quartz's reason: a step of the %s field is at most %d)",
					expr, field.hi+1, n, field.name, field.hi)
			}
		}
	}
	return nil
}

// quartzMinYear and quartzMaxYear bound the year field, as Quartz does.
const (
	quartzMinYear = 1970
	quartzMaxYear = 2199
)

// valueSet is a set of field values; years are stored as year-quartzMinYear.
type valueSet [4]uint64

func (v *valueSet) add(i int) { v[i/64] |= 1 << (i % 64) }

func (v *valueSet) has(i int) bool {
	return i >= 0 && i < 256 && v[i/64]&(1<<(i%64)) != 0
}

// quartzField is one field's bounds and names.
type quartzField struct {
	name   string
	lo, hi int
	names  map[string]int
	want   string
}

var (
	quartzSecond = quartzField{name: "second", lo: 0, hi: 59, want: "want 0-59"}
	quartzMinute = quartzField{name: "minute", lo: 0, hi: 59, want: "want 0-59"}
	quartzHour   = quartzField{name: "hour", lo: 0, hi: 23, want: "want 0-23"}
	quartzDOM    = quartzField{name: "day-of-month", lo: 1, hi: 31,
		want: "want 1-31, ?, L, L-n, nW or LW"}
	quartzMonth = quartzField{name: "month", lo: 1, hi: 12, want: "want 1-12 or JAN-DEC",
		names: map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
			"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}}
	quartzDOW = quartzField{name: "day-of-week", lo: 1, hi: 7, want: "want 1-7 or SUN-SAT",
		names: map[string]int{"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}}
	quartzYear = quartzField{name: "year", lo: quartzMinYear, hi: quartzMaxYear, want: "want 1970-2199"}
)

// errorf is a validation error naming the field and its text.
func (f *quartzField) errorf(text, format string, args ...any) error {
	return invalidf(nil, "quartz %s field %q: "+format, append([]any{f.name, text}, args...)...)
}

// value reads one number or name of the field.
func (f *quartzField) value(text, field string) (int, error) {
	if v, ok := f.names[strings.ToUpper(text)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < f.lo || v > f.hi {
		return 0, f.errorf(field, "%s", f.want)
	}
	return v, nil
}

// parseList reads a comma-separated list of values, ranges and steps into a
// set of values. wrapped reports a range that wraps around (e.g. "22-2"),
// which cron cannot express.
func (f *quartzField) parseList(text string) (set valueSet, wrapped bool, err error) {
	size := f.hi - f.lo + 1
	for _, part := range strings.Split(text, ",") {
		base, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			step, err = strconv.Atoi(stepText)
			if err != nil || step < 1 || step > size {
				return set, false, f.errorf(text, "step %q: want 1-%d", stepText, size)
			}
		}
		var a, b int
		switch from, to, isRange := strings.Cut(base, "-"); {
		case base == "*":
			a, b = f.lo, f.hi
		case isRange:
			if a, err = f.value(from, text); err != nil {
				return set, false, err
			}
			if b, err = f.value(to, text); err != nil {
				return set, false, err
			}
		default:
			if a, err = f.value(base, text); err != nil {
				return set, false, err
			}
			b = a
			if hasStep { // "5/15" runs from 5 to the field's end
				b = f.hi
			}
		}
		n := b - a + 1
		if b < a {
			if f.name == quartzYear.name {
				return set, false, f.errorf(text, "range %q runs backwards", base)
			}
			n += size
			wrapped = true
		}
		for k := 0; k < n; k += step {
			set.add(f.lo + (a-f.lo+k)%size - f.offset())
		}
	}
	return set, wrapped, nil
}

// offset is what is subtracted from a value to index a valueSet: years are
// stored from quartzMinYear so that 230 of them fit.
func (f *quartzField) offset() int {
	if f.name == quartzYear.name {
		return quartzMinYear
	}
	return 0
}

// The day-of-month forms.
type domKind uint8

const (
	domAny         domKind = iota // * or ?
	domSet                        // a list of days
	domLast                       // L, L-n: n days before the last day
	domNearest                    // nW: the weekday nearest day n
	domLastWeekday                // LW
)

// The day-of-week forms.
type dowKind uint8

const (
	dowAny  dowKind = iota // * or ?
	dowSet                 // a list of weekdays
	dowLast                // nL: the last weekday n of the month
	dowNth                 // n#k: the kth weekday n of the month
)

// quartzSchedule holds a parsed Quartz expression, matched on the civil
// clock of loc (see wallclock.go).
type quartzSchedule struct {
	sec, min, hour, month, year valueSet

	dom  domKind
	days valueSet // domSet
	domN int      // domLast: the offset; domNearest: the day

	dow      dowKind
	weekdays valueSet // dowSet: 1 = Sunday
	dowN     int      // dowLast, dowNth: the weekday, 1 = Sunday
	dowK     int      // dowNth: k

	wrapped bool // some range wraps around
	loc     *time.Location
}

func (q *quartzSchedule) next(after time.Time) (time.Time, bool) {
	return nextOnWallClock(q, q.loc, after)
}

// parseQuartz parses a Quartz expression evaluated in loc.
func parseQuartz(expr string, loc *time.Location) (*quartzSchedule, error) {
	if expr == "" {
		return nil, invalidf(nil, "quartz expression is required, e.g. \"0 0/5 * * * ?\" or \"0 15 10 ? * MON-FRI\"")
	}
	fields := strings.Fields(expr)
	if len(fields) != 6 && len(fields) != 7 {
		return nil, invalidf(nil, "quartz expression %q: want 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got %d", expr, len(fields))
	}
	q := &quartzSchedule{loc: loc}
	for _, f := range []struct {
		field *quartzField
		text  string
		dst   *valueSet
	}{
		{&quartzSecond, fields[0], &q.sec},
		{&quartzMinute, fields[1], &q.min},
		{&quartzHour, fields[2], &q.hour},
		{&quartzMonth, fields[4], &q.month},
	} {
		if f.text == "?" {
			return nil, f.field.errorf(f.text, "? is allowed only in day-of-month and day-of-week")
		}
		if err := q.list(f.field, f.text, f.dst); err != nil {
			return nil, err
		}
	}
	if err := q.parseDOM(fields[3]); err != nil {
		return nil, err
	}
	if err := q.parseDOW(fields[5]); err != nil {
		return nil, err
	}
	if q.dom != domAny && q.dow != dowAny {
		return nil, invalidf(nil, "quartz expression %q: day-of-month %q and day-of-week %q both name days; write ? in one of them (Quartz does not support both)",
			expr, fields[3], fields[5])
	}
	year := "*"
	if len(fields) == 7 {
		year = fields[6]
	}
	if year == "?" {
		return nil, quartzYear.errorf(year, "? is allowed only in day-of-month and day-of-week")
	}
	var err error
	if q.year, _, err = quartzYear.parseList(year); err != nil {
		return nil, err
	}
	// Years already passed are accepted (the schedule then never fires
	// again), as for a once time in the past; an expression no date can
	// ever satisfy is a mistake.
	if _, ok := q.nextMatch(time.Date(quartzMinYear-1, 12, 31, 23, 59, 59, 0, time.UTC)); !ok {
		return nil, invalidf(nil, "quartz expression %q: it never fires (no date matches its day, month and year fields)", expr)
	}
	return q, nil
}

// list parses a list field into dst and notes a wrapping range.
func (q *quartzSchedule) list(f *quartzField, text string, dst *valueSet) error {
	set, wrapped, err := f.parseList(text)
	if err != nil {
		return err
	}
	*dst, q.wrapped = set, q.wrapped || wrapped
	return nil
}

// parseDOM reads the day-of-month field.
func (q *quartzSchedule) parseDOM(text string) error {
	f := &quartzDOM
	u := strings.ToUpper(text)
	var err error
	switch {
	case u == "*" || u == "?":
		q.dom = domAny
	case u == "L":
		q.dom = domLast
	case u == "LW":
		q.dom = domLastWeekday
	case strings.HasPrefix(u, "L-"):
		q.dom = domLast
		q.domN, err = strconv.Atoi(u[2:])
		if err != nil || q.domN < 0 || q.domN > 30 {
			return f.errorf(text, "want L-n with n 0-30")
		}
	case strings.HasSuffix(u, "W"):
		q.dom = domNearest
		q.domN, err = strconv.Atoi(u[:len(u)-1])
		if err != nil || q.domN < 1 || q.domN > 31 {
			return f.errorf(text, "want nW with n 1-31 (a single day)")
		}
	default:
		q.dom = domSet
		return q.list(f, text, &q.days)
	}
	return nil
}

// parseDOW reads the day-of-week field.
func (q *quartzSchedule) parseDOW(text string) error {
	f := &quartzDOW
	var err error
	switch u := strings.ToUpper(text); {
	case u == "*" || u == "?":
		q.dow = dowAny
	case u == "L": // Quartz: L alone is 7, Saturday
		q.dow = dowSet
		q.weekdays.add(7)
	case strings.HasSuffix(u, "L"):
		q.dow = dowLast
		if q.dowN, err = f.value(text[:len(text)-1], text); err != nil {
			return err
		}
	case strings.Contains(text, "#"):
		day, nth, _ := strings.Cut(text, "#")
		q.dow = dowNth
		if q.dowN, err = f.value(day, text); err != nil {
			return err
		}
		q.dowK, err = strconv.Atoi(nth)
		if err != nil || q.dowK < 1 || q.dowK > 5 {
			return f.errorf(text, "want n#k with k 1-5")
		}
	default:
		q.dow = dowSet
		return q.list(f, text, &q.weekdays)
	}
	return nil
}

// nextMatch returns the first whole-second civil time after from that the
// fields name. It walks days rather than seconds, so even an expression
// that fires once a year (or never: Parse's check) costs at most a few
// hundred thousand cheap steps.
func (q *quartzSchedule) nextMatch(from time.Time) (time.Time, bool) {
	t := from.Truncate(time.Second).Add(time.Second)
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	if y < quartzMinYear {
		y, mo, d, h, mi, s = quartzMinYear, time.January, 1, 0, 0, 0
	}
	for ; y <= quartzMaxYear; y, mo, d, h, mi, s = y+1, time.January, 1, 0, 0, 0 {
		if !q.year.has(y - quartzMinYear) {
			continue
		}
		for ; mo <= time.December; mo, d, h, mi, s = mo+1, 1, 0, 0, 0 {
			if !q.month.has(int(mo)) {
				continue
			}
			last := daysIn(y, mo)
			for ; d <= last; d, h, mi, s = d+1, 0, 0, 0 {
				if !q.dayMatches(y, mo, d, last) {
					continue
				}
				if hh, mm, ss, ok := q.timeFrom(h, mi, s); ok {
					return time.Date(y, mo, d, hh, mm, ss, 0, time.UTC), true
				}
			}
		}
	}
	return time.Time{}, false
}

// timeFrom returns the first time of day at or after h:m:s that the
// second, minute and hour fields name.
func (q *quartzSchedule) timeFrom(h, m, s int) (int, int, int, bool) {
	for ; h < 24; h, m, s = h+1, 0, 0 {
		if !q.hour.has(h) {
			continue
		}
		for ; m < 60; m, s = m+1, 0 {
			if !q.min.has(m) {
				continue
			}
			for ; s < 60; s++ {
				if q.sec.has(s) {
					return h, m, s, true
				}
			}
		}
	}
	return 0, 0, 0, false
}

// dayMatches reports whether day d of a month with last days matches both
// day fields (at most one of which restricts the day).
func (q *quartzSchedule) dayMatches(y int, mo time.Month, d, last int) bool {
	switch q.dom {
	case domSet:
		return q.days.has(d)
	case domLast:
		return d == last-q.domN
	case domNearest:
		return q.domN <= last && d == nearestWeekday(y, mo, q.domN, last)
	case domLastWeekday:
		return d == nearestWeekday(y, mo, last, last)
	}
	if q.dow == dowAny {
		return true
	}
	wd := int(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Weekday()) + 1 // 1 = Sunday
	switch q.dow {
	case dowSet:
		return q.weekdays.has(wd)
	case dowLast:
		return wd == q.dowN && d+7 > last
	case dowNth:
		return wd == q.dowN && (d-1)/7+1 == q.dowK
	}
	return true // unreachable: dowAny returned above
}

// nearestWeekday is Quartz's W: day n itself on Monday to Friday; on a
// Saturday the Friday before, on a Sunday the Monday after, except that it
// never leaves the month (Saturday the 1st gives Monday the 3rd, Sunday the
// last gives the Friday before).
func nearestWeekday(y int, mo time.Month, n, last int) int {
	switch time.Date(y, mo, n, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}

// daysIn returns the number of days in month mo of year y.
func daysIn(y int, mo time.Month) int {
	return time.Date(y, mo+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
