package api

import (
	"fmt"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/schedule"
)

// A job's several schedules (JobSpec.Schedules): the first is the job's
// schedule_type/expr/timezone, which older clients read and write; the
// others are stored apart (store.Job.ExtraSchedules).

// splitSchedules moves spec.Schedules[0] into the single schedule fields
// (which must be empty or agree) and returns the others. Problems go to add.
func splitSchedules(spec *apiv1.JobSpec, add func(string, ...any)) []timing.Part {
	if len(spec.Schedules) == 0 {
		return nil
	}
	first := spec.Schedules[0]
	if first.Timezone == "" {
		first.Timezone = "UTC"
	}
	tz := spec.Timezone
	if tz == "" {
		tz = "UTC"
	}
	if spec.ScheduleType != "" && (spec.ScheduleType != first.Type || spec.ScheduleExpr != first.Expr || tz != first.Timezone) {
		add("schedule_type/schedule_expr/timezone (%s %q %s) disagree with schedules[0] (%s %q %s): give schedules alone, or make its first entry the same",
			spec.ScheduleType, spec.ScheduleExpr, tz, first.Type, first.Expr, first.Timezone)
	}
	spec.ScheduleType, spec.ScheduleExpr, spec.Timezone = first.Type, first.Expr, first.Timezone
	if len(spec.Schedules) > schedule.MaxUnion {
		add("schedules: %d given, at most %d", len(spec.Schedules), schedule.MaxUnion)
		return nil
	}
	var extra []timing.Part
	for i, s := range spec.Schedules[1:] {
		if s.Timezone == "" {
			s.Timezone = "UTC"
		}
		if s.Type == string(schedule.Quartz) {
			if err := schedule.CheckQuartz(s.Expr); err != nil {
				add("schedules[%d]: %v", i+1, err)
			}
		}
		extra = append(extra, timing.Part(s))
	}
	return extra
}

// schedulesDoc is the schedules list of a job with several, nil for one.
func schedulesDoc(j store.Job) []apiv1.Schedule {
	if len(j.ExtraSchedules) == 0 {
		return nil
	}
	out := []apiv1.Schedule{{Type: j.ScheduleType, Expr: j.ScheduleExpr, Timezone: j.Timezone}}
	for _, p := range j.ExtraSchedules {
		out = append(out, apiv1.Schedule(p))
	}
	return out
}

// schedulesOf names n schedules' as an owner in a message: "the
// schedule's", "the 3 schedules'".
func schedulesOf(n int) string {
	if n <= 1 {
		return "the schedule's"
	}
	return fmt.Sprintf("the %d schedules'", n)
}
