package schedule

import (
	"fmt"
	"time"
)

// Type is a job's schedule type.
type Type string

// The schedule types; see the package doc for what each one means.
const (
	Cron     Type = "cron"
	Quartz   Type = "quartz"
	FixRate  Type = "fix_rate"
	FixDelay Type = "fix_delay"
	Once     Type = "once"
	None     Type = "none"
)

// MaxNextN caps NextN, so that an API preview cannot be made to compute an
// unbounded list.
const MaxNextN = 1000

// evaluator computes the next fire time of one kind of schedule.
type evaluator interface {
	next(after time.Time) (time.Time, bool)
}

// Schedule is a parsed, validated schedule. It is immutable and safe for
// concurrent use. The zero Schedule never fires; use Parse to build one.
type Schedule struct {
	typ  Type
	expr string
	tz   string // "UTC" when none was given
	loc  *time.Location
	eval evaluator
	at   time.Time // once only
	// parts are a union's schedules (Union), nil for one schedule.
	parts []*Schedule
}

// Type returns the schedule's type.
func (s *Schedule) Type() Type { return s.typ }

// Expr returns the expression as parsed (surrounding white space removed).
func (s *Schedule) Expr() string { return s.expr }

// TimeZone returns the IANA name of the time zone cron and quartz fields are evaluated
// in: the one given to Parse, or "UTC" when none was.
func (s *Schedule) TimeZone() string { return s.tz }

// Location returns the time zone as a *time.Location (UTC when none was
// given).
func (s *Schedule) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Periodic reports whether the schedule fires by itself repeatedly: cron,
// quartz and fix_rate do; fix_delay needs the previous run to finish, once
// fires at most once and none never.
func (s *Schedule) Periodic() bool { return s.typ == Cron || s.typ == Quartz || s.typ == FixRate }

// At returns the instant of a once schedule, in UTC, whether or not it has
// passed; ok is false for every other type.
func (s *Schedule) At() (t time.Time, ok bool) {
	if s.typ != Once {
		return time.Time{}, false
	}
	return s.at, true
}

// Next returns the first fire time strictly after `after`, in UTC, and false
// when there is none (type none; once already passed; a cron expression
// with no match left, which a real date never reaches; a quartz expression
// whose years have passed). For fix_rate and
// fix_delay it is after+interval: the planner passes the previous fire time
// for fix_rate and the previous run's end for fix_delay.
func (s *Schedule) Next(after time.Time) (time.Time, bool) {
	if s.eval == nil {
		return time.Time{}, false
	}
	return s.eval.next(after)
}

// NextN returns up to n fire times after `after`, each computed from the
// previous one, so for fix_delay it assumes runs that take no time. It
// returns nil when n <= 0, at most MaxNextN times, and a non-nil (possibly
// empty) slice otherwise, which encodes as a JSON array.
func (s *Schedule) NextN(after time.Time, n int) []time.Time {
	if n <= 0 {
		return nil
	}
	n = min(n, MaxNextN)
	out := make([]time.Time, 0, min(n, 16))
	for len(out) < n {
		t, ok := s.Next(after)
		if !ok {
			break
		}
		out = append(out, t)
		after = t
	}
	return out
}

// String describes the schedule for logs, e.g. `cron "0 0 9 * * *" (Asia/Tokyo)`.
func (s *Schedule) String() string {
	switch s.typ {
	case None:
		return string(None)
	case Cron, Quartz:
		if len(s.parts) > 0 {
			return fmt.Sprintf("union of %d schedules, the first %s %q (%s)", len(s.parts), s.typ, s.expr, s.tz)
		}
		return fmt.Sprintf("%s %q (%s)", s.typ, s.expr, s.tz)
	}
	return fmt.Sprintf("%s %q", s.typ, s.expr)
}

// intervalSchedule is fix_rate and fix_delay: a constant interval after the
// time it is given.
type intervalSchedule struct{ interval time.Duration }

func (i intervalSchedule) next(after time.Time) (time.Time, bool) {
	return after.Add(i.interval).UTC(), true
}

// onceSchedule fires at one instant, if that is still ahead.
type onceSchedule struct{ at time.Time }

func (o onceSchedule) next(after time.Time) (time.Time, bool) {
	if o.at.After(after) {
		return o.at, true
	}
	return time.Time{}, false
}

// never is type none.
type never struct{}

func (never) next(time.Time) (time.Time, bool) { return time.Time{}, false }
