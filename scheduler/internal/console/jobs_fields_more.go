package console

import (
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/labels"
)

// Fields of issue #34 (more schedules, calendars, labels, owner), placed in
// jobFields where they belong.

// moreSchedulesField edits the schedules after the first, one per line as
// "type | expression | zone" (the zone may be left out: UTC). The first
// schedule stays in the schedule fields above it.
var moreSchedulesField = jobField{Name: "more_schedules", Label: "More schedules", Section: secSchedule, Kind: "textarea",
	keys: []string{"schedules"},
	Hint: `The job also fires at these, one per line: "cron | 0 12 * * SAT | America/New_York". Only cron and quartz combine; a shared instant fires once.`,
	get: func(s *apiv1.JobSpec) string {
		if len(s.Schedules) < 2 {
			return ""
		}
		lines := make([]string, 0, len(s.Schedules)-1)
		for _, p := range s.Schedules[1:] {
			lines = append(lines, strings.Join([]string{p.Type, p.Expr, p.Timezone}, " | "))
		}
		return strings.Join(lines, "\n")
	},
	// set runs after the schedule fields (jobFields' order): the first
	// schedule is theirs.
	set: func(s *apiv1.JobSpec, v string) error {
		s.Schedules = nil
		parts, err := parseScheduleLines(v)
		if err != nil || len(parts) == 0 {
			return err
		}
		s.Schedules = append([]apiv1.Schedule{{Type: s.ScheduleType, Expr: s.ScheduleExpr, Timezone: s.Timezone}}, parts...)
		return nil
	}}

// parseScheduleLines reads "type | expr | zone" lines; blank lines are
// skipped.
func parseScheduleLines(v string) ([]apiv1.Schedule, error) {
	var out []apiv1.Schedule
	for i, line := range strings.Split(v, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 2 || len(f) > 3 {
			return nil, msgf("line %d: want \"type | expression | zone\", got %q", i+1, line)
		}
		p := apiv1.Schedule{Type: strings.TrimSpace(f[0]), Expr: strings.TrimSpace(f[1])}
		if len(f) == 3 {
			p.Timezone = strings.TrimSpace(f[2])
		}
		out = append(out, p)
	}
	return out, nil
}

// calendarFields edit the job's calendars, comma-separated names.
var calendarFields = []jobField{
	{Name: "exclude_calendars", Label: "Exclude calendars", Section: secSchedule, Kind: "list", keys: []string{"exclude_calendars", "calendar"},
		Hint: "Comma-separated calendar names: a fire on one of their days is skipped (recorded SKIPPED), judged in the schedule's zone.",
		get:  func(s *apiv1.JobSpec) string { return strings.Join(s.ExcludeCalendars, ", ") },
		set: func(s *apiv1.JobSpec, v string) error {
			s.ExcludeCalendars = splitList(v)
			return nil
		}},
	{Name: "include_calendars", Label: "Include calendars", Section: secSchedule, Kind: "list", keys: []string{"include_calendars"},
		Hint: "Comma-separated calendar names whose days run even when an exclude calendar holds them (make-up working days).",
		get:  func(s *apiv1.JobSpec) string { return strings.Join(s.IncludeCalendars, ", ") },
		set: func(s *apiv1.JobSpec, v string) error {
			s.IncludeCalendars = splitList(v)
			return nil
		}},
}

// ownerFields edit whether the params are a template, the job's owner and
// labels (Basics): the job page shows them with the other settings.
var ownerFields = []jobField{
	{Name: "params_template", Label: "Params are a template", Section: secBasics, Kind: "checkbox", keys: []string{"params template"},
		Hint: `Render the params for each run: {{ .ScheduledAt | date "2006-01-02" }}, {{ .ScheduledAt | addDays -1 | date "2006-01-02" }} (in the job's zone).`,
		get: func(s *apiv1.JobSpec) string {
			if s.ParamsTemplate {
				return "true"
			}
			return "false"
		},
		set: func(s *apiv1.JobSpec, v string) error {
			s.ParamsTemplate = v != ""
			return nil
		}},
	{Name: "owner", Label: "Owner", Section: secBasics, Kind: "text", keys: []string{"owner"},
		Hint: "Who to ask about the job: a person, a team, a channel.",
		get:  func(s *apiv1.JobSpec) string { return s.Owner }, set: setString(func(s *apiv1.JobSpec) *string { return &s.Owner })},
	{Name: "labels", Label: "Labels", Section: secBasics, Kind: "list", keys: []string{"labels"},
		Hint: "Comma-separated key=value pairs (env=prod, team=billing): the jobs list and bulk actions select by them.",
		get:  func(s *apiv1.JobSpec) string { return labels.Format(s.Labels) },
		set: func(s *apiv1.JobSpec, v string) error {
			s.Labels = nil
			for _, p := range splitList(v) {
				k, val, ok := strings.Cut(p, "=")
				if !ok {
					return msgf("label %q: want key=value", p)
				}
				if s.Labels == nil {
					s.Labels = map[string]string{}
				}
				s.Labels[strings.TrimSpace(k)] = strings.TrimSpace(val)
			}
			return nil
		}},
}
