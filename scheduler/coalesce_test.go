package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A run that ends before its dispatcher records the publish is written
// once after planning: its worker's events carry the trigger's stream
// sequence and time, the results applier records them with the final
// status, and the dispatcher's held-back TRIGGERED write (flushed at the
// latest when the scheduler stops) leaves the row alone.
func TestFastRunRecordedInOneUpdate(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	i := c.startScheduler(4, func(cfg *scheduler.Config) { cfg.Dispatch.TriggeredDelay = time.Minute })
	c.startWorker("w1")
	job := c.createJobs(1, apiv1.JobSpec{Name: "fast", ScheduleType: "cron", ScheduleExpr: "@every 1s"})[0]
	testwait.Eventually(t, 20*time.Second, "3 runs SUCCEEDED", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, job) >= 3
	})

	type row struct {
		id                   int64
		xmin                 string
		seq                  *int64
		scheduled, triggered *time.Time
		started              *time.Time
	}
	read := func() map[int64]row {
		rows, _ := c.direct.Query(context.Background(), `SELECT id, xmin::text, stream_seq, scheduled_at, triggered_at, started_at
			FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, job)
		out := map[int64]row{}
		var r row
		if _, err := pgx.ForEachRow(rows, []any{&r.id, &r.xmin, &r.seq, &r.scheduled, &r.triggered, &r.started}, func() error {
			out[r.id] = r
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := read()
	seqs := map[int64]bool{}
	for id, r := range before {
		if r.seq == nil || r.triggered == nil {
			t.Fatalf("run %d SUCCEEDED without its trigger's sequence and time: %+v", id, r)
		}
		if seqs[*r.seq] {
			t.Errorf("run %d: stream sequence %d recorded for another run too", id, *r.seq)
		}
		seqs[*r.seq] = true
		if r.triggered.Before(*r.scheduled) || r.triggered.After(*r.started) {
			t.Errorf("run %d: triggered at %s, not between its fire %s and its start %s", id, r.triggered, r.scheduled, r.started)
		}
	}
	// Stopping writes every held TRIGGERED mark.
	c.stop(c.nodes[i])
	after := read()
	for id, r := range before {
		if a := after[id]; a.xmin != r.xmin {
			t.Errorf("run %d was written again after it SUCCEEDED (xmin %s, then %s)", id, r.xmin, a.xmin)
		}
	}
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status NOT IN ('SCHEDULED', 'SKIPPED') AND stream_seq IS NULL`, job); n != 0 {
		t.Errorf("%d published runs without a stream sequence after the scheduler stopped", n)
	}
}
