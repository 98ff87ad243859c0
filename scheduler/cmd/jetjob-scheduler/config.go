package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/alarm"
	"github.com/jetjob/jetjob/scheduler/retention"
	"github.com/jetjob/jetjob/shared/logging"
)

// options are the flags shared by serve and dev.
type options struct {
	listen           string
	insecureNoAuth   bool
	shardCount       int
	schedulerID      string
	leaseTTL         time.Duration
	interval         time.Duration
	window           time.Duration
	misfireThreshold time.Duration
	maxCatchup       int
	replicas         int
	dupWindow        time.Duration
	logRetention     time.Duration
	runRetention     time.Duration
	logFormat        string
	logLevel         string
	smtpHost         string
	smtpPort         int
	smtpUser         string
	smtpFrom         string
	smtpStartTLS     bool
	consoleURL       string
}

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok {
		return v
	}
	return def
}

// envErrs collects environment variables that could not be parsed (once
// each, though several commands read them); the root command refuses to
// run while there are any.
var (
	envErrs []error
	envBad  = map[string]bool{}
)

func badEnv(name, v, want string) {
	if !envBad[name] {
		envBad[name] = true
		envErrs = append(envErrs, fmt.Errorf("%s=%q: want %s", name, v, want))
	}
}

func envInt(name string, def int) int {
	if v, ok := os.LookupEnv(name); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			badEnv(name, v, "an integer")
			return def
		}
		return n
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, ok := os.LookupEnv(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			badEnv(name, v, "a duration like 5s")
			return def
		}
		return d
	}
	return def
}

func (o *options) register(fs *pflag.FlagSet, defListen string) {
	fs.StringVar(&o.listen, "listen", env("JETJOB_LISTEN", defListen), "HTTP API address (JETJOB_LISTEN)")
	fs.BoolVar(&o.insecureNoAuth, "insecure-no-auth", false, "serve the API without a bearer token (never in production)")
	fs.IntVar(&o.shardCount, "shard-count", envInt("JETJOB_SHARD_COUNT", 0), "shards of a new cluster, default 64; fixed once the cluster exists (JETJOB_SHARD_COUNT)")
	fs.StringVar(&o.schedulerID, "scheduler-id", env("JETJOB_SCHEDULER_ID", ""), "this instance's id in shard leases, default host-pid-random (JETJOB_SCHEDULER_ID)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", envDuration("JETJOB_LEASE_TTL", 0), "shard lease TTL: a dead scheduler's shards move within it, default 10s (JETJOB_LEASE_TTL)")
	fs.DurationVar(&o.interval, "planning-interval", envDuration("JETJOB_PLANNING_INTERVAL", 0), "pause between planning passes, default 1s (JETJOB_PLANNING_INTERVAL)")
	fs.DurationVar(&o.window, "planning-window", envDuration("JETJOB_PLANNING_WINDOW", 0), "how far ahead fires are planned, default 5s (JETJOB_PLANNING_WINDOW)")
	fs.DurationVar(&o.misfireThreshold, "misfire-threshold", envDuration("JETJOB_MISFIRE_THRESHOLD", 0), "how late a fire may be before its misfire policy applies, default 5s (JETJOB_MISFIRE_THRESHOLD)")
	fs.IntVar(&o.maxCatchup, "max-catchup", envInt("JETJOB_MAX_CATCHUP", 0), "missed fires handled per job and pass, default 100 (JETJOB_MAX_CATCHUP)")
	fs.IntVar(&o.replicas, "stream-replicas", envInt("JETJOB_STREAM_REPLICAS", 0), "JetStream replicas, 1 or 3, default 1 (JETJOB_STREAM_REPLICAS)")
	fs.DurationVar(&o.dupWindow, "duplicate-window", envDuration("JETJOB_DUPLICATE_WINDOW", 0), "JetStream duplicate window for triggers, default 2m (JETJOB_DUPLICATE_WINDOW)")
	fs.StringVar(&o.smtpHost, "smtp-host", env("JETJOB_SMTP_HOST", ""), "SMTP server for alarm emails; empty disables email (JETJOB_SMTP_HOST)")
	fs.IntVar(&o.smtpPort, "smtp-port", envInt("JETJOB_SMTP_PORT", 587), "SMTP port (JETJOB_SMTP_PORT)")
	fs.StringVar(&o.smtpUser, "smtp-user", env("JETJOB_SMTP_USER", ""), "SMTP user; the password comes from JETJOB_SMTP_PASSWORD (JETJOB_SMTP_USER)")
	fs.StringVar(&o.smtpFrom, "smtp-from", env("JETJOB_SMTP_FROM", ""), "sender address of alarm emails (JETJOB_SMTP_FROM)")
	fs.BoolVar(&o.smtpStartTLS, "smtp-starttls", env("JETJOB_SMTP_STARTTLS", "true") == "true", "use STARTTLS (JETJOB_SMTP_STARTTLS=true|false)")
	fs.StringVar(&o.consoleURL, "console-url", env("JETJOB_CONSOLE_URL", ""), "base URL for links in alarms (JETJOB_CONSOLE_URL)")
	fs.DurationVar(&o.logRetention, "log-retention", envDuration("JETJOB_LOG_RETENTION", 0), "how long run log lines are kept in JETJOB_LOGS, default 720h (JETJOB_LOG_RETENTION)")
	fs.DurationVar(&o.runRetention, "run-retention", envDuration("JETJOB_RUN_RETENTION", retention.DefaultRetention), "how long runs are kept in job_runs; older days are dropped once rolled up into the daily report, which is kept (JETJOB_RUN_RETENTION)")
	fs.StringVar(&o.logFormat, "log-format", env("JETJOB_LOG_FORMAT", "json"), "json or console (JETJOB_LOG_FORMAT)")
	fs.StringVar(&o.logLevel, "log-level", env("JETJOB_LOG_LEVEL", "info"), "debug, info, warn or error (JETJOB_LOG_LEVEL)")
}

