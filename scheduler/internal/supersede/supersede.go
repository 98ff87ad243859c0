// Package supersede answers the questions workers ask the schedulers about
// runs, which only PostgreSQL can answer:
//
//   - supersede (this file): a worker holds a late trigger of a fire_once
//     job: does a newer missed fire of the same job run in its place? If
//     so the worker ends the late one EXPIRED and only the newer one runs,
//     which is how a backlog replayed after a worker outage runs once per
//     job (see newerSQL for how a lasting backlog keeps running).
//   - started (started.go): a worker holds a trigger that may have reached
//     a worker before (a redelivery): did its run start there? Then it
//     must not start again under the same attempt.
//
// A worker sees only the triggers it fetched; the schedulers see every run
// in PostgreSQL. So the questions are asked on jetjob.sched.* subjects,
// which every scheduler serves in one queue group: one of them answers.
// They are asked only for late or redelivered triggers, so they cost
// nothing while workers keep up, and a worker gathers the questions of a
// replayed backlog into a few requests, each answered by one statement.
package supersede

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// newerSQL answers a batch of queries in one statement. For each late
// trigger it names the newer missed fire of the same job that runs in its
// place (the decision itself is the worker's: policy.Decide, stage
// AtPickUp), or 0: this one runs. A missed fire is one scheduled at or
// before the worker's cutoff (policy.LateBefore of its now and the job's
// threshold; the boundary is included here, where policy.Late calls a fire
// at the cutoff on time). Scheduled or catch-up fires only: manual, retry
// and child runs supersede nothing.
//
// fire_once must run one fire per backlog, and keep running one while the
// backlog lasts. "Expire if any newer fire is missed" does the first and
// not the second: under a sustained backlog every trigger reaches its
// worker late with newer missed fires behind it, so each is expired in
// favour of one that will itself be expired, and nothing runs (the
// overload benchmark measured 0.8 % of fires succeeding). So the newer fire
// named is one that does run:
//
//   - a trigger whose own run was chosen (trigger type misfire: a catch-up)
//     runs;
//   - else the oldest newer missed fire that ran, is running, or was chosen
//     supersedes it;
//   - else the job's newest missed fire still waiting (SCHEDULED, which may
//     already be published since its TRIGGERED write is held back: see
//     package runs, or
//     TRIGGERED) is chosen now, its trigger type set to misfire, and
//     supersedes it.
//
// A backlog replayed after an outage therefore runs its newest fire once,
// and a backlog that persists runs each job about once per wait in the
// queue instead of never. Two schedulers answering at once may choose two
// fires: one more run, never a lost one. The job's (job_id, scheduled_at)
// index and the partitions by scheduled_at bound each probe to the runs
// between the two times.
const newerSQL = `WITH q AS (
	SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::timestamptz[])
		WITH ORDINALITY AS q(run_id, job_id, scheduled_at, cutoff, i)
), a AS (
	SELECT q.i,
		EXISTS (SELECT 1 FROM job_runs s WHERE s.id = q.run_id AND s.scheduled_at = q.scheduled_at
			AND s.trigger_type = 'misfire') AS chosen,
		(SELECT n.id FROM job_runs n
			WHERE n.job_id = q.job_id AND n.scheduled_at > q.scheduled_at AND n.scheduled_at <= q.cutoff
			  AND n.trigger_type IN ('schedule', 'misfire') AND n.status NOT IN ('SKIPPED', 'EXPIRED', 'DISCARDED')
			  AND (n.trigger_type = 'misfire' OR n.status NOT IN ('SCHEDULED', 'TRIGGERED'))
			ORDER BY n.scheduled_at, n.id LIMIT 1) AS runs,
		w.id AS waiting, w.scheduled_at AS waiting_at
	FROM q
	LEFT JOIN LATERAL (
		SELECT n.id, n.scheduled_at FROM job_runs n
		WHERE n.job_id = q.job_id AND n.scheduled_at > q.scheduled_at AND n.scheduled_at <= q.cutoff
		  AND n.trigger_type = 'schedule' AND n.status IN ('SCHEDULED', 'TRIGGERED')
		ORDER BY n.scheduled_at DESC, n.id DESC LIMIT 1) w ON true
), choose AS (
	UPDATE job_runs r SET trigger_type = 'misfire'
	FROM (SELECT DISTINCT waiting, waiting_at FROM a WHERE NOT chosen AND runs IS NULL AND waiting IS NOT NULL) c
	WHERE r.id = c.waiting AND r.scheduled_at = c.waiting_at
	  AND r.trigger_type = 'schedule' AND r.status IN ('SCHEDULED', 'TRIGGERED')
	RETURNING r.id
)
SELECT CASE WHEN a.chosen THEN 0 ELSE COALESCE(a.runs, a.waiting, 0) END FROM a ORDER BY a.i`

