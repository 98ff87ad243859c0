package scheduler_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
)

// outageThreshold is the misfire threshold of the NATS-outage test's jobs:
// far above how late a loaded machine delivers fires on its own (5 to 7 s
// seen with eight such tests beside a benchmark, past the default 5 s),
// so that only the outage makes fires late. outage is how long NATS is
// down: long enough past the threshold to miss several fires.
const (
	outageThreshold = 20 * time.Second
	outage          = outageThreshold + 6*time.Second
)

// lateRuns counts, per job, the runs within [from, to] that ran although
// they were late: catch-ups. A run is late if it was published more than
// outageThreshold after its fire time, or if it runs as a misfire
// catch-up (trigger type misfire, chosen by dispatch or by the supersede
// look-up). A fire published just within the threshold can reach its
// worker past it; under fire_once the catch-up dispatch published after it
// was due runs in its place (runs.newerSQL), so it is not a second one. (A
// run published on time may still start later, waiting behind the job's
// previous run under block strategy serial: that is not late.)
func (c *cluster) lateRuns(ids []int64, from, to time.Time) map[int64]int {
	out := map[int64]int{}
	for _, id := range ids {
		out[id] = c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at BETWEEN $2 AND $3
			AND started_at IS NOT NULL AND (triggered_at - scheduled_at > $4 OR trigger_type = 'misfire')`,
			id, from, to, outageThreshold)
	}
	return out
}

func (c *cluster) statusCount(ids []int64, from, to time.Time, statuses ...string) map[int64]int {
	out := map[int64]int{}
	for _, id := range ids {
		out[id] = c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at BETWEEN $2 AND $3
			AND status = ANY($4)`, id, from, to, statuses)
	}
	return out
}

// NATS is stopped (for outage) while jobs fire every second, then
// restarted. Each misfire policy accounts for the missed fires as it
// promises, and no fire runs twice.
func TestNATSOutageMisfirePolicies(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	c.startWorker("w1")
	spec := apiv1.JobSpec{Name: "tick", ScheduleType: "cron", ScheduleExpr: "@every 1s",
		MisfireThreshold: apiv1.Duration(outageThreshold)}
	spec.MisfirePolicy = "fire_all"
	all := c.createJobs(5, spec)
	spec.Name, spec.MisfirePolicy = "skip", "skip"
	skip := c.createJobs(5, spec)
	spec.Name, spec.MisfirePolicy = "once", "fire_once"
	once := c.createJobs(5, spec)

	// Stop half-way between two fires, so no publish is in flight.
	begin := time.Now().Truncate(time.Second).Add(3*time.Second + 500*time.Millisecond)
	at(begin)
	c.ns.Shutdown()
	c.expectReady(0, false)
	at(begin.Add(outage))
	c.startNATS()
	// The missed fires are judged from the restart itself, not from when
	// a loaded machine let the test see /readyz again: a fire more than
	// the threshold before this instant was late whenever dispatch got to
	// publish it.
	restarted := time.Now()
	testwait.Eventually(t, 30*time.Second, "/readyz to answer 200 again", func() bool { return c.ready(0) })
	at(restarted.Add(6 * time.Second))

	from := begin.Add(-2 * time.Second).Truncate(time.Second)
	to := restarted.Add(4 * time.Second)
	c.waitSettled(to)
	// The fires a worker could not have received within the threshold.
	missedFrom, missedTo := begin.Add(500*time.Millisecond), restarted.Add(-outageThreshold-500*time.Millisecond)

	// fire_all: every fire ran, exactly once, the missed ones late.
	c.checkExactlyOnce(all, from, to)
	for id, n := range c.lateRuns(all, missedFrom, missedTo) {
		if n < 3 {
			t.Errorf("fire_all job %d: %d late runs, want every missed fire (at least 3) run late", id, n)
		}
	}
	// skip: no missed fire ran; each is SKIPPED or EXPIRED.
	for id, n := range c.lateRuns(skip, missedFrom, missedTo) {
		if n != 0 {
			t.Errorf("skip job %d: %d missed fires ran late, want none; its runs:\n%s", id, n, c.runsTable(id, from, to))
		}
	}
	for id, n := range c.statusCount(skip, missedFrom, missedTo, "SKIPPED", "EXPIRED") {
		if n < 3 {
			t.Errorf("skip job %d: %d missed fires recorded SKIPPED/EXPIRED, want at least 3", id, n)
		}
	}
	// fire_once: exactly one catch-up run per job, the rest SKIPPED. The
	// catch-up is the newest fire still late when dispatch published
	// again, which on a loaded machine can be later than the test saw
	// /readyz answer again: it is looked for up to the window's end.
	for id, n := range c.lateRuns(once, missedFrom, to) {
		if n != 1 {
			t.Errorf("fire_once job %d: %d late runs, want exactly 1 catch-up; its runs:\n%s", id, n, c.runsTable(id, from, to))
		}
	}
	for id, n := range c.statusCount(once, missedFrom, missedTo, "SKIPPED") {
		if n < 2 {
			t.Errorf("fire_once job %d: %d missed fires recorded SKIPPED, want at least 2", id, n)
		}
	}
	// Nothing ran twice, whatever the policy.
	for k, n := range c.fires.snapshot() {
		if n > 1 {
			t.Errorf("fire %s ran %d times", k, n)
		}
	}
	// Every fire is accounted for: no run of the window stayed unfinished.
	if n := c.count(`SELECT count(*) FROM job_runs WHERE scheduled_at BETWEEN $1 AND $2 AND status NOT IN
		('SUCCEEDED', 'SKIPPED', 'EXPIRED')`, from, to); n != 0 {
		t.Errorf("%d runs of the window ended otherwise than SUCCEEDED, SKIPPED or EXPIRED", n)
	}
}

