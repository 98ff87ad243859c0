package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func TestSchedulePreview(t *testing.T) {
	srv, _ := server(t)
	var p apiv1.SchedulePreview
	q := "/api/v1/schedule/preview?type=cron&expr=" + url.QueryEscape("0 30 9 * * *") + "&timezone=Asia/Tokyo&n=3"
	if code, msg := get(t, srv, q, &p); code != http.StatusOK {
		t.Fatalf("%s: %d %s", q, code, msg)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if len(p.Times) != 3 || p.Timezone != "Asia/Tokyo" || p.Type != "cron" {
		t.Fatalf("preview: %+v", p)
	}
	for i, at := range p.Times {
		if l := at.In(tokyo); l.Hour() != 9 || l.Minute() != 30 || l.Second() != 0 || !at.After(time.Now().Add(-time.Minute)) {
			t.Errorf("fire %d at %s (%s in Tokyo): want 09:30:00 Tokyo time, from now on", i, at, l)
		}
		if i > 0 && at.Sub(p.Times[i-1]) != 24*time.Hour {
			t.Errorf("fires %d and %d are %s apart, want a day", i-1, i, at.Sub(p.Times[i-1]))
		}
	}
	// Defaults: 10 fires, UTC; none has no fires at all.
	if code, _ := get(t, srv, "/api/v1/schedule/preview?type=fix_rate&expr=30s", &p); code != http.StatusOK ||
		len(p.Times) != 10 || p.Timezone != "UTC" || p.Times[9].Sub(p.Times[0]) != 270*time.Second {
		t.Errorf("fix_rate 30s: %d %+v", code, p)
	}
	if code, _ := get(t, srv, "/api/v1/schedule/preview?type=none", &p); code != http.StatusOK || p.Times == nil || len(p.Times) != 0 {
		t.Errorf("none: %d %+v, want an empty list", code, p)
	}
	// A bad schedule is a 400 naming the bad part.
	for bad, want := range map[string]string{
		"type=cron&expr=" + url.QueryEscape("0 61 * * * *"):                         "61",
		"type=cron&expr=" + url.QueryEscape("* * * * *") + "&timezone=Mars/Olympus": "Mars/Olympus",
		"type=fix_rate&expr=soon":                                                   "soon",
		"type=weekly&expr=1":                                                        "weekly",
		"expr=1s":                                                                   "type",
		"type=none&n=0":                                                             "n",
		"type=none&n=51":                                                            "n",
		"type=none&count=3":                                                         "count",
		"type=once&expr=next%20monday":                                              "next monday",
	} {
		if code, msg := get(t, srv, "/api/v1/schedule/preview?"+bad, &p); code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("preview?%s: %d %q, want 400 naming %q", bad, code, msg, want)
		}
	}
}

