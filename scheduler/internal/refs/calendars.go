package refs

import (
	"errors"
	"fmt"
	"strings"
)

// Calendar is a calendar a job names (exclude_calendars,
// include_calendars), as it is when the reference is made. Group "" is a
// global calendar.
type Calendar struct {
	Name, Group string
}

// ErrUnknownCalendar is a calendar a job may not name: one that does not
// exist and another group's are answered alike, so that names cannot probe
// other groups' calendars.
var ErrUnknownCalendar = errors.New("no such calendar, or not one this job may name (a job names global calendars and its own group's)")

// CalendarError lists the refused names of one calendar field.
type CalendarError struct {
	Field string
	Names []string
}

func (e *CalendarError) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Field, strings.Join(e.Names, ", "), ErrUnknownCalendar)
}

// Is makes errors.Is(err, ErrUnknownCalendar) hold.
func (e *CalendarError) Is(target error) bool { return target == ErrUnknownCalendar }

// CheckCalendars is the one decision on which calendars a job of jobGroup
// may name in field: global ones (the admins', shared by everyone) and
// its own group's. A calendar decides when the job does not run, so its
// writers hold a say over the job: a group's calendar is written by that
// group's operators, who must not gain a say over another group's jobs.
// The writer of the job is already its group's operator (the job write
// needs it), so the job's group, not the writer, decides. found are the
// calendars of named that exist.
func CheckCalendars(jobGroup, field string, named []string, found []Calendar) error {
	byName := make(map[string]Calendar, len(found))
	for _, c := range found {
		byName[c.Name] = c
	}
	var refused []string
	for _, n := range named {
		c, ok := byName[n]
		if !ok || (c.Group != "" && c.Group != jobGroup) {
			refused = append(refused, n)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	return &CalendarError{Field: field, Names: refused}
}
