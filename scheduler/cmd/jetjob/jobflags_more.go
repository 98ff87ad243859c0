package main

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// moreFlags are the job flags of issue #34: more schedules, calendars,
// labels and owner.
type moreFlags struct {
	also             []string
	exclude, include []string
	labels           []string
	owner            string
	paramsTemplate   bool
}

func (m *moreFlags) register(fl *pflag.FlagSet) {
	fl.StringArrayVar(&m.labels, "label", nil, `a label key=value (repeatable); on update the labels given replace the job's (--label "" drops them)`)
	fl.StringVar(&m.owner, "owner", "", "who to ask about the job (a person, a team)")
	fl.BoolVar(&m.paramsTemplate, "params-template", false, `the params are a template rendered per run, e.g. '{"day":"{{ .ScheduledAt | date "2006-01-02" }}"}'`)
	fl.StringSliceVar(&m.exclude, "exclude-calendars", nil, "calendars whose days the job skips (comma-separated names; \"\" for none)")
	fl.StringSliceVar(&m.include, "include-calendars", nil, "calendars whose days the job runs even when excluded (make-up working days)")
	fl.StringArrayVar(&m.also, "also", nil,
		`one more schedule, "type|expression|zone" (repeatable; cron or quartz), e.g. --also "cron|0 12 * * SAT|America/New_York"; on update the list replaces the job's (--also "" drops them)`)
}

// validate checks the flags given.
func (m *moreFlags) validate(changed func(string) bool) error {
	for _, l := range m.labels {
		if _, _, ok := strings.Cut(l, "="); !ok && l != "" {
			return usagef("--label %q: want key=value", l)
		}
	}
	if !changed("also") {
		return nil
	}
	for _, a := range m.also {
		if a == "" {
			continue
		}
		if n := len(strings.Split(a, "|")); n < 2 || n > 3 {
			return usagef("--also %q: want \"type|expression|zone\" (the zone may be left out: UTC)", a)
		}
	}
	return nil
}

// apply sets the job's schedules list: its first entry follows the single
// schedule fields (which the other flags may just have changed); --also
// replaces the rest.
func (m *moreFlags) apply(changed func(string) bool, spec *apiv1.JobSpec) {
	if changed("label") {
		spec.Labels = nil
		for _, l := range m.labels {
			if k, v, ok := strings.Cut(l, "="); ok {
				if spec.Labels == nil {
					spec.Labels = map[string]string{}
				}
				spec.Labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	if changed("owner") {
		spec.Owner = m.owner
	}
	if changed("params-template") {
		spec.ParamsTemplate = m.paramsTemplate
	}
	if changed("exclude-calendars") {
		spec.ExcludeCalendars = nonEmpty(m.exclude)
	}
	if changed("include-calendars") {
		spec.IncludeCalendars = nonEmpty(m.include)
	}
	first := apiv1.Schedule{Type: spec.ScheduleType, Expr: spec.ScheduleExpr, Timezone: spec.Timezone}
	if changed("also") {
		spec.Schedules = nil
		for _, a := range m.also {
			if a == "" {
				continue
			}
			f := strings.Split(a, "|")
			s := apiv1.Schedule{Type: strings.TrimSpace(f[0]), Expr: strings.TrimSpace(f[1])}
			if len(f) == 3 {
				s.Timezone = strings.TrimSpace(f[2])
			}
			spec.Schedules = append(spec.Schedules, s)
		}
		if len(spec.Schedules) > 0 {
			spec.Schedules = append([]apiv1.Schedule{first}, spec.Schedules...)
		}
		return
	}
	if len(spec.Schedules) > 0 {
		spec.Schedules[0] = first
	}
}

// nonEmpty drops empty names ("--exclude-calendars ”" clears the list).
func nonEmpty(names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
