package schedule

import "time"

// The functions here translate between instants and a time zone's wall
// clock. A wall-clock reading ("civil time") is carried as a time.Time in UTC
// whose fields are the local fields: UTC has no transitions, so arithmetic on
// civil times, and robfig's field matching, never meet a gap or an overlap.
// The DST rule of the package doc is implemented by highWater and
// firstReading, and applied to every field-based type (cron, quartz) by
// nextOnWallClock.

// civilMatcher is a schedule defined by wall-clock fields (cron, quartz).
type civilMatcher interface {
	// nextMatch returns the first whole-second civil time after from that
	// the fields name, and false when there is none.
	nextMatch(from time.Time) (time.Time, bool)
}

// nextOnWallClock finds the first time m names above loc's clock high-water
// mark at after, and maps it to the first instant the clock reads it or
// later. Both steps are monotonic, so the result is strictly after `after`
// and no fire in between is missed (see the package doc for the rule). Every
// field-based type goes through here so that they all share one DST rule.
func nextOnWallClock(m civilMatcher, loc *time.Location, after time.Time) (time.Time, bool) {
	c, ok := m.nextMatch(highWater(after, loc))
	if !ok {
		return time.Time{}, false
	}
	return firstReading(c, loc).UTC(), true
}

// lookback exceeds every UTC offset that ever existed (local mean times
// before 1900 reach about ±16h), so a clock reading c cannot be shown
// before the instant c-lookback nor after c+lookback.
const lookback = 30 * time.Hour

// civil returns the reading of loc's clock at instant t.
func civil(t time.Time, loc *time.Location) time.Time {
	_, off := t.In(loc).Zone()
	return t.UTC().Add(time.Duration(off) * time.Second)
}

// firstReading returns the first instant at which loc's clock reads c or
// later. Normally that is the one instant showing c. In a fall-back overlap,
// where c is shown twice, it is the earlier one, so a repeated time fires
// once. In a spring-forward gap, where c is never shown, it is the instant
// of the transition, the first valid time after the gap.
//
// It walks the zone's periods of constant offset forward from a point where
// the clock surely reads less than c.
func firstReading(c time.Time, loc *time.Location) time.Time {
	t := c.Add(-lookback)
	for {
		lt := t.In(loc)
		_, sec := lt.Zone()
		off := time.Duration(sec) * time.Second
		if !t.UTC().Add(off).Before(c) {
			// This period already starts at or past c: c fell in the gap
			// before it.
			return t
		}
		_, end := lt.ZoneBounds()
		at := c.Add(-off) // where this period's clock reads c
		if end.IsZero() || at.Before(end) || !end.After(t) {
			return at
		}
		t = end
	}
}

// highWater returns the highest reading loc's clock has shown at or before
// instant t. That is civil(t) except during the second pass of a fall-back
// overlap, where the clock shows times it has shown already; there it is
// just under the reading at which the clock was set back. Searching for the
// next match above the high-water mark, not above civil(t), is what keeps a
// repeated time from firing a second time.
func highWater(t time.Time, loc *time.Location) time.Time {
	hw := civil(t, loc)
	start, _ := t.In(loc).ZoneBounds()
	// A period that ended more than 2*lookback before t showed readings
	// below civil(t); older periods cannot matter.
	for !start.IsZero() && start.After(t.Add(-2*lookback)) {
		before := start.Add(-time.Nanosecond).In(loc)
		_, sec := before.Zone()
		// Just before the transition the clock read start+offset, less a
		// nanosecond.
		if r := start.UTC().Add(time.Duration(sec)*time.Second - time.Nanosecond); r.After(hw) {
			hw = r
		}
		start, _ = before.ZoneBounds()
	}
	return hw
}
