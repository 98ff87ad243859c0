package api

import (
	"net/http"
	"slices"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/schedule"
)

// Calendars (docs/jobs.md, "Calendars"): a global calendar is read by
// anyone signed in and changed by admins; a group's as the group's jobs
// are. Which calendars a job may name is refs.CheckCalendars, decided
// where the job is written.

// maxJobCalendars bounds each of a job's calendar lists.
const maxJobCalendars = 20

// calendarScope is what a route on the calendar of the path needs.
func (s *Server) calendarScope(write bool) auth.GroupOf {
	return func(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
		name := r.PathValue("name")
		what := "calendar " + name
		g, err := s.store.CalendarGroup(r.Context(), name)
		if err != nil {
			return nil, hidden(err, what)
		}
		return scopeNeeds(p, g, what, write)
	}
}

// calendarPutScope is what a PUT needs: to change the calendar as it is
// (when it exists) and to own the group the body puts it in.
func (s *Server) calendarPutScope(r *http.Request, p *auth.Principal) ([]auth.Need, error) {
	var f struct {
		Group string `json:"group"`
	}
	if _, err := peekBody(r, &f); err != nil {
		return nil, err
	}
	name := r.PathValue("name")
	needs, err := scopeNeeds(p, f.Group, "a calendar without a group", true)
	if err != nil {
		return nil, err
	}
	if f.Group != "" {
		needs = []auth.Need{{Group: f.Group}}
	}
	g, err := s.store.CalendarGroup(r.Context(), name)
	if err != nil {
		return needs, nil // a new calendar
	}
	cur, err := scopeNeeds(p, g, "calendar "+name, true)
	return append(needs, cur...), err
}

func calendarDoc(c store.Calendar) apiv1.Calendar {
	d := apiv1.Calendar{Name: c.Name, Group: c.Group, Description: c.Description, Dates: c.Days.Dates,
		Weekdays: c.Days.Weekdays, Version: c.Version, CreatedBy: c.CreatedBy, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC()}
	for _, r := range c.Days.Ranges {
		d.Ranges = append(d.Ranges, apiv1.CalendarRange(r))
	}
	return d
}

func (s *Server) listCalendars(w http.ResponseWriter, r *http.Request) error {
	groups, all := auth.FromContext(r.Context()).Readable()
	cs, err := s.store.ListCalendars(r.Context(), all, groups)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apiv1.CalendarList{Calendars: docs(cs, calendarDoc)})
	return nil
}

func (s *Server) getCalendar(w http.ResponseWriter, r *http.Request) error {
	c, err := s.store.GetCalendar(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, calendarDoc(c))
	return nil
}

// putCalendar creates or replaces a calendar; an ics file's events are
// added to its ranges.
func (s *Server) putCalendar(w http.ResponseWriter, r *http.Request) error {
	var in apiv1.Calendar
	if err := decode(w, r, &in); err != nil {
		return err
	}
	c, err := calendarFromDoc(r.PathValue("name"), in)
	if err != nil {
		return err
	}
	out, created, err := s.store.PutCalendar(r.Context(), actor(r), c)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeJSON(w, code, calendarDoc(out))
	return nil
}

// calendarFromDoc validates a calendar document for name.
func calendarFromDoc(name string, in apiv1.Calendar) (store.Calendar, error) {
	if err := calendar.CheckName(name); err != nil {
		return store.Calendar{}, err
	}
	if in.Name != "" && in.Name != name {
		return store.Calendar{}, invalidf("name %q in the body is not the path's %q", in.Name, name)
	}
	if len(in.Description) > maxDescriptionLen {
		return store.Calendar{}, invalidf("description is longer than %d characters", maxDescriptionLen)
	}
	days := calendar.Days{Dates: in.Dates, Weekdays: in.Weekdays}
	for _, r := range in.Ranges {
		days.Ranges = append(days.Ranges, calendar.Range(r))
	}
	if in.ICS != "" {
		rs, err := calendar.ParseICS(in.ICS)
		if err != nil {
			return store.Calendar{}, err
		}
		days.Ranges = append(days.Ranges, rs...)
	}
	days = days.Normalized()
	if _, err := days.Compile(); err != nil {
		return store.Calendar{}, err
	}
	return store.Calendar{Name: name, Group: in.Group, Description: in.Description, Days: days}, nil
}

func (s *Server) deleteCalendar(w http.ResponseWriter, r *http.Request) error {
	if err := s.store.DeleteCalendar(r.Context(), actor(r), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkJobCalendars validates a spec's calendar names (which ones it may
// name is the store's refs.CheckCalendars, in the write).
func checkJobCalendars(spec apiv1.JobSpec, add func(string, ...any)) {
	for _, l := range []struct {
		field string
		names []string
	}{{"exclude_calendars", spec.ExcludeCalendars}, {"include_calendars", spec.IncludeCalendars}} {
		if len(l.names) > maxJobCalendars {
			add("%s: at most %d calendars", l.field, maxJobCalendars)
		}
		for i, n := range l.names {
			if err := calendar.CheckName(n); err != nil {
				add("%s: %v", l.field, err)
			} else if slices.Index(l.names, n) != i {
				add("%s: %s named twice", l.field, n)
			}
		}
	}
	if len(spec.ExcludeCalendars) == 0 && len(spec.IncludeCalendars) > 0 {
		add("include_calendars without exclude_calendars: an include calendar only takes days back from an exclude calendar")
	}
	if spec.ScheduleType == string(schedule.FixDelay) && len(spec.ExcludeCalendars) > 0 {
		add("exclude_calendars: not with fix_delay (its next fire waits for a run an excluded fire never has); use fix_rate or cron")
	}
}
