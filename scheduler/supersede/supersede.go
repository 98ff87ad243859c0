// Package supersede answers the questions workers ask the schedulers about
// runs, which only PostgreSQL can answer:
//
//   - supersede (this file): a worker holds a late trigger of a fire_once
//     job: has a newer fire of the same job already been published? If so
//     the worker ends the late one EXPIRED and only the newer one runs,
//     which is how a backlog replayed after a worker outage runs once per
//     job.
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

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// newerSQL answers a batch of queries in one statement: for each, the
// oldest run of the same job for a later fire time that is itself missed
// (scheduled at or before the worker's cutoff, policy.LateBefore of its now
// and the job's threshold: the boundary is included here, where
// policy.Late calls a fire at the cutoff on time) and not SKIPPED. The
// decision itself is the worker's (policy.Decide, stage AtPickUp). Scheduled or
// catch-up fires only (manual, retry and child runs supersede nothing).
// A missed run still SCHEDULED counts: it may be published already (the
// deferred TRIGGERED write, see package runs), and
// if not, its scheduler publishes it or, by the same fire_once policy, an
// even newer one; either way a newer fire runs. The job's (job_id, scheduled_at) index and the partitions by
// scheduled_at bound each probe to the runs between the two times.
const newerSQL = `SELECT COALESCE(n.id, 0)
	FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY AS q(job_id, scheduled_at, cutoff, i)
	LEFT JOIN LATERAL (
		SELECT n.id FROM job_runs n
		WHERE n.job_id = q.job_id AND n.scheduled_at > q.scheduled_at AND n.scheduled_at <= q.cutoff
		  AND n.trigger_type IN ('schedule', 'misfire') AND n.status <> 'SKIPPED'
		ORDER BY n.scheduled_at, n.id LIMIT 1) n ON true
	ORDER BY q.i`

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
		jobs := make([]int64, len(req.Queries))
		scheduled, cutoffs := make([]time.Time, len(req.Queries)), make([]time.Time, len(req.Queries))
		for i, q := range req.Queries {
			jobs[i], scheduled[i], cutoffs[i] = q.JobID, q.ScheduledAt, q.Cutoff
		}
		qctx, cancel := context.WithTimeout(ctx, answerTimeout)
		rows, _ := pool.Query(qctx, newerSQL, jobs, scheduled, cutoffs)
		by, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		cancel()
		if err != nil {
			log.Warn("supersede look-up failed; the worker runs the triggers", zap.Int("queries", len(jobs)), zap.Error(err))
			reply.Error = "look-up failed"
		} else {
			reply.By = by
		}
	}
	respond(m, &reply, log)
}
