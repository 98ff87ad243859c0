package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
)

// Documents the web console reads (package console): the schedule preview
// and the cluster view here, the dashboard in dashboard.go.

const (
	defaultPreviewFires = 10
	maxPreviewFires     = 50
)

// schedulePreview answers the next fires of a schedule being typed, before
// any job exists: the job form's live preview. It is the computation of a
// job's next fires (schedule.Parse, then Schedule.NextN from now), so what
// the form shows is what the job will do; a bad schedule answers 400 with
// the schedule package's own message, naming the bad part. Each "also"
// ("type|expr|zone") is one more schedule of the job: the preview is then
// the union's.
func (s *Server) schedulePreview(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "type", "expr", "timezone", "n", "also", "exclude", "include"); err != nil {
		return err
	}
	n, err := queryInt(r, "n", defaultPreviewFires, 1, maxPreviewFires)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	typ, expr, tz := q.Get("type"), q.Get("expr"), q.Get("timezone")
	if tz == "" {
		tz = "UTC" // as a job created without one
	}
	var extra []timing.Part
	for _, a := range q["also"] {
		f := strings.Split(a, "|")
		if len(f) < 2 || len(f) > 3 {
			return invalidf("also %q: want \"type|expression|zone\" (the zone may be left out)", a)
		}
		p := timing.Part{Type: strings.TrimSpace(f[0]), Expr: strings.TrimSpace(f[1]), Timezone: "UTC"}
		if len(f) == 3 && strings.TrimSpace(f[2]) != "" {
			p.Timezone = strings.TrimSpace(f[2])
		}
		extra = append(extra, p)
	}
	sched, err := timing.Schedules(typ, expr, tz, extra)
	if err != nil {
		return err
	}
	exclude, include := splitNames(q.Get("exclude")), splitNames(q.Get("include"))
	if len(exclude)+len(include) > 0 {
		return s.previewWithCalendars(w, r, store.Job{ScheduleType: typ, ScheduleExpr: expr, Timezone: tz, ExtraSchedules: extra,
			Enabled: true, ExcludeCalendars: exclude, IncludeCalendars: include}, int(n))
	}
	times := sched.NextN(s.now(), int(n))
	if times == nil {
		times = []time.Time{}
	}
	writeJSON(w, http.StatusOK, apiv1.SchedulePreview{Type: typ, Expr: expr, Timezone: tz, Times: times})
	return nil
}

// previewWithCalendars answers the preview of j, a job being written that
// names calendars, as its page will show it: the same judgement
// (store.UpcomingFires, calendar.Judge) over the calendars the caller
// may read (global ones and their groups'); another name is refused as
// one that does not exist.
func (s *Server) previewWithCalendars(w http.ResponseWriter, r *http.Request, j store.Job, n int) error {
	var problems []string
	checkJobCalendars(apiv1.JobSpec{ScheduleType: j.ScheduleType, ExcludeCalendars: j.ExcludeCalendars, IncludeCalendars: j.IncludeCalendars},
		func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) })
	if len(problems) > 0 {
		return invalidf("%s", strings.Join(problems, "; "))
	}
	groups, all := auth.FromContext(r.Context()).Readable()
	cs, err := s.store.ListCalendars(r.Context(), all, groups)
	if err != nil {
		return err
	}
	for _, name := range append(append([]string(nil), j.ExcludeCalendars...), j.IncludeCalendars...) {
		if !slices.ContainsFunc(cs, func(c store.Calendar) bool { return c.Name == name }) {
			return invalidf("calendar %q: no such calendar (or not one you may read)", name)
		}
	}
	times, excluded, err := s.store.UpcomingFires(r.Context(), j, s.now(), n)
	if err != nil {
		return err
	}
	out := apiv1.SchedulePreview{Type: j.ScheduleType, Expr: j.ScheduleExpr, Timezone: j.Timezone, Times: times}
	if out.Times == nil {
		out.Times = []time.Time{}
	}
	for _, e := range excluded {
		out.Excluded = append(out.Excluded, apiv1.ExcludedFire{At: e.At.UTC(), Calendar: e.Calendar})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// splitNames reads a comma-separated list of names, blanks dropped.
func splitNames(v string) []string {
	var out []string
	for _, n := range strings.Split(v, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cluster answers the cluster view. It holds no group data (scheduler ids,
// hosts, shard numbers and counts), so any signed-in user may read it.
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	scheds, shards, err := s.store.Cluster(r.Context())
	if err != nil {
		return err
	}
	out := apiv1.Cluster{ShardCount: s.store.ShardCount(), Schedulers: make([]apiv1.SchedulerInstance, 0, len(scheds)),
		Shards: make([]apiv1.ShardState, 0, len(shards)), Ready: s.dependencies(r.Context()), AnsweredBy: s.cfg.SchedulerID}
	held := map[string][]int{}
	for _, sh := range shards {
		out.Shards = append(out.Shards, apiv1.ShardState{Shard: sh.Shard, Owner: sh.Owner, Epoch: sh.Epoch,
			ExpiresAt: sh.ExpiresAt, Jobs: sh.Jobs, PlanningLagSeconds: sh.PlanningLag.Seconds()})
		if sh.Owner != "" {
			held[sh.Owner] = append(held[sh.Owner], sh.Shard)
		}
	}
	for _, sr := range scheds {
		mine := held[sr.ID]
		if mine == nil {
			mine = []int{}
		}
		out.Schedulers = append(out.Schedulers, apiv1.SchedulerInstance{ID: sr.ID, Host: sr.Host, StartedAt: sr.StartedAt,
			HeartbeatAt: sr.HeartbeatAt, ExpiresAt: sr.ExpiresAt, Shards: mine})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// dependencies is the readiness of each dependency: Config.Dependencies
// when set, else Config.Ready as one entry.
func (s *Server) dependencies(ctx context.Context) []apiv1.Dependency {
	if s.cfg.Dependencies != nil {
		return s.cfg.Dependencies(ctx)
	}
	d := apiv1.Dependency{Name: "scheduler", OK: true}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			d.OK, d.Error = false, err.Error()
		}
	}
	return []apiv1.Dependency{d}
}
