package supersede

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/shared/wire"
)

// insertRun writes a TRIGGERED run of job and group and returns its id.
func insertRun(t *testing.T, pool *pgxpool.Pool, job int64, group string, at time.Time) int64 {
	t.Helper()
	var id int64
	err := pool.QueryRow(context.Background(), `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
		VALUES ($1, $2, 0, 'manual', 'TRIGGERED', $3) RETURNING id`, job, group, at).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// An event still waiting in JETJOB_EVENTS counts for a start check only
// when it came on the subject of the run's own group: a worker credential
// of group a may publish on jetjob.event.a any run id, and an event there
// saying that group b's run finished must not make b's worker acknowledge
// the run's trigger without running it. The one of b's own subject counts.
func TestStartCheckIgnoresEventsOfAnotherGroup(t *testing.T) {
	ctx, js, pool := startCheckSetup(t)
	at := time.Now().UTC().Truncate(time.Millisecond)
	forged, genuine := insertRun(t, pool, 1, "b", at), insertRun(t, pool, 2, "b", at)
	publish := func(group string, run int64) {
		t.Helper()
		data, err := wire.EncodeEvents(
			wire.Event{Kind: wire.EventStarted, RunID: run, JobID: 1, WorkerID: group + "-1", Status: wire.StatusRunning, At: at, ScheduledAt: at},
			wire.Event{Kind: wire.EventFinished, RunID: run, JobID: 1, WorkerID: group + "-1", Status: wire.StatusSucceeded, At: at, ScheduledAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, stream.Event(group), data); err != nil {
			t.Fatal(err)
		}
	}
	publish("a", forged)
	publish("b", genuine)
	before := foreignCount(t, "start_check")

	got, err := started(ctx, js, pool, []wire.StartQuery{{RunID: forged, ScheduledAt: at}, {RunID: genuine, ScheduledAt: at}}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if r := got[0]; r.Status != wire.StatusTriggered || r.Started() {
		t.Errorf("run %d of group b after events on group a's subject: %+v, want TRIGGERED and not started", forged, r)
	}
	if r := got[1]; r.Status != wire.StatusSucceeded || r.WorkerID != "b-1" {
		t.Errorf("run %d of group b with its own group's events: %+v, want SUCCEEDED, started on b-1", genuine, r)
	}
	if n := foreignCount(t, "start_check") - before; n != 1 {
		t.Errorf("foreign events counted %v times, want once", n)
	}
}

// startCheckSetup gives a start-check test a context, JetStream with the
// streams provisioned, and a fresh database.
func startCheckSetup(t *testing.T) (context.Context, jetstream.JetStream, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, _, js := jstest.Streams(t)
	pool, err := pgxpool.New(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return ctx, js, pool
}

func foreignCount(t *testing.T, source string) float64 {
	t.Helper()
	return foreign.Total(source)
}
