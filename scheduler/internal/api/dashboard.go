package api

import (
	"net/http"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

const (
	// dashboardDays is the longest window and the chart's length.
	dashboardDays = 30
	// lagWindow is the window of the fire and start lags.
	lagWindow = time.Hour
	// failureWindow is the window of Lost, AlarmFailures and FailingJobs.
	failureWindow = 24 * time.Hour
	// runningWindow bounds the RUNNING count, so that it reads the recent
	// partitions only. Nothing in the store bounds an active run's age
	// (a job without timeout may run for ever), so the bound is generous:
	// the longest timeout a job may have (maxTimeout) plus a day. A run
	// without timeout still RUNNING after that is not counted.
	runningWindow  = maxTimeout + 24*time.Hour
	maxFailingJobs = 10
)

// dashboard answers the console's first page, every figure over the
// groups the caller may read (or ?group=, which the rule checked).
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "group"); err != nil {
		return err
	}
	group := r.URL.Query().Get("group")
	if group != "" && !wire.ValidName(group) {
		return invalidf("group=%q is not a valid group name", group)
	}
	ctx, groups, now := r.Context(), readable(r), s.now().UTC()
	today := store.DayStart(now)
	first := today.AddDate(0, 0, 1-dashboardDays)
	counts, err := s.store.StatusCounts(ctx, store.StatsFilter{From: first, To: today, Group: group, Groups: groups})
	if err != nil {
		return err
	}
	out := apiv1.Dashboard{GeneratedAt: now, Days: make([]apiv1.DayCounts, dashboardDays)}
	for i := range out.Days {
		out.Days[i] = apiv1.DayCounts{Day: first.AddDate(0, 0, i).Format(time.DateOnly), ByStatus: map[string]int64{}}
	}
	for _, c := range counts {
		if i := int(c.Day.Sub(first).Hours() / 24); i >= 0 && i < dashboardDays {
			out.Days[i].ByStatus[c.Status] += c.Runs
		}
	}
	for _, win := range []struct {
		name string
		days int
	}{{"today", 1}, {"7d", 7}, {"30d", dashboardDays}} {
		out.Windows = append(out.Windows, statusWindow(win.name, out.Days[dashboardDays-win.days:], today.AddDate(0, 0, 1-win.days)))
	}

	lags, err := s.store.RunLags(ctx, now.Add(-lagWindow), now, group, groups)
	if err != nil {
		return err
	}
	out.FireLag = apiv1.LagSummary{Runs: lags.FireRuns, P50MS: lags.FireP50, P99MS: lags.FireP99}
	out.StartLag = apiv1.LagSummary{Runs: lags.StartRuns, P50MS: lags.StartP50, P99MS: lags.StartP99}
	// Runs planned ahead are SCHEDULED, never RUNNING: the bound's end is
	// only there to prune.
	if out.Running, err = s.store.CountRuns(ctx, wire.StatusRunning, now.Add(-runningWindow), now.Add(time.Hour), group, groups); err != nil {
		return err
	}
	fails, err := s.store.RunFailures(ctx, now.Add(-failureWindow), now, group, groups, maxFailingJobs)
	if err != nil {
		return err
	}
	out.Lost, out.AlarmFailures = fails.Lost, fails.AlarmFailures
	out.FailingJobs = make([]apiv1.FailingJob, 0, len(fails.Jobs))
	for _, fj := range fails.Jobs {
		out.FailingJobs = append(out.FailingJobs, apiv1.FailingJob{JobID: fj.JobID, Name: fj.Name, Group: fj.Group,
			Failed: fj.Failed, Total: fj.Total, LastRun: fj.LastRun, LastAt: fj.LastAt, LastMessage: fj.LastMessage})
	}
	_, out.Groups = s.liveGroups(r, group)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// statusWindow sums days into a window and its success rate: SUCCEEDED
// over the runs that ended.
func statusWindow(name string, days []apiv1.DayCounts, from time.Time) apiv1.StatusWindow {
	win := apiv1.StatusWindow{Name: name, From: from, ByStatus: map[string]int64{}}
	var ended int64
	for _, d := range days {
		for st, n := range d.ByStatus {
			win.ByStatus[st] += n
			win.Total += n
			if wire.Status(st).Terminal() {
				ended += n
			}
		}
	}
	if ended > 0 {
		rate := float64(win.ByStatus[string(wire.StatusSucceeded)]) / float64(ended)
		win.SuccessRate = &rate
	}
	return win
}
