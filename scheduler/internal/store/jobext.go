package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/paramtmpl"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
)

// Issue #34's additions to a job: its schedules beyond the first, its
// calendars, labels and owner, whether its params are a template. They are
// columns of jobs read and written with the others (jobColumns,
// jobWriteColumns), kept apart here so that jobs.go stays readable.

const jobExtColumns = `extra_schedules, exclude_calendars, include_calendars, labels, owner, params_template, fixed_shards`

// jobExtWriteColumns are written by creates and updates (jobWriteColumns).
var jobExtWriteColumns = []string{"extra_schedules", "exclude_calendars", "include_calendars", "labels", "owner", "params_template", "fixed_shards"}

// jobExtScan holds the extension columns while a row is scanned.
type jobExtScan struct {
	extra            []byte
	exclude, include []string
	labels           map[string]string
	owner            string
	paramsTemplate   bool
	shards           int
}

func (e *jobExtScan) targets() []any {
	return []any{&e.extra, &e.exclude, &e.include, &e.labels, &e.owner, &e.paramsTemplate, &e.shards}
}

func (e *jobExtScan) into(j *Job) error {
	j.ExcludeCalendars, j.IncludeCalendars = nilIfEmpty(e.exclude), nilIfEmpty(e.include)
	j.Owner, j.ParamsTemplate, j.Shards = e.owner, e.paramsTemplate, e.shards
	if len(e.labels) > 0 {
		j.Labels = e.labels
	}
	var err error
	if j.ExtraSchedules, err = timing.ParseParts(e.extra); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	return nil
}

// extArgs are the extension columns' values for a write.
func (j *Job) extArgs(args map[string]any) {
	var extra []byte
	if len(j.ExtraSchedules) > 0 {
		extra, _ = json.Marshal(j.ExtraSchedules) // plain strings: cannot fail
	}
	args["extra_schedules"] = extra
	args["exclude_calendars"] = nonNil(j.ExcludeCalendars)
	args["include_calendars"] = nonNil(j.IncludeCalendars)
	labels := j.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	args["labels"] = labels
	args["owner"] = j.Owner
	args["params_template"] = j.ParamsTemplate
	args["fixed_shards"] = j.Shards
}

// RenderParams is the job's params for a run at at: rendered when they are
// a template (package paramtmpl), nil when they are not (the run then uses
// the job's, as it always did).
func (j *Job) RenderParams(at time.Time) (*string, error) {
	if !j.ParamsTemplate {
		return nil, nil
	}
	out, err := paramtmpl.Render(j.Params, j.Timezone, paramtmpl.Data{ScheduledAt: at, JobID: j.ID})
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	return &out, nil
}

// nilIfEmpty is s, or nil when it is empty: a job without calendars reads
// back as it was written.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// HasCalendars reports whether the job names any calendar.
func (j *Job) HasCalendars() bool { return len(j.ExcludeCalendars)+len(j.IncludeCalendars) > 0 }

// Schedule parses the job's schedules: its own, or the union of it and its
// extra ones.
func (j *Job) Schedule() (*schedule.Schedule, error) {
	return timing.Schedules(j.ScheduleType, j.ScheduleExpr, j.Timezone, j.ExtraSchedules)
}
