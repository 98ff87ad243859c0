package worker

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// Defaults for the zero values of Config.
const (
	DefaultConcurrency   = 10
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 5
	DefaultAbandonGrace  = 5 * time.Second
	DefaultShutdownGrace = 30 * time.Second
	// DefaultLockTTL is the default of Config.LockTTL, and its upper
	// bound: the TTL of the keys of the job locks bucket.
	DefaultLockTTL = 6 * time.Second
)

// Config configures a Worker. Zero values mean the defaults above.
//
// Every worker of a group writes AckWait and MaxDeliver into the group's
// shared consumer at Run, so all of them should be given the same values.
type Config struct {
	// NATS is the connection to use; required. The caller owns it: the
	// worker never closes it.
	NATS *nats.Conn
	// Group is the job group (xxl-job's executor appname) this worker serves.
	Group string
	// ID identifies this worker in events and logs; default
	// <hostname>-<pid>-<random>.
	ID string
	// Concurrency is how many runs execute at once in this process.
	Concurrency int
	// AckWait is the consumer's ack wait: a trigger not acknowledged (or
	// marked in progress) for this long is redelivered. In-progress acks are
	// sent every AckWait/3 while a run lasts.
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one trigger; after the last one the
	// scheduler records the run LOST.
	MaxDeliver int
	// AbandonGrace is how long a handler is waited for after its timeout or
	// the shutdown cancelled its context, before it is abandoned.
	AbandonGrace time.Duration
	// ShutdownGrace is how long running handlers may continue after Run's
	// context is cancelled before their own contexts are cancelled.
	ShutdownGrace time.Duration
	// HeartbeatInterval is how often the worker puts its heartbeat into the
	// workers bucket (heartbeat.go); default 5s, and shorter than the
	// bucket's TTL (Streams.WorkerTTL, default 15s = three beats).
	HeartbeatInterval time.Duration
	// Logger receives the worker's logs; default none.
	Logger *zap.Logger
	// TracerProvider records the runs' spans (trace.go); nil: the global
	// provider as New finds it. Tracing is off while neither is a real
	// provider: no span is started and no trace header is written.
	TracerProvider trace.TracerProvider
	// Metrics, if set, is the Prometheus registry New registers the
	// worker's series in (docs/metrics.md: jetjob_worker_*, each labelled
	// with the worker's group, so that workers of several groups can share
	// one registry); New fails if they cannot be registered there (a
	// worker of the same group is, already). nil: no series are exported.
	Metrics prometheus.Registerer
	// LockTTL is how long a job lock holder (or a run waiting for a lock
	// or slot) may go without refreshing its beat before the other runs
	// take it for dead and take its place over: holders and waiters beat
	// every LockTTL/3. Default DefaultLockTTL (6s), the locks bucket's
	// key TTL. Between 1s and DefaultLockTTL: a longer one would let the
	// bucket expire held keys between beats. Every worker of a group must
	// use the same value, or a shorter one takes over the locks of the
	// others while they still run; it exists so that tests of a dead
	// holder need not wait out the default.
	LockTTL time.Duration
	// Streams are the settings of the streams and buckets Run creates if
	// it finds them missing.
	Streams Streams
	// TriggerKeys verifies the schedulers' signatures on triggers
	// (package trigsign; the public half of their --trigger-signing-key,
	// two keys while it is rotated). A trigger without a valid signature
	// is handed back unrun, logged and counted (verify.go). Required unless
	// AcceptUnsignedTriggers.
	TriggerKeys *trigsign.Verifier
	// AcceptUnsignedTriggers runs triggers that carry no signature: anyone
	// who may publish on the group's trigger subjects can then run its
	// handlers with the params of their choice. Only where the NATS
	// account lets nobody but the schedulers publish triggers, or to roll
	// signing out (keys on the workers first, then signing schedulers,
	// then this off). A trigger that is signed is verified all the same
	// when TriggerKeys is set.
	AcceptUnsignedTriggers bool
}

