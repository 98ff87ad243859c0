package planner

import (
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/scheduler/internal/paramtmpl"
)

// paramsOf returns what renders j's params for a fire at a time: nil
// params (the run uses the job's) for a job without a template, the cost
// of planning it unchanged; for a job with one, the template rendered for
// that fire (package paramtmpl), stored on the run. A template that fails
// here (it passed when the job was written, so this is rare: a zone
// database without the job's zone) leaves the job's params as they are,
// and says so in the log.
func (p *Planner) paramsOf(j *dueJob) func(time.Time) *string {
	none := func(time.Time) *string { return nil }
	if !j.paramsTemplate {
		return none
	}
	tp, err := paramtmpl.Parse(j.params, j.tz)
	if err != nil {
		p.log.Error("params template invalid; runs get the params unrendered", logging.Job(j.id), zap.Error(err))
		return none
	}
	return func(at time.Time) *string {
		out, err := tp.Render(paramtmpl.Data{ScheduledAt: at, JobID: j.id})
		if err != nil {
			p.log.Error("params template failed; the run gets the params unrendered", logging.Job(j.id), zap.Time("at", at), zap.Error(err))
			return nil
		}
		return &out
	}
}