// answerTimeout bounds one database look-up; the worker waits a little
// longer before running the trigger anyway.
const answerTimeout = time.Second

// Serve answers supersede requests until ctx ends.
func Serve(ctx context.Context, nc *nats.Conn, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("supersede")
	return serve(ctx, nc, stream.Supersede, func(ctx context.Context, m *nats.Msg) { answer(ctx, m, pool, log) })
}

// serve hands the requests on subject (in the schedulers' queue group) to
// answerers look-ups running at once, until ctx ends: a replayed backlog
// asks about many triggers at once.
func serve(ctx context.Context, nc *nats.Conn, subject string, answer func(context.Context, *nats.Msg)) error {
	reqs := make(chan *nats.Msg, 256)
	sub, err := nc.ChanQueueSubscribe(subject, stream.SupersedeQueue, reqs)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var wg sync.WaitGroup
	for range answerers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-reqs:
					if m.Reply != "" {
						answer(ctx, m)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// answerers is how many look-ups run at once.
const answerers = 4

// respond sends reply (a control reply of package wire) to m.
func respond(m *nats.Msg, reply any, log *zap.Logger) {
	data, err := wire.EncodeControl(reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		log.Warn("request not answered", zap.String("subject", m.Subject), zap.Error(err))
	}
}

func answer(ctx context.Context, m *nats.Msg, pool *pgxpool.Pool, log *zap.Logger) {
	var reply wire.SupersedeReply
	var req wire.SupersedeRequest
	if err := wire.DecodeControl(m.Data, &req); err != nil {
		reply.Error = err.Error()
	} else {
		qctx, cancel := context.WithTimeout(ctx, answerTimeout)
		by, err := superseders(qctx, pool, req.Queries)
		cancel()
		if err != nil {
			log.Warn("supersede look-up failed; the worker runs the triggers", zap.Int("queries", len(req.Queries)), zap.Error(err))
			reply.Error = "look-up failed"
		} else {
			reply.By = by
		}
	}
	respond(m, &reply, log)
}

// superseders answers queries with newerSQL: per query, the run that runs
// in its place, 0 for none.
func superseders(ctx context.Context, pool *pgxpool.Pool, queries []wire.SupersedeQuery) ([]int64, error) {
	runs, jobs := make([]int64, len(queries)), make([]int64, len(queries))
	scheduled, cutoffs := make([]time.Time, len(queries)), make([]time.Time, len(queries))
	for i, q := range queries {
		runs[i], jobs[i], scheduled[i], cutoffs[i] = q.RunID, q.JobID, q.ScheduledAt, q.Cutoff
	}
	var by []int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, genericPlanSQL); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, newerSQL, runs, jobs, scheduled, cutoffs)
		var err error
		by, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("supersede %d queries: %w", len(queries), err)
	}
	return by, nil
}

// genericPlanSQL makes newerSQL run on its generic plan, built once per
// connection. Its three probes and its UPDATE each reach every partition of
// job_runs, and a custom plan, made anew at every call, took ≈ 4 ms to
// plan against 0.16 ms to run: under a lasting backlog, when workers ask
// about every trigger, planning was most of PostgreSQL's CPU (the overload
// benchmark, docs/performance.md). The generic plan prunes the partitions
// at run time, per probe, by the same (job_id, scheduled_at) bounds.
const genericPlanSQL = `SET LOCAL plan_cache_mode = force_generic_plan`
