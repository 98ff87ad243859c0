package supersede

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/shared/wire"
)

// fire_once keeps running a job while its backlog lasts. Workers over
// capacity pick every trigger up late, with newer missed fires behind it;
// the answer must name a fire that runs, so that one does, instead of
// expiring each trigger in favour of one that is expired in turn.
func TestSupersedeNamesAFireThatRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.Pool(t)
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	// Fires 0..9 of job 7, one a second, all published and waiting.
	ids := make([]int64, 10)
	for i := range ids {
		if err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
			VALUES (7, 'g', 0, 'schedule', 'TRIGGERED', $1) RETURNING id`, at(i)).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(i int, cutoff time.Time) int64 {
		t.Helper()
		by, err := superseders(ctx, pool, []wire.SupersedeQuery{{RunID: ids[i], JobID: 7, ScheduledAt: at(i), Cutoff: cutoff}})
		if err != nil {
			t.Fatal(err)
		}
		return by[0]
	}
	setStatus := func(i int, status string) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = $2 WHERE id = $1`, ids[i], status); err != nil {
			t.Fatal(err)
		}
	}
	triggerType := func(i int) (tt string) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT trigger_type FROM job_runs WHERE id = $1`, ids[i]).Scan(&tt); err != nil {
			t.Fatal(err)
		}
		return tt
	}

	// Fire 0 is picked up when fires up to 5 are missed: the newest of
	// them, 5, is chosen as the catch-up and runs in its place.
	if by := ask(0, at(5)); by != ids[5] {
		t.Fatalf("fire 0: superseded by %d, want fire 5 (%d), the newest missed", by, ids[5])
	}
	if tt := triggerType(5); tt != string(wire.TriggerMisfire) {
		t.Errorf("fire 5 has trigger type %q after being chosen, want misfire", tt)
	}
	setStatus(0, "EXPIRED")
	// Fire 1, picked up a moment later when fire 7 is missed too, is
	// superseded by the fire already chosen, not by a second choice.
	if by := ask(1, at(7)); by != ids[5] {
		t.Errorf("fire 1: superseded by %d, want the chosen fire 5 (%d)", by, ids[5])
	}
	if tt := triggerType(7); tt != string(wire.TriggerSchedule) {
		t.Errorf("fire 7 became %q: a second catch-up was chosen while one waits", tt)
	}
	// The chosen fire runs however late it is, with newer fires missed
	// behind it: the backlog still runs.
	if by := ask(5, at(9)); by != 0 {
		t.Errorf("chosen fire 5: superseded by %d, want it to run", by)
	}
	setStatus(5, "SUCCEEDED")
	// Past the fire that ran, the next late fire starts a new round: the
	// expired fires in between (0) never count as running in its place.
	setStatus(6, "EXPIRED")
	if by := ask(7, at(9)); by != ids[9] {
		t.Errorf("fire 7: superseded by %d, want fire 9 (%d), the newest missed", by, ids[9])
	}
	// A fire with no newer missed fire runs.
	if by := ask(9, at(9)); by != 0 {
		t.Errorf("fire 9: superseded by %d, want it to run", by)
	}
	// Fire 8 is superseded by 9, chosen, even when fire 9 started already.
	setStatus(9, "RUNNING")
	if by := ask(8, at(9)); by != ids[9] {
		t.Errorf("fire 8: superseded by %d, want fire 9 (%d)", by, ids[9])
	}
}

// After a NATS outage, dispatch publishes the newest missed fire as the
// job's catch-up; the next fire, on time when its batch was formed, can
// cross the threshold on its way to the worker. The catch-up already ran
// that backlog, so the late fire does not run as a second one. A catch-up
// published before a fire was due covers nothing newer than it.
func TestSupersedeOlderCatchUpCoversFiresDueBeforeIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.Pool(t)
	base := time.Now().Add(-time.Minute).Truncate(time.Second)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	const threshold = 20 * time.Second
	insert := func(job int64, i int, tt wire.TriggerType, triggered time.Time) int64 {
		t.Helper()
		var id int64
		if err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, triggered_at)
			VALUES ($1, 'g', 0, $2, 'TRIGGERED', $3, $4) RETURNING id`, job, tt, at(i), triggered).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	ask := func(job, id int64, i int, now time.Time) int64 {
		t.Helper()
		by, err := superseders(ctx, pool, []wire.SupersedeQuery{{RunID: id, JobID: job, ScheduledAt: at(i), Cutoff: now.Add(-threshold)}})
		if err != nil {
			t.Fatal(err)
		}
		return by[0]
	}
	// Job 8: fire 2 published 21 s late as the catch-up; fire 3 published
	// 20.06 s late as an ordinary fire, reaching its worker 20.5 s late.
	catchUp := insert(8, 2, wire.TriggerMisfire, at(2).Add(21*time.Second))
	late := insert(8, 3, wire.TriggerSchedule, at(3).Add(20060*time.Millisecond))
	if by := ask(8, late, 3, at(3).Add(20500*time.Millisecond)); by != catchUp {
		t.Errorf("fire 3, due before the catch-up was published: superseded by %d, want the catch-up %d", by, catchUp)
	}
	// Job 9: its catch-up (fire 2) went out before fire 30 was due; fire
	// 30, late at its worker, is a backlog of its own and runs.
	insert(9, 2, wire.TriggerMisfire, at(2).Add(21*time.Second))
	own := insert(9, 30, wire.TriggerSchedule, at(30).Add(time.Second))
	if by := ask(9, own, 30, at(30).Add(25*time.Second)); by != 0 {
		t.Errorf("fire 30, due after the older catch-up went out: superseded by %d, want it to run", by)
	}
}
