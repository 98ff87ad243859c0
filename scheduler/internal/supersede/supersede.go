// Package supersede answers the questions workers ask the schedulers about
// runs, which only PostgreSQL can answer:
//
//   - supersede (this file): a worker holds a late trigger of a fire_once
//     job: does a newer missed fire of the same job run in its place? If
//     so the worker ends the late one EXPIRED and only the newer one runs,
//     which is how a backlog replayed after a worker outage runs once per
//     job (runs.ChooseSuperseders, which holds the statement, says how a
//     lasting backlog keeps running).
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
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/reqreply"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// answerTimeout bounds one database look-up; the worker waits a little
// longer before running the trigger anyway.
const answerTimeout = time.Second

// Serve answers supersede requests until ctx ends.
func Serve(ctx context.Context, nc *nats.Conn, pool *pgxpool.Pool, log *zap.Logger) error {
	log = log.Named("supersede")
	return reqreply.Serve(ctx, nc, stream.Supersede, func(ctx context.Context, m *nats.Msg) { answer(ctx, m, pool, log) })
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
	reqreply.Respond(m, &reply, log)
}

// superseders answers queries in a transaction of their own
// (runs.ChooseSuperseders): per query, the run that runs in its place, 0
// for none.
func superseders(ctx context.Context, pool *pgxpool.Pool, queries []wire.SupersedeQuery) ([]int64, error) {
	var by []int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var err error
		by, err = runs.ChooseSuperseders(ctx, tx, queries)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("supersede %d queries: %w", len(queries), err)
	}
	return by, nil
}
