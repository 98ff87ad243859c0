package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config sizes the streams. Zero values mean the defaults.
type Config struct {
	// Replicas of every stream and bucket: 1 for a single server, 3 for a
	// three-node cluster (recommended in production: JetStream fsyncs
	// periodically, so a replica is what survives a host crash).
	Replicas int
	// DuplicateWindow is how long JetStream remembers a trigger's
	// Nats-Msg-Id. It must cover the longest time between a first publish
	// and a re-publish of the same run: a scheduler dying after publishing
	// but before recording TRIGGERED, plus a lease period for its shard to
	// move. Default 2 minutes; the server keeps every id of the window in
	// memory, so size it to failover time, not to hours.
	DuplicateWindow time.Duration
	// LogMaxAge is how long run log lines are kept (default 30 days).
	LogMaxAge time.Duration
	// LogMaxBytes caps the log stream (default 1 GiB); the oldest lines go first.
	LogMaxBytes int64
	// WorkerTTL is the heartbeat TTL of the workers bucket (default 15 s:
	// three 5-second beats).
	WorkerTTL time.Duration
}

const (
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultLogMaxAge       = 30 * 24 * time.Hour
	DefaultLogMaxBytes     = 1 << 30
	DefaultWorkerTTL       = 15 * time.Second
)

func (c Config) withDefaults() Config {
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.LogMaxAge == 0 {
		c.LogMaxAge = DefaultLogMaxAge
	}
	if c.LogMaxBytes == 0 {
		c.LogMaxBytes = DefaultLogMaxBytes
	}
	if c.WorkerTTL == 0 {
		c.WorkerTTL = DefaultWorkerTTL
	}
	return c
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("stream replicas %d: want 1 to 5", c.Replicas)
	case c.DuplicateWindow < time.Second:
		return fmt.Errorf("duplicate window %s: want at least 1s", c.DuplicateWindow)
	case c.LogMaxAge < time.Minute:
		return fmt.Errorf("log max age %s: want at least 1m", c.LogMaxAge)
	case c.WorkerTTL < time.Second:
		return fmt.Errorf("worker TTL %s: want at least 1s", c.WorkerTTL)
	}
	return nil
}

// Streams returns the stream configurations Provision creates.
func (c Config) Streams() []jetstream.StreamConfig {
	c = c.withDefaults()
	return []jetstream.StreamConfig{{
		Name:        Triggers,
		Description: "jetjob triggers: schedulers publish, workers consume",
		Subjects:    []string{"jetjob.trigger.>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
	}, {
		Name:        Events,
		Description: "jetjob run events: workers publish, schedulers apply",
		Subjects:    []string{"jetjob.event.>"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		Duplicates:  c.DuplicateWindow,
	}, {
		Name:        Logs,
		Description: "jetjob run log lines",
		Subjects:    []string{"jetjob.log.>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		MaxAge:      c.LogMaxAge,
		MaxBytes:    c.LogMaxBytes,
		Discard:     jetstream.DiscardOld,
	}, {
		Name:        Advisories,
		Description: "jetjob: JetStream advisories of triggers whose deliveries ran out",
		Subjects:    []string{MaxDeliveriesSubject},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    c.Replicas,
		MaxAge:      7 * 24 * time.Hour,
	}}
}

// Provision creates or updates jetjob's streams and the workers bucket.
// It is idempotent: every scheduler and worker calls it at start.
func Provision(ctx context.Context, js jetstream.JetStream, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	for _, sc := range c.Streams() {
		// An existing stream is updated only when its settings differ:
		// every process provisions at start, and nats-server 2.15 races
		// (its race detector says so) when one process updates a stream's
		// config while another creates a consumer on it.
		if st, err := js.Stream(ctx, sc.Name); err == nil && !differs(st.CachedInfo().Config, sc) {
			continue
		}
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
	}
	if _, err := Workers(ctx, js, c); err != nil {
		return err
	}
	if _, err := Kills(ctx, js, c); err != nil {
		return err
	}
	if _, err := Locks(ctx, js, c); err != nil {
		return err
	}
	return nil
}

// differs reports whether a stream's config lacks one of the settings
// Provision gives it (the server fills in defaults of its own).
func differs(have, want jetstream.StreamConfig) bool {
	maxBytes := want.MaxBytes
	if maxBytes == 0 {
		maxBytes = -1 // the server's "no limit"
	}
	return have.Description != want.Description || !slices.Equal(have.Subjects, want.Subjects) ||
		have.Retention != want.Retention || have.Storage != want.Storage || have.Replicas != want.Replicas ||
		(want.Duplicates != 0 && have.Duplicates != want.Duplicates) || have.MaxAge != want.MaxAge ||
		have.MaxBytes != maxBytes || have.Discard != want.Discard
}

// LockTTL is how long a job lock (or a waiter's place) outlives its last
// refresh: a dead worker's lock frees within it.
const LockTTL = 6 * time.Second

// Locks returns the job-locks bucket, creating it if needed.
func Locks(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.KeyValue, error) {
	c = c.withDefaults()
	return bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: LocksBucket, Description: "jetjob per-job locks for block strategies", TTL: LockTTL, Replicas: c.Replicas,
	})
}

// KillTTL is how long a kill request is kept: longer than a trigger can
// plausibly wait in the stream for a worker.
const KillTTL = 24 * time.Hour

// Workers returns the workers heartbeat bucket, creating it if needed.
func Workers(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.KeyValue, error) {
	c = c.withDefaults()
	return bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: WorkersBucket, Description: "jetjob worker heartbeats", TTL: c.WorkerTTL, Replicas: c.Replicas,
	})
}

// Kills returns the kill-requests bucket, creating it if needed.
func Kills(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.KeyValue, error) {
	c = c.withDefaults()
	return bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: KillsBucket, Description: "jetjob kill requests, by run id", TTL: KillTTL, Replicas: c.Replicas,
	})
}

// bucket opens a KV bucket, creating it (file storage) if it does not exist.
func bucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("open bucket %s: %w", cfg.Bucket, err)
	}
	cfg.Storage = jetstream.FileStorage
	kv, err = js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("provision bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
