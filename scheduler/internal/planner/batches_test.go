package planner_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// batchJobs creates, in group g, five jobs routed "any", one routed to
// the first worker, one routed consistent_hash, one sharding broadcast,
// one "any" job with params too big to share a message, and one "any" job
// in group g2, all firing every second from the same instant. It returns
// the five "any" jobs of g.
func batchJobs(t *testing.T, st *store.Store, pool *pgxpool.Pool) map[int64]bool {
	t.Helper()
	ctx := context.Background()
	if err := st.EnsureGroup(ctx, store.Group{Name: "g2"}); err != nil {
		t.Fatal(err)
	}
	shared := map[int64]bool{}
	create := func(name string, edit func(*store.Job)) int64 {
		j := everySecond(name)
		if edit != nil {
			edit(&j)
		}
		created, err := st.CreateJob(ctx, store.System, j)
		if err != nil {
			t.Fatal(err)
		}
		return created.ID
	}
	for _, name := range []string{"a1", "a2", "a3", "a4", "a5"} {
		shared[create(name, nil)] = true
	}
	create("first", func(j *store.Job) { j.RouteStrategy = "first" })
	create("hashed", func(j *store.Job) { j.RouteStrategy = "consistent_hash" }) // no BatchTarget here
	create("broadcast", func(j *store.Job) { j.RouteStrategy = "sharding_broadcast" })
	create("big", func(j *store.Job) { j.Params = `"` + strings.Repeat("x", 60_000) + `"` })
	create("other", func(j *store.Job) { j.Group = "g2" })
	// Every job's next fire at the same whole second, just ahead.
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if _, err := pool.Exec(ctx, `UPDATE jobs SET next_fire_at = $1`, at); err != nil {
		t.Fatal(err)
	}
	return shared
}

