package planner

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/calendar"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/wire"
)

// batchCalendars are the calendars the jobs of one planning batch name,
// read in one statement, and only when some job names one: a batch of
// jobs without calendars costs nothing more.
type batchCalendars map[string]*calendar.Set

func loadCalendars(ctx context.Context, tx pgx.Tx, jobs []dueJob) (batchCalendars, error) {
	var names []string
	for i := range jobs {
		names = append(names, jobs[i].exclude...)
		names = append(names, jobs[i].include...)
	}
	if len(names) == 0 {
		return nil, nil
	}
	return calendar.Load(ctx, tx, names)
}

// judge turns the fires of j that its calendars exclude into SKIPPED runs
// saying which calendar (calendar.Message): a record in the job's history
// per excluded fire, as for a misfire. Each fire's day is judged in the
// zone of the schedule that fires it, at its nominal time (a jitter does
// not move a fire to another day's verdict).
func (c batchCalendars) judge(j *dueJob, tp timing.Plan, fires []fire) {
	if len(j.exclude) == 0 || c == nil {
		return
	}
	exclude, include := calendar.Pick(c, j.exclude), calendar.Pick(c, j.include)
	for i := range fires {
		f := &fires[i]
		if f.status != wire.StatusScheduled {
			continue
		}
		if name := calendar.Judge(f.at, tp.Sched.LocationAt(f.at), exclude, include); name != "" {
			f.status, f.message = wire.StatusSkipped, calendar.Message(name)
			f.skip = skipRange{n: 1, exact: true, last: f.at}
		}
	}
}