// PostgreSQL is restarted while two schedulers run: they recover by
// themselves, and every fire runs exactly once.
func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	// Its own server: the restart would cut off every test beside it.
	pg, dbURL := pgtest.OwnServer(t)
	c := newClusterOn(t, dbURL)
	c.startScheduler(8)
	c.startScheduler(8)
	c.startWorker("w1")
	ids := c.createJobs(20, apiv1.JobSpec{Name: "tick", ScheduleType: "cron", ScheduleExpr: "@every 1s", MisfirePolicy: "fire_all"})
	start := time.Now()
	from := start.Truncate(time.Second).Add(2 * time.Second)
	at(start.Add(3 * time.Second))
	ctx := context.Background()
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	c.expectReady(0, false)
	at(start.Add(7 * time.Second))
	if err := pg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "/readyz to answer 200 again", func() bool { return c.ready(0) })
	testwait.Eventually(t, 30*time.Second, "both schedulers to hold shards again", func() bool {
		o := c.owned(0, 1)
		return o[0]+o[1] == 8 && o[0] > 0 && o[1] > 0
	})
	at(start.Add(14 * time.Second))
	to := start.Add(13 * time.Second)
	c.waitSettled(to)
	c.checkExactlyOnce(ids, from, to)
}

// ready reports whether scheduler i's /readyz answers 200.
func (c *cluster) ready(i int) bool {
	resp, err := http.Get(c.nodes[i].url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// expectReady waits for scheduler i's readiness to become want.
func (c *cluster) expectReady(i int, want bool) {
	c.t.Helper()
	testwait.Eventually(c.t, 15*time.Second, fmt.Sprintf("/readyz ready=%t", want), func() bool { return c.ready(i) == want })
}

// runsTable lists job's runs scheduled within [from, to], for a failure
// message.
func (c *cluster) runsTable(job int64, from, to time.Time) string {
	rows, err := c.direct.Query(context.Background(), `SELECT id, scheduled_at, triggered_at, started_at, status, trigger_type, coalesce(message, '')
		FROM job_runs WHERE job_id = $1 AND scheduled_at BETWEEN $2 AND $3 ORDER BY scheduled_at, id`, job, from, to)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id int64
		var sched time.Time
		var trig, started *time.Time
		var status, typ, msg string
		if err := rows.Scan(&id, &sched, &trig, &started, &status, &typ, &msg); err != nil {
			return err.Error()
		}
		stamp := func(p *time.Time) string {
			if p == nil {
				return "-"
			}
			return p.Format("15:04:05.000")
		}
		fmt.Fprintf(&b, "  run %d fire %s triggered %s started %s %s (%s) %s\n", id, sched.Format("15:04:05"), stamp(trig), stamp(started), status, typ, msg)
	}
	return b.String()
}
