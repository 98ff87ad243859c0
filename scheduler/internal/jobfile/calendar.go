package jobfile

import (
	"fmt"
	"slices"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A calendar as a file holds it: one YAML document of kind Calendar with
// the API's fields (a name, its group or none for a global calendar, the
// days). `jetjob export` writes the calendars the caller reads and `jetjob
// apply` creates or replaces them before the jobs, which name them by name
// (exclude_calendars, include_calendars). An iCalendar import is stored as
// the ranges it read, and written so.
//
// Secrets travel differently: never. A job names its secrets
// (secret_env, ${secret:NAME} in params), a file holds those names
// and nothing else, and apply into another cluster needs the secrets
// created there first (jetjob secrets create).

// CalendarKind is the kind of a calendar document.
const CalendarKind = "Calendar"

// CalendarDoc is a calendar as a file holds it.
type CalendarDoc struct {
	APIVersion  string                `yaml:"apiVersion"`
	Kind        string                `yaml:"kind"`
	Name        string                `yaml:"name"`
	Group       string                `yaml:"group,omitempty"`
	Description string                `yaml:"description,omitempty"`
	Dates       []string              `yaml:"dates,omitempty"`
	Ranges      []apiv1.CalendarRange `yaml:"ranges,omitempty"`
	Weekdays    []string              `yaml:"weekdays,omitempty"`
}

// CalendarOf is cal as a file writes it.
func CalendarOf(cal apiv1.Calendar) CalendarDoc {
	return CalendarDoc{APIVersion: APIVersion, Kind: CalendarKind, Name: cal.Name, Group: cal.Group,
		Description: cal.Description, Dates: cal.Dates, Ranges: cal.Ranges, Weekdays: cal.Weekdays}
}

// Spec is the document as the API takes it (PUT /calendars/{name}).
func (d *CalendarDoc) Spec() apiv1.Calendar {
	return apiv1.Calendar{Name: d.Name, Group: d.Group, Description: d.Description,
		Dates: d.Dates, Ranges: d.Ranges, Weekdays: d.Weekdays}
}

// Same reports whether the document states cal as it is stored (the API
// answers a calendar normalized, so the file exported from it compares
// equal; a hand-written file in another order is an update, harmless).
func (d *CalendarDoc) Same(cal apiv1.Calendar) bool {
	o := CalendarOf(cal)
	return d.Name == o.Name && d.Group == o.Group && d.Description == o.Description &&
		slices.Equal(d.Dates, o.Dates) && slices.Equal(d.Ranges, o.Ranges) && slices.Equal(d.Weekdays, o.Weekdays)
}

// ParseCalendar reads a Calendar document strictly: an unknown field is
// an error naming it; name prefixes every error. The days themselves are
// the server's to check (one rule, package calendar).
func ParseCalendar(name string, data []byte) (CalendarDoc, error) {
	var d CalendarDoc
	if err := strictYAML(data, &d); err != nil {
		return d, fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case d.APIVersion != APIVersion:
		return d, fmt.Errorf("%s: apiVersion %q: want %s", name, d.APIVersion, APIVersion)
	case d.Name == "":
		return d, fmt.Errorf("%s: calendar: name is required", name)
	}
	return d, nil
}