func TestClusterView(t *testing.T) {
	ctx := context.Background()
	srv, pool := serverWith(t, func(c *api.Config) {
		c.SchedulerID = "s1"
		c.Dependencies = func(context.Context) []apiv1.Dependency {
			return []apiv1.Dependency{{Name: "postgresql", OK: true}, {Name: "nats", Error: "NATS not connected (RECONNECTING)"}}
		}
	})
	// s1 holds shards 0 and 1, s2 shard 2; s3's heartbeat and its lease on
	// shard 3 expired a minute ago: shard 3 is orphaned.
	if _, err := pool.Exec(ctx, `
		INSERT INTO schedulers (id, host, expires_at) VALUES
			('s1', 'h1', now() + interval '10 s'), ('s2', 'h2', now() + interval '10 s'), ('s3', 'h3', now() - interval '1 min');
		UPDATE scheduler_shards SET owner = 's1', epoch = 4, expires_at = now() + interval '10 s' WHERE shard IN (0, 1);
		UPDATE scheduler_shards SET owner = 's2', epoch = 7, expires_at = now() + interval '10 s' WHERE shard = 2;
		UPDATE scheduler_shards SET owner = 's3', epoch = 9, expires_at = now() - interval '1 min' WHERE shard = 3;
		INSERT INTO job_groups (name) VALUES ('g');`); err != nil {
		t.Fatal(err)
	}
	// Shard 0: two enabled jobs planned ahead and a disabled one long
	// overdue (not planned, and not lag); shard 3: a job whose fire 90 s
	// ago was never planned.
	if _, err := pool.Exec(ctx, `INSERT INTO jobs (group_name, name, handler, schedule_type, misfire_policy, route_strategy,
			block_strategy, shard, enabled, next_fire_at)
		VALUES ('g', 'a', 'h', 'cron', 'skip', 'any', 'serial', 0, true, now() + interval '20 s'),
			('g', 'b', 'h', 'cron', 'skip', 'any', 'serial', 0, true, NULL),
			('g', 'c', 'h', 'cron', 'skip', 'any', 'serial', 0, false, now() - interval '1 day'),
			('g', 'd', 'h', 'cron', 'skip', 'any', 'serial', 3, true, now() - interval '90 s')`); err != nil {
		t.Fatal(err)
	}
	var c apiv1.Cluster
	if code, msg := get(t, srv, "/api/v1/cluster", &c); code != http.StatusOK {
		t.Fatalf("cluster: %d %s", code, msg)
	}
	if c.ShardCount != store.DefaultShardCount || len(c.Shards) != c.ShardCount || c.AnsweredBy != "s1" {
		t.Fatalf("cluster: %d shards of %d, answered by %q", len(c.Shards), c.ShardCount, c.AnsweredBy)
	}
	var ids []string
	for _, s := range c.Schedulers {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"s1", "s2"}) || !slices.Equal(c.Schedulers[0].Shards, []int{0, 1}) ||
		!slices.Equal(c.Schedulers[1].Shards, []int{2}) || c.Schedulers[0].Host != "h1" {
		t.Errorf("schedulers: %+v, want s1 (0, 1) and s2 (2) only", c.Schedulers)
	}
	s0, s2, s3, s5 := c.Shards[0], c.Shards[2], c.Shards[3], c.Shards[5]
	if s0.Owner != "s1" || s0.Epoch != 4 || s0.Jobs != 2 || s0.PlanningLagSeconds != 0 || s0.ExpiresAt.Before(time.Now()) {
		t.Errorf("shard 0: %+v, want s1's at epoch 4, 2 enabled jobs, no lag", s0)
	}
	if s2.Owner != "s2" || s2.Epoch != 7 || s2.Jobs != 0 {
		t.Errorf("shard 2: %+v", s2)
	}
	if s3.Owner != "" || s3.Epoch != 9 || s3.Jobs != 1 || s3.PlanningLagSeconds < 90 || s3.PlanningLagSeconds > 150 {
		t.Errorf("shard 3: %+v, want no live owner and a planning lag of about 90 s", s3)
	}
	if s5.Shard != 5 || s5.Owner != "" || !s5.ExpiresAt.IsZero() || s5.Epoch != 0 {
		t.Errorf("shard 5, never held: %+v", s5)
	}
	if len(c.Ready) != 2 || !c.Ready[0].OK || c.Ready[1].OK || c.Ready[1].Name != "nats" || c.Ready[1].Error == "" {
		t.Errorf("ready: %+v", c.Ready)
	}

	// Without Dependencies, the readiness check is one entry.
	srv, _ = serverWith(t, func(c *api.Config) {
		c.Ready = func(context.Context) error { return errors.New("starting") }
	})
	if code, _ := get(t, srv, "/api/v1/cluster", &c); code != http.StatusOK || len(c.Ready) != 1 || c.Ready[0].OK || c.Ready[0].Error != "starting" {
		t.Errorf("cluster with Ready only: %d %+v", code, c.Ready)
	}
	if code, msg := get(t, srv, "/api/v1/cluster?shard=1", &c); code != http.StatusBadRequest || !strings.Contains(msg, "shard") {
		t.Errorf("cluster?shard=1: %d %q, want 400 naming shard", code, msg)
	}
}

// dashRun is a run the dashboard test writes.
type dashRun struct {
	job                 int64
	group, status       string
	at                  time.Time
	fireLag, startLag   time.Duration // 0: not triggered, not started
	message, alarmState string
}

