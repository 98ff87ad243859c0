package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// chainJobs creates jobs of group g with handler hop through the API.
type chainJobs struct {
	t   *testing.T
	sys *system
}

func (c chainJobs) create(name string, children ...int64) apiv1.Job {
	c.t.Helper()
	j, err := c.sys.api.CreateJob(context.Background(), apiv1.JobSpec{Group: "g", Name: name, Handler: "hop",
		ScheduleType: "none", ChildJobIDs: children})
	if err != nil {
		c.t.Fatalf("create %s: %v", name, err)
	}
	return *j
}

// link sets a job's children straight in the database, as links made
// before the cap (or under a higher one) are: the run-time cap must hold
// whatever links exist.
func (c chainJobs) link(parent int64, children []int64) {
	c.t.Helper()
	if _, err := c.sys.pool.Exec(context.Background(), `UPDATE jobs SET child_job_ids = $1 WHERE id = $2`, children, parent); err != nil {
		c.t.Fatal(err)
	}
}

// runCount counts the runs of jobs.
func (c chainJobs) runCount(jobs []int64, status string) int {
	c.t.Helper()
	var n int
	if err := c.sys.pool.QueryRow(context.Background(), `SELECT count(*) FROM job_runs
		WHERE job_id = ANY($1) AND ($2 = '' OR status = $2)`, jobs, status).Scan(&n); err != nil {
		c.t.Fatal(err)
	}
	return n
}

// notes returns the messages of jobs' runs that say their children were
// not triggered.
func (c chainJobs) notes(jobs []int64) []string {
	c.t.Helper()
	rows, err := c.sys.pool.Query(context.Background(), `SELECT message FROM job_runs
		WHERE job_id = ANY($1) AND message LIKE '%child jobs not triggered%'`, jobs)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// The shape, 1 → 10 → 10 (21 jobs), gave 111 runs from one
// trigger. With the default cap of 100 runs per fire through child jobs,
// and links made before the cap, one fire runs the root, its 10 children
// and the leaves of 9 of them: the tenth middle run would pass the cap,
// triggers none of its leaves and says so on the run.
func TestChainCapAtRunTime(t *testing.T) {
	t.Parallel()
	var ran atomic.Int64
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("hop", func(context.Context, *worker.Job) error { ran.Add(1); return nil })
	})
	c := chainJobs{t, sys}
	var leaves, mids []int64
	for i := range 10 {
		leaves = append(leaves, c.create(fmt.Sprint("leaf", i)).ID)
	}
	for i := range 10 {
		mids = append(mids, c.create(fmt.Sprint("mid", i), leaves...).ID)
	}
	root := c.create("root")
	c.link(root.ID, mids) // 10 × (1 + 10) = 110 runs per fire
	run := trigger(t, sys.api, root.ID, nil)
	// A run's children are triggered (or refused) in the transaction that
	// records its success: once the ten middle runs read SUCCEEDED, every
	// leaf run that will ever exist does.
	testwait.Eventually(t, 60*time.Second, "the ten middle runs to succeed", func() bool {
		return c.runCount(mids, "SUCCEEDED") == 10
	})
	if n := c.runCount(leaves, ""); n != 90 {
		t.Fatalf("%d leaf runs, want 90 (9 × 10; the tenth middle run's children would pass the cap of 100)", n)
	}
	notes := c.notes(mids)
	if len(notes) != 1 {
		t.Fatalf("middle runs saying their children were not triggered: %q, want one", notes)
	}
	for _, want := range []string{fmt.Sprintf("the fire of run %d", run.ID), "has caused 100 runs", "these 10", "limit of 100"} {
		if !strings.Contains(notes[0], want) {
			t.Errorf("note %q does not say %q", notes[0], want)
		}
	}
	testwait.Eventually(t, 60*time.Second, "the 90 leaf runs to succeed", func() bool {
		return c.runCount(leaves, "SUCCEEDED") == 90
	})
	if n := c.runCount(append(append([]int64{root.ID}, mids...), leaves...), ""); n != 101 || ran.Load() != 101 {
		t.Errorf("%d runs, %d handler calls, want 101 of each", n, ran.Load())
	}
	if n := c.runCount([]int64{root.ID}, "SUCCEEDED"); n != 1 {
		t.Errorf("root: %d succeeded runs, want 1", n)
	}
}

// The cap is the scheduler's one setting (--max-chain-runs): the API
// checks links against it and the results applier stops at it.
func TestChainCapSetting(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("hop", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) { c.MaxChainRuns = 3 })
	ctx := context.Background()
	c := chainJobs{t, sys}
	x, y, b := c.create("x"), c.create("y"), c.create("b")
	a := c.create("a", x.ID, y.ID) // reaches 2
	// root → a, b reaches (1 + 2) + 1 = 4 runs: over 3.
	_, err := sys.api.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "root", Handler: "hop", ScheduleType: "none",
		ChildJobIDs: []int64{a.ID, b.ID}})
	if !isAPIError(err, 400) || !strings.Contains(err.Error(), "would cause 4 runs") || !strings.Contains(err.Error(), "limit of 3") {
		t.Fatalf("a job reaching 4 runs under a cap of 3: %v, want 400 saying so", err)
	}
	root := c.create("root")
	c.link(root.ID, []int64{a.ID, b.ID})
	trigger(t, sys.api, root.ID, nil)
	testwait.Eventually(t, 30*time.Second, "a and b to succeed", func() bool {
		return c.runCount([]int64{a.ID, b.ID}, "SUCCEEDED") == 2
	})
	if n := c.runCount([]int64{x.ID, y.ID}, ""); n != 0 {
		t.Errorf("%d runs of a's children, want none: root's chain had caused 2 runs, and 2 more pass 3", n)
	}
	if notes := c.notes([]int64{a.ID}); len(notes) != 1 || !strings.Contains(notes[0], "limit of 3") {
		t.Errorf("a's run says %q, want why its children did not run", notes)
	}
	// Another fire is another chain, with a budget of its own.
	trigger(t, sys.api, b.ID, nil)
	trigger(t, sys.api, a.ID, nil)
	testwait.Eventually(t, 30*time.Second, "a's own fire to trigger x and y", func() bool {
		return c.runCount([]int64{x.ID, y.ID}, "SUCCEEDED") == 2
	})
}
