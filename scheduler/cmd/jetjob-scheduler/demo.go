package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
)

const demoGroup = "demo"

// createDemoJobs creates the demo group and jobs unless they exist and
// returns their ids.
func createDemoJobs(ctx context.Context, pool *pgxpool.Pool, shardCount int) ([]int64, error) {
	st, err := store.Open(ctx, pool, shardCount)
	if err != nil {
		return nil, err
	}
	if err := st.EnsureGroup(ctx, store.Group{Name: demoGroup, Title: "Demo jobs of jetjob dev"}); err != nil {
		return nil, err
	}
	jobs := []store.Job{{
		Group: demoGroup, Name: "hello", Description: "Says hello every 5 seconds",
		Handler: "hello", Params: `{"greeting":"hello from jetjob"}`,
		ScheduleType: "cron", ScheduleExpr: "@every 5s", Timezone: "UTC",
		MisfirePolicy: "fire_once", RouteStrategy: "any", BlockStrategy: "serial",
		Timeout: 30 * time.Second, Enabled: true,
	}, {
		Group: demoGroup, Name: "flaky", Description: "Fails every third run, on seconds divisible by 10",
		Handler: "flaky", ScheduleType: "cron", ScheduleExpr: "*/10 * * * * *", Timezone: "UTC",
		MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial",
		Timeout: 30 * time.Second, Enabled: true,
	}}
	var ids []int64
	for _, j := range jobs {
		out, err := st.CreateJob(ctx, store.System, j)
		if errors.Is(err, store.ErrConflict) {
			existing, lerr := st.ListJobs(ctx, demoGroup, nil, 0, 100)
			if lerr != nil {
				return nil, lerr
			}
			for _, e := range existing {
				if e.Name == j.Name {
					ids = append(ids, e.ID)
				}
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("demo job %q: %w", j.Name, err)
		}
		ids = append(ids, out.ID)
	}
	return ids, nil
}

// demoWorker is a worker of the demo group with the demo handlers; it runs
// the triggers keys verifies (dev's own), and registers its series in reg.
func demoWorker(nc *nats.Conn, keys *trigsign.Verifier, log *zap.Logger, reg prometheus.Registerer) (*worker.Worker, error) {
	w, err := worker.New(worker.Config{NATS: nc, Group: demoGroup, Logger: log.Named("worker"), TriggerKeys: keys, Metrics: reg})
	if err != nil {
		return nil, err
	}
	w.Handle("hello", func(ctx context.Context, job *worker.Job) error {
		job.Logger.Info("hello", zap.String("params", job.Params), zap.Time("scheduled_at", job.ScheduledAt))
		return nil
	})
	var n atomic.Int64
	w.Handle("flaky", func(ctx context.Context, job *worker.Job) error {
		if k := n.Add(1); k%3 == 0 {
			return fmt.Errorf("run %d of flaky: failing on purpose (every third run fails)", k)
		}
		job.Logger.Info("flaky succeeded this time")
		return nil
	})
	w.Handle("sleep", func(ctx context.Context, job *worker.Job) error {
		d, err := time.ParseDuration(job.Params)
		if err != nil {
			return fmt.Errorf("params must be a duration like 2s: %w", err)
		}
		// A line at each end, so that the console's live log shows the
		// demo's runs doing something.
		job.Logger.Info("sleeping", zap.Duration("for", d))
		select {
		case <-time.After(d):
			job.Logger.Info("woke up", zap.Duration("slept", d))
			return nil
		case <-ctx.Done():
			job.Logger.Warn("woken early", zap.Error(ctx.Err()))
			return ctx.Err()
		}
	})
	return w, nil
}
