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

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/shared/wire"
)

// The heartbeat: the worker's entry in the registry the schedulers keep.
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

// registration is one worker's entry in the workers bucket, kept by its
// heartbeat.
type registration struct {
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

// startHeartbeat begins heartbeating; the returned registration's deregister
// ends it. Nothing here can fail Run: without the bucket the worker still
// runs.
func (w *Worker) startHeartbeat(ctx context.Context) *registration {
	host, _ := os.Hostname()
	key := stream.WorkerKey(w.cfg.Group, w.cfg.ID)
	h := &registration{
		w:   w,
		key: key,
		info: wire.WorkerInfo{
			ID: w.cfg.ID, Group: w.cfg.Group, Host: host, PID: os.Getpid(), Version: buildVersion(),
			Handlers: w.handlerNames(), Capacity: w.cfg.Concurrency, StartedAt: time.Now().UTC(),
			DirectedBatches: true,
		},
		log:   w.log.With(zap.String("registry_key", key)),
		stop:  make(chan struct{}),
		ended: make(chan struct{}),
	}
	slices.Sort(h.info.Handlers)
	go h.loop(context.WithoutCancel(ctx))
	return h
}

// loop opens the bucket (stream.Provision created it in setup), then beats
// until stopped. Every step is bounded by the interval, so a beat never
// delays the next one by more than that.
func (h *registration) loop(ctx context.Context) {
	defer close(h.ended)
	interval := h.w.cfg.HeartbeatInterval
	t := time.NewTicker(interval)
	defer t.Stop()
	checked := false
	for {
		if h.kv == nil {
			h.open(ctx, interval)
		}
		if h.kv != nil {
			if !checked {
				checked = h.checkTTL(ctx, interval)
			}
			h.beat(ctx, interval)
		}
		select {
		case <-h.stop:
			return
		case <-t.C:
		}
	}
}

func (h *registration) open(ctx context.Context, bound time.Duration) {
	octx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	kv, err := stream.Workers(octx, h.w.js, h.w.streams)
	if err != nil {
		h.failed("workers bucket not available; heartbeat retried next beat", err)
		return
	}
	h.kv = kv
}

// checkTTL warns when the bucket, possibly created by another process with
// another TTL, would expire this worker's key between two beats.
func (h *registration) checkTTL(ctx context.Context, bound time.Duration) bool {
	sctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	st, err := h.kv.Status(sctx)
	if err != nil {
		return false
	}
	if ttl := st.TTL(); ttl > 0 && h.w.cfg.HeartbeatInterval >= ttl {
		h.log.Warn("heartbeat interval is not shorter than the workers bucket TTL: this worker will seem to vanish between beats",
			zap.Duration("heartbeat_interval", h.w.cfg.HeartbeatInterval), zap.Duration("bucket_ttl", ttl))
	}
	return true
}

// beat puts the current heartbeat.
func (h *registration) beat(ctx context.Context, bound time.Duration) {
	info := h.info
	info.Handlers = slices.Clone(h.info.Handlers)
	info.Running = h.w.runs.ids()
	info.BeatAt = time.Now().UTC()
	data, err := wire.EncodeWorkerInfo(&info)
	if err != nil {
		// Only a bug can make our own heartbeat invalid.
		h.log.Error("heartbeat not encodable", zap.Error(err))
		return
	}
	pctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if _, err := h.kv.Put(pctx, h.key, data); err != nil {
		h.failed("heartbeat not stored; retried next beat", err)
		return
	}
	if h.failing {
		h.failing = false
		h.log.Info("heartbeat stored again")
	}
}

func (h *registration) failed(msg string, err error) {
	h.failing = true
	h.log.Warn(msg, zap.Error(err))
}

// deregister stops the heartbeat and deletes the key, so that schedulers
// see the worker leave at once instead of after the TTL. It is called once
// the runs have ended; a failure only means the key expires by its TTL.
func (h *registration) deregister(ctx context.Context) {
	h.once.Do(func() {
		close(h.stop)
		<-h.ended // no put may land after the delete
		kv := h.kv
		if kv == nil {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deregisterTimeout)
		defer cancel()
		if err := kv.Delete(dctx, h.key); err != nil {
			h.log.Warn("deregistration failed; the heartbeat expires by the bucket TTL", zap.Error(err))
			return
		}
		h.log.Info("deregistered")
	})
}

// buildVersion is the jetjob build this binary was made from, as the
// registry shows it (see internal/version: the Makefile's stamp, else the
// module version, else "(devel)" and the commit).
func buildVersion() string { return version.Get().Short() }
