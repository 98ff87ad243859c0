package stream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/wire"
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
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.DuplicateWindow = cmp.Or(c.DuplicateWindow, DefaultDuplicateWindow)
	c.LogMaxAge = cmp.Or(c.LogMaxAge, DefaultLogMaxAge)
	c.LogMaxBytes = cmp.Or(c.LogMaxBytes, DefaultLogMaxBytes)
	c.WorkerTTL = cmp.Or(c.WorkerTTL, DefaultWorkerTTL)
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

// ProvisionOption changes what Provision does.
type ProvisionOption func(*provisionOptions)

type provisionOptions struct {
	leaveExisting bool
	log           *zap.Logger
}

// LeaveExisting makes Provision create only the streams that are missing
// and leave existing ones as they are, logging on log (nil: no log) the
// streams whose settings differ from c. Workers provision this way: the
// schedulers own the streams' settings, so a least-privilege worker
// credential needs only to read stream info (see WorkerPermissions), and
// workers and schedulers configured differently no longer rewrite each
// other's settings at every start. A missing stream is still created, so
// that a worker started before any scheduler works where it may; where its
// credential may not, the error says so.
func LeaveExisting(log *zap.Logger) ProvisionOption {
	return func(o *provisionOptions) { o.leaveExisting, o.log = true, log }
}

// Provision creates or updates jetjob's streams and buckets (buckets are
// only created, never updated). It is idempotent: every scheduler and
// worker calls it at start.
func Provision(ctx context.Context, js jetstream.JetStream, c Config, opts ...ProvisionOption) error {
	if err := c.Validate(); err != nil {
		return err
	}
	var o provisionOptions
	for _, opt := range opts {
		opt(&o)
	}
	for _, sc := range c.Streams() {
		// An existing stream is updated only when its settings differ:
		// every process provisions at start, and nats-server 2.15 races
		// (its race detector says so) when one process updates a stream's
		// config while another creates a consumer on it.
		st, err := js.Stream(ctx, sc.Name)
		if err == nil && !differs(st.CachedInfo().Config, sc) {
			continue
		}
		if err == nil && o.leaveExisting {
			if o.log != nil {
				o.log.Warn("stream settings differ from this process's; left as they are (schedulers provision the streams)",
					zap.String("stream", sc.Name))
			}
			continue
		}
		if o.leaveExisting && !errors.Is(err, jetstream.ErrStreamNotFound) {
			// Unknown whether it exists: never guess that it must be created.
			return fmt.Errorf("provision stream %s: %w", sc.Name, err)
		}
		if o.leaveExisting {
			_, err = js.CreateStream(ctx, sc)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				continue // another process created it meanwhile
			}
		} else {
			_, err = js.CreateOrUpdateStream(ctx, sc)
		}
		if err != nil {
			return fmt.Errorf("provision stream %s: %w", sc.Name, refused(js, err))
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
	if _, err := Rates(ctx, js, c); err != nil {
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

// RateTTL is how long a rate limit's state outlives its last write: longer
// than the longest period (wire.MaxRatePeriod), since a rate key that
// expired before its theoretical arrival time would let a new burst
// through early. A state whose time has passed is the same as none, so
// the bucket holds at most the keys written in the last RateTTL.
const RateTTL = wire.MaxRatePeriod + time.Hour

// Rates returns the rate limits' bucket, creating it if needed. Workers
// read and write it through its stream's subjects (worker/internal/joblock);
// Provision creates it.
func Rates(ctx context.Context, js jetstream.JetStream, c Config) (jetstream.KeyValue, error) {
	c = c.withDefaults()
	return bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: RatesBucket, Description: "jetjob rate limits' state (flow control)", TTL: RateTTL, Replicas: c.Replicas,
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
		return nil, fmt.Errorf("provision bucket %s: %w", cfg.Bucket, refused(js, err))
	}
	return kv, nil
}

// refused explains a failed JetStream API request that the server refused
// for lack of permission. The server does not answer such a request: it
// sends the connection an asynchronous permissions violation, and the
// request itself only times out. So the connection's last error is
// consulted, and a violation of a stream request found there is joined to err, which reads as
// "...: context deadline exceeded; nats: permissions violation: ...
// Publish to "$JS.API.STREAM.CREATE.JETJOB_TRIGGERS"": the operator
// learns that the credential lacks the right (a worker's should: start a
// scheduler first, it creates the streams), not that NATS is slow.
func refused(js jetstream.JetStream, err error) error {
	if last := js.Conn().LastError(); errors.Is(last, nats.ErrPermissionViolation) &&
		strings.Contains(last.Error(), "$JS.API.STREAM.") && !errors.Is(err, last) {
		return fmt.Errorf("%w; %w (this NATS user may not create or update jetjob's streams: schedulers provision them)", err, last)
	}
	return err
}
