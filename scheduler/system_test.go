package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/worker"
)

const testToken = "test-token"

// system is a whole jetjob in one test: real PostgreSQL, real NATS
// (embedded), a scheduler with its HTTP API and a worker of group "g".
type system struct {
	api     *client.Client
	pool    *pgxpool.Pool
	url     string // API base URL
	metrics string // the metrics listener's base URL
	natsURL string
	// signals are the scheduler's test signals, initialised.
	signals *scheduler.TestSignals
	// sched is the scheduler itself.
	sched *scheduler.Scheduler
}

// connect opens a connection of the test's own to the system's NATS (a
// worker's, or a stranger's that publishes), closed when the test ends.
func (s *system) connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// systemConfig is what startSystem's options adjust: the scheduler's
// settings and what it runs on (an option may tee the logger).
type systemConfig struct {
	scheduler.Config
	scheduler.Deps
}

// startSystem starts everything; register adds handlers to the worker
// before it runs. Everything stops when the test ends. The database is a
// fresh one on the package's PostgreSQL unless an option sets Pool (to one
// on a server of the test's own, say).
func startSystem(t *testing.T, register func(w *worker.Worker), opts ...func(*systemConfig)) *system {
	t.Helper()
	log := zaptest.NewLogger(t)
	pool := pgtest.Pool(t)
	ns, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)
	connect := func() *nats.Conn {
		nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := systemConfig{
		Config: scheduler.Config{APIToken: testToken, ShardCount: 4,
			Planner: planner.Config{Interval: 200 * time.Millisecond, Window: 2 * time.Second}},
		Deps: scheduler.Deps{Pool: pool, NATS: connect(), Listener: ln, MetricsListener: mln, Logger: log, TriggerSigner: testTriggerSigner},
	}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := scheduler.New(cfg.Config, cfg.Deps)
	if err != nil {
		t.Fatal(err)
	}
	signals := new(scheduler.TestSignals)
	signals.Init(t)
	s.SetTestSignals(signals)
	// The worker logs through cfg.Logger too, so an option that observes
	// the logs sees both sides.
	// One registry for both, as jetjob-scheduler dev serves them: a series
	// of the same name with other labels on both sides would fail New.
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: connect(), Group: "g", Logger: cfg.Logger.Named("worker"),
		AbandonGrace: 500 * time.Millisecond, Concurrency: 128, Metrics: s.Registry()})
	if err != nil {
		t.Fatalf("worker beside the scheduler, metrics in one registry: %v", err)
	}
	register(w)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- s.Run(ctx) }()
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("stop: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("scheduler or worker did not stop within 30s")
				return
			}
		}
	})
	url := "http://" + ln.Addr().String()
	api, err := client.New(url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	sys := &system{api: api, pool: cfg.Pool, url: url, metrics: "http://" + mln.Addr().String(), natsURL: ns.ClientURL(), signals: signals, sched: s}
	testwait.Eventually(t, 20*time.Second, "API ready", func() bool {
		_, err := api.ListGroups(context.Background())
		return err == nil
	})
	if _, err := api.CreateGroup(context.Background(), apiv1.Group{Name: "g"}); err != nil {
		t.Fatal(err)
	}
	return sys
}

func isAPIError(err error, code int) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && ae.StatusCode == code
}

// createJob creates a job, failing the test if the API refuses it.
func createJob(t *testing.T, api *client.Client, spec apiv1.JobSpec) *apiv1.Job {
	t.Helper()
	job, err := api.CreateJob(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// trigger starts a manual run of a job (params nil: the job's own),
// failing the test if the API refuses it.
func trigger(t *testing.T, api *client.Client, jobID int64, params *string) *apiv1.Run {
	t.Helper()
	run, err := api.TriggerJob(t.Context(), jobID, params)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// waitStatus waits until a run reads status and returns it as read then.
func waitStatus(t *testing.T, api *client.Client, runID int64, status string, timeout time.Duration) *apiv1.Run {
	t.Helper()
	var run *apiv1.Run
	testwait.Eventually(t, timeout, fmt.Sprintf("run %d %s", runID, status), func() bool {
		r, err := api.GetRun(t.Context(), runID)
		run = r
		return err == nil && r.Status == status
	})
	return run
}