func (o *options) logger() (*zap.Logger, error) { return logging.New(o.logFormat, o.logLevel) }

// validate checks the flags that have no safe reading when wrong.
func (o *options) validate() error {
	if o.runRetention <= 0 {
		// 0 would not mean "keep forever" but "drop every finished day":
		// refused rather than guessed.
		return fmt.Errorf("--run-retention %s (JETJOB_RUN_RETENTION): want a positive duration such as 720h (30 days)", o.runRetention)
	}
	return nil
}

// schedulerConfig builds the scheduler's config from the flags.
func (o *options) schedulerConfig(pool *pgxpool.Pool, nc *nats.Conn, ln net.Listener, token string, log *zap.Logger) scheduler.Config {
	c := scheduler.Config{
		Pool: pool, NATS: nc, Listener: ln, APIToken: token, InsecureNoAuth: o.insecureNoAuth,
		ShardCount: o.shardCount, Logger: log,
	}
	c.Lease.ID = o.schedulerID
	c.Lease.TTL = o.leaseTTL
	c.Planner.Interval = o.interval
	c.Planner.Window = o.window
	c.Planner.MisfireThreshold = o.misfireThreshold
	c.Planner.MaxCatchup = o.maxCatchup
	c.Alarm.SMTP = alarm.SMTP{Host: o.smtpHost, Port: o.smtpPort, User: o.smtpUser,
		Password: os.Getenv("JETJOB_SMTP_PASSWORD"), From: o.smtpFrom, StartTLS: o.smtpStartTLS}
	c.Alarm.WebhookSecret = os.Getenv("JETJOB_WEBHOOK_SECRET")
	c.Alarm.ConsoleURL = o.consoleURL
	c.Streams.Replicas = o.replicas
	c.Streams.DuplicateWindow = o.dupWindow
	c.Streams.LogMaxAge = o.logRetention
	c.Retention.Retention = o.runRetention
	return c
}

// connectNATS connects and keeps reconnecting forever: an unreachable NATS
// at start or later is waited out, never fatal.
func connectNATS(url, name string, log *zap.Logger, extra ...nats.Option) (*nats.Conn, error) {
	opts := append([]nats.Option{
		nats.Name(name),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", zap.Error(err))
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", zap.String("url", nc.ConnectedUrl())) }),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
	}
	return nc, nil
}

// openPool configures a pool that stays warm: the first query on a fresh
// connection is slow, and planning must not pay that.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	cfg.MinConns = 4
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return pool, nil
}