// withDefaults fills zero values and validates, naming each bad field.
func (c Config) withDefaults() (Config, error) {
	var errs []error
	if c.NATS == nil {
		errs = append(errs, errors.New("NATS connection is required"))
	}
	if err := wire.CheckName("group", c.Group); err != nil {
		errs = append(errs, err)
	}
	if c.ID == "" {
		c.ID = defaultID()
	} else if err := wire.CheckName("worker id", c.ID); err != nil {
		errs = append(errs, err)
	}
	pos := func(name string, v *int, def int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			errs = append(errs, fmt.Errorf("%s %d: must be positive", name, *v))
		}
	}
	dur := func(name string, v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			errs = append(errs, fmt.Errorf("%s %s: must be positive", name, *v))
		}
	}
	pos("concurrency", &c.Concurrency, DefaultConcurrency)
	pos("max deliver", &c.MaxDeliver, DefaultMaxDeliver)
	dur("ack wait", &c.AckWait, DefaultAckWait)
	dur("abandon grace", &c.AbandonGrace, DefaultAbandonGrace)
	dur("shutdown grace", &c.ShutdownGrace, DefaultShutdownGrace)
	if c.AckWait > 0 && c.AckWait < 100*time.Millisecond {
		// In-progress acks go out every AckWait/3; below this they would
		// be a busy loop and any hiccup would cause redeliveries.
		errs = append(errs, fmt.Errorf("ack wait %s: want at least 100ms", c.AckWait))
	}
	dur("lock ttl", &c.LockTTL, DefaultLockTTL)
	if c.LockTTL > 0 && (c.LockTTL < time.Second || c.LockTTL > DefaultLockTTL) {
		errs = append(errs, fmt.Errorf("lock ttl %s: want between 1s and %s", c.LockTTL, DefaultLockTTL))
	}
	if err := c.Streams.config().Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.TriggerKeys == nil && !c.AcceptUnsignedTriggers {
		errs = append(errs, errors.New("trigger keys: set TriggerKeys (the schedulers' trigger public keys), "+
			"or AcceptUnsignedTriggers to run triggers anyone allowed to publish them could forge"))
	}
	if err := c.heartbeatDefaults(); err != nil {
		errs = append(errs, err)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("worker config: %w", err)
	}
	return c, nil
}

// defaultID is <hostname>-<pid>-<6 hex>, the hostname reduced to the
// characters a NATS subject token allows so that the id is always valid.
func defaultID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, host)
	if len(host) > 40 {
		host = host[:40]
	}
	if host == "" {
		host = "worker"
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Streams are the settings of jetjob's streams and buckets that Run
// creates when it finds them missing; existing ones are left as the
// schedulers set them up (a worker's credential may only read them). Give
// a worker the values its schedulers are given. Zero values mean the
// defaults.
type Streams struct {
	// Replicas of every stream and bucket: 1 for a single server (the
	// default), 3 for a three-node cluster; at most 5.
	Replicas int
	// DuplicateWindow is how long JetStream remembers a trigger's message
	// id (default 2 minutes). A worker remembers the runs it finished for
	// as long, to acknowledge a trigger published again without running
	// it again.
	DuplicateWindow time.Duration
	// LogMaxAge and LogMaxBytes bound the stream of run log lines (default
	// 30 days and 1 GiB; the oldest lines go first).
	LogMaxAge   time.Duration
	LogMaxBytes int64
	// WorkerTTL is the TTL of the workers bucket, where each worker keeps
	// its heartbeat (default 15s); Config.HeartbeatInterval must be
	// shorter.
	WorkerTTL time.Duration
}

// config is s as package stream takes it.
func (s Streams) config() stream.Config {
	return stream.Config{Replicas: s.Replicas, DuplicateWindow: s.DuplicateWindow,
		LogMaxAge: s.LogMaxAge, LogMaxBytes: s.LogMaxBytes, WorkerTTL: s.WorkerTTL}
}
