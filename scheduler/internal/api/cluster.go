package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
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
	if err := onlyParams(r, "type", "expr", "timezone", "n", "also"); err != nil {
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
	times := sched.NextN(s.now(), int(n))
	if times == nil {
		times = []time.Time{}
	}
	writeJSON(w, http.StatusOK, apiv1.SchedulePreview{Type: typ, Expr: expr, Timezone: tz, Times: times})
	return nil
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