// The runs of one group due at the same instant are planned into trigger
// batches of at most TriggerBatch runs, written with them: only jobs that
// go to the group's shared queue anyway (not one routed to a worker, nor
// consistent_hash without Deps.BatchTarget, not a broadcast), and not one
// whose trigger is too big to share a message. A
// run that would be alone in its batch (the other group's) has none.
func TestPlanShardBatchesRunsDueTogether(t *testing.T) {
	st, pool, p, out := setupWith(t, planner.Config{Window: 5 * time.Second, TriggerBatch: 3}, nil)
	shared := batchJobs(t, st, pool)
	if _, err := p.PlanShard(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	if len(out.runs) == 0 {
		t.Fatal("nothing planned")
	}
	batches := map[int64][]runs.Planned{}
	perInstant := map[time.Time]map[int64]bool{} // instant → its batches
	for _, r := range out.runs {
		if !shared[r.JobID] {
			if r.Batch != 0 {
				t.Errorf("run %d of job %d (not routed to the shared queue of g, or too big, or alone in g2) is in batch %d",
					r.RunID, r.JobID, r.Batch)
			}
			continue
		}
		if r.Batch == 0 {
			t.Errorf("run %d of job %d (routed any, due with four others) is in no batch", r.RunID, r.JobID)
			continue
		}
		batches[r.Batch] = append(batches[r.Batch], r)
		if perInstant[r.ScheduledAt] == nil {
			perInstant[r.ScheduledAt] = map[int64]bool{}
		}
		perInstant[r.ScheduledAt][r.Batch] = true
	}
	for id, members := range batches {
		if len(members) < 2 || len(members) > 3 {
			t.Errorf("batch %d has %d runs, want 2 or 3 (TriggerBatch 3, five due together)", id, len(members))
		}
		for _, m := range members {
			if m.Group != "g" || !m.ScheduledAt.Equal(members[0].ScheduledAt) || m.Shard != members[0].Shard {
				t.Errorf("batch %d mixes %+v and %+v", id, members[0], m)
			}
		}
	}
	for at, bs := range perInstant {
		if len(bs) != 2 {
			t.Errorf("the five runs due at %s are in %d batches, want 2 (3 + 2)", at, len(bs))
		}
	}
	// What the wheel got is what PostgreSQL keeps (recovery reads it).
	recovered, err := p.Recover(context.Background(), held)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[int64]int64{}
	for _, r := range recovered {
		kept[r.RunID] = r.Batch
	}
	for _, r := range out.runs {
		if b, ok := kept[r.RunID]; !ok || b != r.Batch {
			t.Errorf("run %d: planned in batch %d, recovered in %d (found %v)", r.RunID, r.Batch, b, ok)
		}
	}
}

// Runs of consistent_hash jobs share a batch only with runs bound for the
// same worker (Deps.BatchTarget), and never with runs of jobs routed any,
// not even those bound for no worker.
func TestPlanShardBatchesHashedRunsPerWorker(t *testing.T) {
	target := func(job int64, group, handler string) string {
		if group != "g" || handler != "h" {
			t.Errorf("BatchTarget(%d, %q, %q): want group g, handler h", job, group, handler)
		}
		return []string{"w1", "w2", ""}[job%3]
	}
	st, pool, p, out := setupDeps(t, planner.Config{Window: 5 * time.Second, TriggerBatch: 16},
		func(d *planner.Deps) { d.BatchTarget = target })
	ctx := context.Background()
	jobs := map[int64]string{} // job → its lane: "any", or the worker its batches go to
	for i := range 12 {
		j := everySecond(fmt.Sprintf("j%d", i))
		if i < 9 {
			j.RouteStrategy = "consistent_hash"
		}
		created, err := st.CreateJob(ctx, store.System, j)
		if err != nil {
			t.Fatal(err)
		}
		jobs[created.ID] = "any"
		if i < 9 {
			jobs[created.ID] = "hashed to " + target(created.ID, "g", "h")
		}
	}
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	if _, err := pool.Exec(ctx, `UPDATE jobs SET next_fire_at = $1`, at); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	type batchKey struct {
		at time.Time
		id int64
	}
	lanes := map[batchKey]map[string]int{} // batch → its runs per lane
	perInstant := map[time.Time]int{}
	for _, r := range out.runs {
		if r.Batch == 0 {
			t.Errorf("run %d of job %d (%s) is in no batch", r.RunID, r.JobID, jobs[r.JobID])
			continue
		}
		k := batchKey{r.ScheduledAt, r.Batch}
		if lanes[k] == nil {
			lanes[k] = map[string]int{}
			perInstant[r.ScheduledAt]++
		}
		lanes[k][jobs[r.JobID]]++
	}
	for k, l := range lanes {
		if len(l) != 1 {
			t.Errorf("batch %d at %s mixes lanes: %v", k.id, k.at, l)
		}
	}
	for at, n := range perInstant {
		if n != 4 {
			t.Errorf("%d batches due at %s, want 4 (w1, w2, no worker and any, three runs each)", n, at)
		}
	}
}

// With TriggerBatch 1, or with tracing on (a trace follows one run per
// message), every run is planned alone.
func TestPlanShardWithoutBatches(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for name, setup := range map[string]func() (*store.Store, *pgxpool.Pool, *planner.Planner, *sink){
		"TriggerBatch 1": func() (*store.Store, *pgxpool.Pool, *planner.Planner, *sink) {
			return setupWith(t, planner.Config{Window: 5 * time.Second, TriggerBatch: 1}, nil)
		},
		"tracing": func() (*store.Store, *pgxpool.Pool, *planner.Planner, *sink) {
			return setupWith(t, planner.Config{Window: 5 * time.Second, TriggerBatch: 16}, spans.New(tp))
		},
	} {
		st, pool, p, out := setup()
		batchJobs(t, st, pool)
		if _, err := p.PlanShard(context.Background(), held); err != nil {
			t.Fatal(err)
		}
		if len(out.runs) == 0 {
			t.Fatalf("%s: nothing planned", name)
		}
		for _, r := range out.runs {
			if r.Batch != 0 {
				t.Errorf("%s: run %d of job %d planned in batch %d, want alone", name, r.RunID, r.JobID, r.Batch)
			}
		}
	}
}

// A catch-up (the newest missed fire fire_once runs) joins a batch like a
// scheduled fire: the catch-ups of jobs that missed the same fires share
// one message.
func TestPlanShardBatchesCatchUps(t *testing.T) {
	st, pool, p, out := setupWith(t, planner.Config{Window: 5 * time.Second}, nil)
	ctx := context.Background()
	for i := range 4 {
		j := everySecond(fmt.Sprintf("once%d", i))
		j.MisfirePolicy = "fire_once"
		if _, err := st.CreateJob(ctx, store.System, j); err != nil {
			t.Fatal(err)
		}
	}
	// Every job missed the fires of the last 20 s, the same ones.
	if _, err := pool.Exec(ctx, `UPDATE jobs SET next_fire_at = date_trunc('second', now()) - interval '20 seconds'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.PlanShard(ctx, held); err != nil {
		t.Fatal(err)
	}
	catchUps := map[int64]int{} // batch → catch-ups in it
	for _, r := range out.runs {
		if r.TriggerType == "misfire" {
			catchUps[r.Batch]++
		}
	}
	if len(catchUps) != 1 || catchUps[0] != 0 {
		t.Errorf("catch-ups by batch %v, want the 4 in one batch", catchUps)
	}
	for b, n := range catchUps {
		if n != 4 {
			t.Errorf("batch %d has %d catch-ups, want 4", b, n)
		}
	}
}
