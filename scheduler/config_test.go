package scheduler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/scheduler/internal/dispatch"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/results"
	"github.com/jetjob/jetjob/scheduler/internal/retention"
)

// Config.Validate checks every component's section, with the component's
// own message, and reports every wrong section at once.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  scheduler.Config
		want []string // nil for valid
	}{
		{"zero", scheduler.Config{}, nil},
		{"shard count", scheduler.Config{ShardCount: -1}, []string{"scheduler: ShardCount must be 1 to 4096 (0: 64), got -1"}},
		{"too many shards", scheduler.Config{ShardCount: 5000}, []string{"scheduler: ShardCount must be 1 to 4096 (0: 64), got 5000"}},
		{"lease", scheduler.Config{Lease: lease.Config{TTL: time.Millisecond}}, []string{"lease TTL 1ms: want at least 500ms"}},
		{"planner", scheduler.Config{Planner: planner.Config{MaxCatchup: -1}}, []string{"max catch-up -1: want at least 1"}},
		{"dispatch", scheduler.Config{Dispatch: dispatch.Config{FlushSize: -1}}, []string{"dispatch: FlushSize must be ≥ 0 (0: 2000), got -1"}},
		{"results", scheduler.Config{Results: results.Config{AckWait: -time.Second}}, []string{"results: AckWait must be ≥ 0 (0: 30s), got -1s"}},
		{"alarm", scheduler.Config{Alarm: alarm.Config{ConsoleURL: "jetjob.example.com"}}, []string{`alarm: ConsoleURL "jetjob.example.com": want an http or https URL`}},
		{"retention", scheduler.Config{Retention: retention.Config{Ahead: -1}}, []string{"retention: -1 days ahead must not be negative"}},
		{"backlog", scheduler.Config{Backlog: backlog.Config{Interval: -time.Second}}, []string{"backlog interval -1s: must not be negative"}},
		{"backfill", scheduler.Config{Backfill: backfill.Config{PerSecond: -1}}, []string{"backfill: PerSecond must be ≥ 0 (0: 10), got -1"}},
		{"streams", scheduler.Config{Streams: stream.Config{Replicas: 9}}, []string{"stream replicas 9: want 1 to 5"}},
		{"several", scheduler.Config{Dispatch: dispatch.Config{InFlight: -1}, Alarm: alarm.Config{Timeout: -1}},
			[]string{"dispatch: InFlight must be ≥ 0 (0: 4096), got -1", "alarm: Timeout must be ≥ 0 (0: 10s), got -1ns"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.want == nil {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

// New refuses a scheduler whose component's config is wrong, with that
// component's message, before it touches PostgreSQL or NATS.
func TestNewRefusesInvalidComponentConfig(t *testing.T) {
	t.Parallel()
	// New only checks that the pool and the connection are given.
	deps := scheduler.Deps{Pool: new(pgxpool.Pool), NATS: new(nats.Conn)}
	cfg := scheduler.Config{Dispatch: dispatch.Config{TriggeredDelay: time.Second, FlushInterval: -time.Second}}
	_, err := scheduler.New(cfg, deps)
	if want := "dispatch: FlushInterval must be ≥ 0 (0: 20ms), got -1s"; err == nil || err.Error() != want {
		t.Errorf("New with a negative flush interval: %v, want %q", err, want)
	}
	if _, err := scheduler.New(scheduler.Config{}, deps); err != nil {
		t.Errorf("New with the defaults: %v", err)
	}
	if _, err := scheduler.New(scheduler.Config{}, scheduler.Deps{NATS: deps.NATS}); err == nil || err.Error() != "scheduler: Pool is required" {
		t.Errorf("New without a pool: %v, want scheduler: Pool is required", err)
	}
}