func TestDashboard(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	jobB := e.job("b", "echo")
	now := time.Now().UTC()
	var runs []dashRun
	// Group a: ten runs in the last hour, triggered 10, 20, … 100 ms and
	// started 100, 200, … 1000 ms late; five three days ago; the shell job
	// failed three times two hours ago; the plain job was lost twice
	// (one alarm's delivery failed for good, alarmState) and runs once
	// now.
	for i := 1; i <= 10; i++ {
		runs = append(runs, dashRun{job: e.plain.ID, group: "a", status: "SUCCEEDED", at: now.Add(-time.Duration(i) * time.Minute),
			fireLag: time.Duration(i) * 10 * time.Millisecond, startLag: time.Duration(i) * 100 * time.Millisecond})
	}
	for i := 1; i <= 5; i++ {
		runs = append(runs, dashRun{job: e.plain.ID, group: "a", status: "SUCCEEDED", at: now.Add(-72*time.Hour - time.Duration(i)*time.Minute)})
	}
	for i := 1; i <= 3; i++ {
		runs = append(runs, dashRun{job: e.shell.ID, group: "a", status: "FAILED", at: now.Add(-2*time.Hour + time.Duration(i)*time.Second),
			startLag: time.Second, message: fmt.Sprint("exit status ", i), alarmState: "sent"})
	}
	runs = append(runs,
		dashRun{job: e.plain.ID, group: "a", status: "LOST", at: now.Add(-3 * time.Hour), alarmState: "failed"},
		dashRun{job: e.plain.ID, group: "a", status: "LOST", at: now.Add(-3*time.Hour - time.Minute), alarmState: "sent"},
		dashRun{job: e.plain.ID, group: "a", status: "RUNNING", at: now.Add(-90 * time.Second), fireLag: time.Millisecond, startLag: 2 * time.Millisecond},
		// Two days ago a failure that is outside the 24 hours.
		dashRun{job: e.shell.ID, group: "a", status: "FAILED", at: now.Add(-48 * time.Hour)})
	// Group b: four slow failures in the last hour.
	for i := 1; i <= 4; i++ {
		runs = append(runs, dashRun{job: jobB.ID, group: "b", status: "FAILED", at: now.Add(-time.Duration(i) * time.Minute),
			fireLag: 5 * time.Second, startLag: 6 * time.Second, message: "b failed"})
	}
	ids := make([]int64, len(runs))
	for i, r := range runs {
		var trig, start *time.Time
		if r.fireLag > 0 {
			t := r.at.Add(r.fireLag)
			trig = &t
		}
		if r.startLag > 0 {
			t := r.at.Add(r.startLag)
			start = &t
		}
		if err := e.pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
				triggered_at, started_at, message)
			VALUES ($1, $2, 0, 'schedule', $3, $4, $5, $6, $7) RETURNING id`,
			r.job, r.group, r.status, r.at, trig, start, r.message).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// The alarms: deliveries of the alert outbox (package alerts), one
	// per run with an alarmState, and one that failed two days ago,
	// outside the 24 hours.
	var channel int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO alert_channels (name, kind, group_name, target)
		VALUES ('ops', 'email', 'a', 'ops@example.com') RETURNING id`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	deliver := func(event int64, group, state string, at time.Time) {
		t.Helper()
		if _, err := e.pool.Exec(ctx, `INSERT INTO alert_deliveries (channel_id, event_id, notice, state, created_at)
			VALUES ($1, $2, jsonb_build_object('group', $3::text), $4, $5)`, channel, event, group, state, at); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range runs {
		if r.alarmState != "" {
			deliver(ids[i], r.group, r.alarmState, r.at)
		}
	}
	deliver(-1, "a", "failed", now.Add(-48*time.Hour))
	dash := func(who, query string) apiv1.Dashboard {
		t.Helper()
		code, body := e.do(who, "GET", "/api/v1/dashboard"+query, nil)
		var d apiv1.Dashboard
		if code != http.StatusOK {
			t.Fatalf("dashboard%s as %s: %d %s", query, who, code, body)
		}
		if err := json.Unmarshal(body, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	window := func(d apiv1.Dashboard, name string) apiv1.StatusWindow {
		for _, w := range d.Windows {
			if w.Name == name {
				return w
			}
		}
		t.Fatalf("no window %q in %+v", name, d.Windows)
		return apiv1.StatusWindow{}
	}
	// want counts the runs of groups since from by status (plus newEnv's
	// manual run of the plain job, SCHEDULED now, in group a).
	want := func(from time.Time, groups ...string) map[string]int64 {
		m := map[string]int64{}
		if slices.Contains(groups, "a") {
			m["SCHEDULED"] = 1
		}
		for _, r := range runs {
			if slices.Contains(groups, r.group) && !r.at.Before(from) {
				m[r.status]++
			}
		}
		return m
	}
	today := store.DayStart(now)
	near := func(p *float64, want float64) bool { return p != nil && math.Abs(*p-want) < 1e-6 }

	a := dash("viewerA", "")
	for _, w := range []struct {
		name string
		from time.Time
	}{{"today", today}, {"7d", today.AddDate(0, 0, -6)}, {"30d", today.AddDate(0, 0, -29)}} {
		got := window(a, w.name)
		if exp := want(w.from, "a"); !maps.Equal(got.ByStatus, exp) || !got.From.Equal(w.from) {
			t.Errorf("viewerA's %s window: %v from %s, want %v from %s", w.name, got.ByStatus, got.From, exp, w.from)
		}
	}
	// 15 SUCCEEDED of 21 ended runs (3 FAILED recently, 1 two days ago, 2 LOST).
	if w := window(a, "30d"); w.Total != 23 || !near(w.SuccessRate, 15.0/21) {
		t.Errorf("viewerA's 30d window: total %d, success rate %v; want 23 and %v", w.Total, w.SuccessRate, 15.0/21)
	}
	if len(a.Days) != 30 || a.Days[29].Day != today.Format(time.DateOnly) ||
		a.Days[26].ByStatus["SUCCEEDED"] != int64(countAt(runs, today.AddDate(0, 0, -3), "a", "SUCCEEDED")) {
		t.Errorf("viewerA's days: %d days ending %s, 3 days ago %v", len(a.Days), a.Days[len(a.Days)-1].Day, a.Days[26].ByStatus)
	}
	// Fire lags 10…100 ms and the RUNNING run's 1 ms: p50 of 11 values is
	// the 6th (50 ms); start lags 100…1000 ms and 2 ms.
	if a.FireLag.Runs != 11 || !near(a.FireLag.P50MS, 50) || !near(a.FireLag.P99MS, 99) ||
		a.StartLag.Runs != 11 || !near(a.StartLag.P50MS, 500) || !near(a.StartLag.P99MS, 990) {
		t.Errorf("viewerA's lags: fire %+v start %+v", fmtLag(a.FireLag), fmtLag(a.StartLag))
	}
	if a.Running != 1 || a.Lost != 2 || a.AlarmFailures != 1 {
		t.Errorf("viewerA: running %d, lost %d, alarm failures %d; want 1, 2, 1", a.Running, a.Lost, a.AlarmFailures)
	}
	if len(a.FailingJobs) != 2 {
		t.Fatalf("viewerA's failing jobs: %+v", a.FailingJobs)
	}
	sh, pl := a.FailingJobs[0], a.FailingJobs[1]
	if sh.JobID != e.shell.ID || sh.Name != e.shell.Name || sh.Group != "a" || sh.Failed != 3 || sh.Total != 3 ||
		sh.LastRun != ids[17] || sh.LastMessage != "exit status 3" || !sh.LastAt.Equal(runs[17].at.Truncate(time.Microsecond)) {
		t.Errorf("worst failing job: %+v, want the shell job, 3 of 3 failed, last run %d (exit status 3)", sh, ids[17])
	}
	if pl.JobID != e.plain.ID || pl.Failed != 2 || pl.Total != 14 || pl.LastRun != ids[18] {
		t.Errorf("second failing job: %+v, want the plain job, 2 of 14 failed, last run %d", pl, ids[18])
	}
	if len(a.Groups) != 1 || a.Groups[0].Group != "a" || a.Groups[0].LiveWorkers != 1 {
		t.Errorf("viewerA's groups: %+v", a.Groups)
	}

	// A viewer of b sees none of a's figures.
	b := dash("viewerB", "")
	if w := window(b, "today"); !maps.Equal(w.ByStatus, want(today, "b")) || w.SuccessRate == nil || *w.SuccessRate != 0 {
		t.Errorf("viewerB's today: %+v", w)
	}
	if b.FireLag.Runs != 4 || !near(b.FireLag.P99MS, 5000) || b.Running != 0 || b.Lost != 0 || b.AlarmFailures != 0 ||
		len(b.FailingJobs) != 1 || b.FailingJobs[0].JobID != jobB.ID || b.FailingJobs[0].Failed != 4 ||
		len(b.Groups) != 1 || b.Groups[0].Group != "b" {
		t.Errorf("viewerB's dashboard: %+v", b)
	}
	// An admin sees both; ?group= narrows to one.
	if ad := dash("admin", ""); !maps.Equal(window(ad, "30d").ByStatus, want(today.AddDate(0, 0, -29), "a", "b")) ||
		ad.FireLag.Runs != 15 || len(ad.FailingJobs) != 3 || ad.FailingJobs[0].JobID != jobB.ID {
		t.Errorf("admin's dashboard: %+v", ad)
	}
	if ag := dash("admin", "?group=a"); !maps.Equal(window(ag, "30d").ByStatus, window(a, "30d").ByStatus) ||
		ag.FireLag.Runs != a.FireLag.Runs || len(ag.Groups) != 1 {
		t.Errorf("admin's dashboard of group a: %+v", ag)
	}
	for _, bad := range []string{"group=a.b", "window=7d"} {
		if code, body := e.do("admin", "GET", "/api/v1/dashboard?"+bad, nil); code != http.StatusBadRequest ||
			!strings.Contains(string(body), strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("dashboard?%s: %d %s, want 400 naming the parameter", bad, code, body)
		}
	}
}

func countAt(runs []dashRun, day time.Time, group, status string) int {
	n := 0
	for _, r := range runs {
		if r.group == group && r.status == status && store.DayStart(r.at).Equal(day) {
			n++
		}
	}
	return n
}

func fmtLag(l apiv1.LagSummary) string {
	f := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{runs %d p50 %s p99 %s}", l.Runs, f(l.P50MS), f(l.P99MS))
}
