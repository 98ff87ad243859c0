package supersede

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// A worker that starts a run publishes its started event, and waits for
// JetStream to store it, before the handler is called. So the started
// event is the run's start claim: if a handler of the run ever started,
// that event is in JETJOB_EVENTS or already applied to job_runs. A
// redelivered trigger reaches another worker only after it was delivered
// before, so any started event of its run was stored before the question
// is asked; the answer waits until every event stored by then has been
// applied (the work-queue stream has removed it) and then reads job_runs.
// Without that certainty (events still being applied, PostgreSQL down) it
// answers with an error and the worker asks again: it never guesses.

// startedSQL reads what job_runs knows of each run's start.
const startedSQL = `SELECT COALESCE(r.status, ''), COALESCE(r.worker_id, ''), r.started_at
	FROM unnest($1::bigint[], $2::timestamptz[]) WITH ORDINALITY AS q(id, scheduled_at, i)
	LEFT JOIN job_runs r ON r.id = q.id AND r.scheduled_at = q.scheduled_at
	ORDER BY q.i`

// appliedWait bounds how long an answer waits for the events stored before
// the question to be applied; pollApplied is how often it looks.
const (
	appliedWait = 2 * time.Second
	pollApplied = 20 * time.Millisecond
)

// errNotApplied says events stored before the question are still waiting.
var errNotApplied = errors.New("run events stored before the question are still being applied")

// ServeStarted answers start checks (wire.StartRequest on
// stream.StartCheck) until ctx ends.
func ServeStarted(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("started")
	return serve(ctx, nc, stream.StartCheck, func(ctx context.Context, m *nats.Msg) {
		var reply wire.StartReply
		var req wire.StartRequest
		if err := wire.DecodeControl(m.Data, &req); err != nil {
			reply.Error = err.Error()
		} else if runs, err := started(ctx, js, pool, req.Queries); err != nil {
			log.Info("start check not answered yet; the worker asks again", zap.Int("queries", len(req.Queries)), zap.Error(err))
			reply.Error = err.Error()
		} else {
			reply.Runs = runs
		}
		respond(m, &reply, log)
	})
}

// started waits for the events stored so far to be applied, then reads the
// runs of qs.
func started(ctx context.Context, js jetstream.JetStream, pool *pgxpool.Pool, qs []wire.StartQuery) ([]wire.RunStart, error) {
	ctx, cancel := context.WithTimeout(ctx, appliedWait+answerTimeout)
	defer cancel()
	if err := waitApplied(ctx, js); err != nil {
		return nil, err
	}
	ids, scheduled := make([]int64, len(qs)), make([]time.Time, len(qs))
	for i, q := range qs {
		ids[i], scheduled[i] = q.RunID, q.ScheduledAt
	}
	rows, _ := pool.Query(ctx, startedSQL, ids, scheduled)
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (wire.RunStart, error) {
		var r wire.RunStart
		var at *time.Time
		err := row.Scan(&r.Status, &r.WorkerID, &at)
		if at != nil {
			r.StartedAt = at.UTC()
		}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	return runs, nil
}

// waitApplied returns once every message JETJOB_EVENTS holds now has been
// applied and acknowledged (a work-queue stream removes it then), or
// errNotApplied after appliedWait.
func waitApplied(ctx context.Context, js jetstream.JetStream) error {
	s, err := js.Stream(ctx, stream.Events)
	if err != nil {
		return err
	}
	st := s.CachedInfo().State
	last, deadline := st.LastSeq, time.Now().Add(appliedWait)
	for st.Msgs > 0 && st.FirstSeq <= last {
		if time.Now().After(deadline) {
			return errNotApplied
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollApplied):
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		st = info.State
	}
	return nil
}
