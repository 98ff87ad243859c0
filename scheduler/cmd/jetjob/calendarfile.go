package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
)

// Calendars in jobs files: "jetjob export" writes each calendar the
// caller reads (with --group, that group's and the global ones) as a
// document of its own (kind: Calendar); "jetjob apply -f" creates or
// replaces them before the jobs, which name them. Never pruned.

// splitCalendars takes the Calendar documents out of data: the rest keeps
// its lines (the calendars' blanked), so that the jobs file's messages
// name the file's own lines.
func splitCalendars(name string, data []byte) ([]byte, []jobfile.CalendarDoc, error) {
	var docs []jobfile.CalendarDoc
	seen := map[string]bool{}
	out, err := takeDocs(name, data, []string{jobfile.CalendarKind}, func(where, _ string, doc []byte) error {
		d, err := jobfile.ParseCalendar(where, doc)
		if err != nil {
			return err
		}
		if seen[d.Name] {
			return fmt.Errorf("%s: calendar %s is defined twice", where, d.Name)
		}
		seen[d.Name] = true
		docs = append(docs, d)
		return nil
	})
	return out, docs, err
}

// exportCalendars appends to out the calendars (of group and the global
// ones, when group is set) as YAML documents, by name.
func exportCalendars(ctx context.Context, c *client.Client, group string, out []byte) ([]byte, error) {
	list, err := c.ListCalendars(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading calendars: %w", err)
	}
	cals := list.Calendars
	slices.SortFunc(cals, func(a, b apiv1.Calendar) int { return strings.Compare(a.Name, b.Name) })
	for _, cal := range cals {
		if group != "" && cal.Group != "" && cal.Group != group {
			continue
		}
		b, err := jobfile.EncodeDoc(jobfile.CalendarOf(cal))
		if err != nil {
			return nil, fmt.Errorf("calendar %s: %w", cal.Name, err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}

// calendarChange is what apply does with one calendar of a file.
type calendarChange struct {
	Action string `json:"action"` // create, update, unchanged
	Name   string `json:"calendar"`
	doc    jobfile.CalendarDoc
}

// planCalendars compares the file's calendars with the cluster's.
func planCalendars(ctx context.Context, c *client.Client, docs []jobfile.CalendarDoc) ([]calendarChange, error) {
	if len(docs) == 0 {
		return nil, nil
	}
	list, err := c.ListCalendars(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading calendars: %w", err)
	}
	var out []calendarChange
	for _, d := range docs {
		ch := calendarChange{Action: "create", Name: d.Name, doc: d}
		for _, cur := range list.Calendars {
			if cur.Name == d.Name {
				ch.Action = "update"
				if d.Same(cur) {
					ch.Action = "unchanged"
				}
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

// writeCalendarPlan prints the calendar lines of a plan.
func writeCalendarPlan(w io.Writer, changes []calendarChange) error {
	return writePlanLines(w, changes, func(ch calendarChange) (string, string, string) {
		return ch.Action, "calendar", ch.Name
	})
}

// executeCalendars applies the calendar changes, before the jobs that
// name them.
func executeCalendars(ctx context.Context, c *client.Client, out io.Writer, changes []calendarChange) error {
	for _, ch := range changes {
		if ch.Action == "unchanged" {
			continue
		}
		if _, err := c.PutCalendar(ctx, ch.Name, ch.doc.Spec()); err != nil {
			return fmt.Errorf("writing calendar %s: %w", ch.Name, err)
		}
		verb := "created"
		if ch.Action == "update" {
			verb = "updated"
		}
		fmt.Fprintf(out, "%s calendar %s\n", verb, cell(ch.Name))
	}
	return nil
}
