// Package supersede answers workers that hold a late trigger of a fire_once
// job: has a newer fire of the same job already been published? If so the
// worker ends the late one EXPIRED and only the newer one runs, which is
// how a backlog replayed after a worker outage runs once per job.
//
// A worker sees only the triggers it fetched; the schedulers see every run
// in PostgreSQL. So the question is asked on jetjob.sched.supersede, which
// every scheduler serves in one queue group: one of them answers. The
// question is asked only for late triggers, so it costs nothing while
// workers keep up.
package supersede

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// newerSQL finds the oldest published run of the same job for a later
// fire time that is itself missed (before the worker's cutoff): scheduled
// or catch-up fires only (manual, retry and child runs
// supersede nothing), SCHEDULED (not published) and SKIPPED (never
// published) excluded. Newer runs have larger ids, so the job's
// (job_id, id) index bounds the scan to the runs since the asked one.
const newerSQL = `SELECT n.id FROM job_runs r
	JOIN job_runs n ON n.job_id = r.job_id AND n.id > r.id AND n.scheduled_at > r.scheduled_at
	WHERE r.id = $1 AND r.job_id = $2 AND n.scheduled_at <= $3
	  AND n.trigger_type IN ('schedule', 'misfire') AND n.status NOT IN ('SCHEDULED', 'SKIPPED')
	ORDER BY n.id LIMIT 1`

// answerTimeout bounds one database look-up; the worker waits a little
// longer before running the trigger anyway.
const answerTimeout = time.Second

// Serve answers supersede requests until ctx ends.
func Serve(ctx context.Context, nc *nats.Conn, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("supersede")
	reqs := make(chan *nats.Msg, 256)
	sub, err := nc.ChanQueueSubscribe(stream.Supersede, stream.SupersedeQueue, reqs)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", stream.Supersede, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// A replayed backlog asks about many triggers at once: a few look-ups
	// run in parallel.
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
					answer(ctx, m, pool, log)
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// answerers is how many look-ups run at once.
const answerers = 4

func answer(ctx context.Context, m *nats.Msg, pool *pgxpool.Pool, log *zap.Logger) {
	if m.Reply == "" {
		return
	}
	var reply wire.SupersedeReply
	var req wire.SupersedeRequest
	if err := wire.DecodeControl(m.Data, &req); err != nil {
		reply.Error = err.Error()
	} else {
		qctx, cancel := context.WithTimeout(ctx, answerTimeout)
		err := pool.QueryRow(qctx, newerSQL, req.RunID, req.JobID, req.Cutoff).Scan(&reply.By)
		cancel()
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			log.Warn("supersede look-up failed; the worker runs the trigger", logging.Run(req.RunID), zap.Error(err))
			reply.Error = "look-up failed"
		}
	}
	data, err := wire.EncodeControl(&reply)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		log.Warn("supersede request not answered", zap.Error(err))
	}
}
