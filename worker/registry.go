package worker

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/version"
	"github.com/jetjob/jetjob/shared/wire"
)

// Registry.
//
// While Run runs, the worker puts a wire.WorkerInfo under
// stream.WorkerKey(group, id) in the KV bucket JETJOB_WORKERS every
// HeartbeatInterval: its handlers, capacity and the runs executing now. The
// bucket's TTL (three beats by default) removes the key of a worker that
// died; a graceful stop deletes it after the last run ended. Schedulers
// watch the bucket for routing and the console.
//
// A heartbeat that cannot be stored (NATS down, bucket missing) is logged
// and tried again at the next beat; it never stops the worker, whose runs
// do not depend on the registry.

// DefaultHeartbeatInterval is the default of Config.HeartbeatInterval: a
// third of the default bucket TTL, so one lost beat does not expire a live
// worker.
const DefaultHeartbeatInterval = 5 * time.Second

// deregisterTimeout bounds the deletion of the key at stop.
const deregisterTimeout = 5 * time.Second

// heartbeatDefaults fills and checks HeartbeatInterval against the TTL the
// worker would give the bucket if it creates it.
func (c *Config) heartbeatDefaults() error {
	switch {
	case c.HeartbeatInterval == 0:
		c.HeartbeatInterval = DefaultHeartbeatInterval
	case c.HeartbeatInterval < 0:
		return fmt.Errorf("heartbeat interval %s: must be positive", c.HeartbeatInterval)
	}
	ttl := c.Streams.WorkerTTL
	if ttl == 0 {
		ttl = stream.DefaultWorkerTTL
	}
	if c.HeartbeatInterval >= ttl {
		return fmt.Errorf("heartbeat interval %s: must be shorter than the workers bucket TTL %s (a third of it is best)",
			c.HeartbeatInterval, ttl)
	}
	return nil
}

// registry heartbeats one worker.
type registry struct {
	w     *Worker
	kv    jetstream.KeyValue
	key   string
	info  wire.WorkerInfo // the constant part
	log   *zap.Logger
	stop  chan struct{}
	ended chan struct{}
	once  sync.Once

	failing bool // the last put failed; only the loop goroutine touches it
}

// startRegistry begins heartbeating; the returned registry's deregister ends
// it. Nothing here can fail Run: without the bucket the worker still runs.
func (w *Worker) startRegistry(ctx context.Context) *registry {
	host, _ := os.Hostname()
	key := stream.WorkerKey(w.cfg.Group, w.cfg.ID)
	r := &registry{
		w:   w,
		key: key,
		info: wire.WorkerInfo{
			ID: w.cfg.ID, Group: w.cfg.Group, Host: host, PID: os.Getpid(), Version: buildVersion(),
			Handlers: w.handlerNames(), Capacity: w.cfg.Concurrency, StartedAt: time.Now().UTC(),
		},
		log:   w.log.With(zap.String("registry_key", key)),
		stop:  make(chan struct{}),
		ended: make(chan struct{}),
	}
	slices.Sort(r.info.Handlers)
	go r.loop(context.WithoutCancel(ctx))
	return r
}

// loop opens the bucket (stream.Provision created it in setup), then beats
// until stopped. Every step is bounded by the interval, so a beat never
// delays the next one by more than that.
func (r *registry) loop(ctx context.Context) {
	defer close(r.ended)
	interval := r.w.cfg.HeartbeatInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	checked := false
	for {
		if r.kv == nil {
			r.open(ctx, interval)
		}
		if r.kv != nil {
			if !checked {
				checked = r.checkTTL(ctx, interval)
			}
			r.beat(ctx, interval)
		}
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
	}
}

func (r *registry) open(ctx context.Context, bound time.Duration) {
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	kv, err := stream.Workers(octx, r.w.js, r.w.cfg.Streams)
	if err != nil {
		r.failed("workers bucket not available; heartbeat retried next beat", err)
		return
	}
	r.kv = kv
}

// checkTTL warns when the bucket, possibly created by another process with
// another TTL, would expire this worker's key between two beats.
func (r *registry) checkTTL(ctx context.Context, bound time.Duration) bool {
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	st, err := r.kv.Status(sctx)
	if err != nil {
		return false
	}
	if ttl := st.TTL(); ttl > 0 && r.w.cfg.HeartbeatInterval >= ttl {
		r.log.Warn("heartbeat interval is not shorter than the workers bucket TTL: this worker will seem to vanish between beats",
			zap.Duration("heartbeat_interval", r.w.cfg.HeartbeatInterval), zap.Duration("bucket_ttl", ttl))
	}
	return true
}

// beat puts the current heartbeat.
func (r *registry) beat(ctx context.Context, bound time.Duration) {
	info := r.info
	info.Handlers = slices.Clone(r.info.Handlers)
	info.Running = r.w.runningIDs()
	info.BeatAt = time.Now().UTC()
	data, err := wire.EncodeWorkerInfo(&info)
	if err != nil {
		// Only a bug can make our own heartbeat invalid.
		r.log.Error("heartbeat not encodable", zap.Error(err))
		return
	}
	pctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if _, err := r.kv.Put(pctx, r.key, data); err != nil {
		r.failed("heartbeat not stored; retried next beat", err)
		return
	}
	if r.failing {
		r.failing = false
		r.log.Info("heartbeat stored again")
	}
}

func (r *registry) failed(msg string, err error) {
	r.failing = true
	r.log.Warn(msg, zap.Error(err))
}

// deregister stops the heartbeat and deletes the key, so that schedulers
// see the worker leave at once instead of after the TTL. It is called once
// the runs have ended; a failure only means the key expires by its TTL.
func (r *registry) deregister(ctx context.Context) {
	r.once.Do(func() {
		close(r.stop)
		<-r.ended // no put may land after the delete
		kv := r.kv
		if kv == nil {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deregisterTimeout)
		defer cancel()
		if err := kv.Delete(dctx, r.key); err != nil {
			r.log.Warn("deregistration failed; the heartbeat expires by the bucket TTL", zap.Error(err))
			return
		}
		r.log.Info("deregistered")
	})
}

// runningIDs returns the ids of the runs executing here, sorted.
func (w *Worker) runningIDs() []int64 {
	w.mu.Lock()
	ids := make([]int64, 0, len(w.active))
	for id := range w.active {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	slices.Sort(ids)
	return ids
}

// buildVersion is the jetjob build this binary was made from, as the
// registry shows it (see shared/version: the Makefile's stamp, else the
// module version, else "(devel)" and the commit).
func buildVersion() string { return version.Get().Short() }
