// Package registry keeps the scheduler's view of the live workers: it
// watches the KV bucket JETJOB_WORKERS, where every worker puts a heartbeat
// (wire.WorkerInfo) every few seconds and deletes it when it stops.
//
// A worker that dies does not delete its key; the bucket's TTL removes it,
// but a key watcher is not told about expiry. So a worker counts as live
// while its last heartbeat arrived here less than TTL ago (this process's
// clock, so skew between hosts does not matter).
package registry

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/wire"
)

// Registry is safe for concurrent use.
type Registry struct {
	js  jetstream.JetStream
	cfg stream.Config
	ttl time.Duration
	log *zap.Logger
	now func() time.Time

	mu      sync.Mutex
	workers map[string]entry // by KV key
	synced  bool             // the bucket's content at the first watch is in
}

type entry struct {
	info wire.WorkerInfo
	seen time.Time
}

// New returns a registry; Run keeps it current.
func New(js jetstream.JetStream, cfg stream.Config, log *zap.Logger) *Registry {
	ttl := cfg.WorkerTTL
	if ttl == 0 {
		ttl = stream.DefaultWorkerTTL
	}
	return &Registry{js: js, cfg: cfg, ttl: ttl, log: log.Named("registry"), now: time.Now, workers: map[string]entry{}}
}

// Run watches the bucket until ctx ends, re-watching after errors.
func (r *Registry) Run(ctx context.Context) error {
	_ = backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: time.Second, Max: time.Second},
		OnRetry: func(_ int, _ time.Duration, err error) {
			r.log.Warn("worker registry watch ended; restarting", zap.Error(err))
		},
	}, r.watch) // watch returns only on an error: this ends with ctx
	return nil
}

func (r *Registry) watch(ctx context.Context) error {
	kv, err := stream.Workers(ctx, r.js, r.cfg)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", stream.WorkersBucket, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("watcher closed")
			}
			if e == nil { // initial values delivered
				r.mu.Lock()
				r.synced = true
				r.mu.Unlock()
				continue
			}
			r.apply(e)
		}
	}
}

func (r *Registry) apply(e jetstream.KeyValueEntry) { r.heard(e.Key(), e.Operation(), e.Value()) }

// heard records what the bucket said under key: a worker's heartbeat
// (put), or that its key was deleted or purged.
func (r *Registry) heard(key string, op jetstream.KeyValueOp, value []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op != jetstream.KeyValuePut {
		delete(r.workers, key)
		return
	}
	info, err := wire.DecodeWorkerInfo(value)
	if err != nil {
		r.log.Warn("ignoring a malformed worker heartbeat", zap.String("key", key), zap.Error(err))
		return
	}
	if key != stream.WorkerKey(info.Group, info.ID) {
		// The key is what NATS permissions bind; the value is anyone's.
		foreign.Refused(foreign.Heartbeat)
		r.log.Warn("ignoring a heartbeat under another group's or worker's key", zap.String("key", key),
			zap.String("group", info.Group), zap.String("worker_id", info.ID))
		return
	}
	r.workers[key] = entry{info: *info, seen: r.now()}
}

// Synced reports whether the registry has read the bucket once: before,
// an absent worker may just not be known yet, and nobody may be judged dead.
func (r *Registry) Synced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.synced
}

// Live returns the live workers of group ("" for all), by group and id.
func (r *Registry) Live(group string) []wire.WorkerInfo {
	cutoff := r.now().Add(-r.ttl)
	r.mu.Lock()
	var out []wire.WorkerInfo
	for k, e := range r.workers {
		if e.seen.Before(cutoff) {
			delete(r.workers, k)
			continue
		}
		if group == "" || e.info.Group == group {
			out = append(out, e.info)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].ID < out[j].ID
	})
	return out
}
