package store

import (
	"encoding/json"
	"fmt"

	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
)

// Issue #34's additions to a job: its schedules beyond the first. They are
// columns of jobs read and written with the others (jobColumns,
// jobWriteColumns), kept apart here so that jobs.go stays readable.

const jobExtColumns = `extra_schedules`

// jobExtWriteColumns are written by creates and updates (jobWriteColumns).
var jobExtWriteColumns = []string{"extra_schedules"}

// jobExtScan holds the extension columns while a row is scanned.
type jobExtScan struct {
	extra []byte
}

func (e *jobExtScan) targets() []any { return []any{&e.extra} }

func (e *jobExtScan) into(j *Job) error {
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
}

// Schedule parses the job's schedules: its own, or the union of it and its
// extra ones.
func (j *Job) Schedule() (*schedule.Schedule, error) {
	return timing.Schedules(j.ScheduleType, j.ScheduleExpr, j.Timezone, j.ExtraSchedules)
}
