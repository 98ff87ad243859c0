// Package kills is a worker's view of the kill requests in the KV bucket
// JETJOB_KILLS (docs/protocol.md, "Kills"): the API puts a run's id there,
// and so does a run of block strategy cover_early for the run it covers
// (Request). Every worker watches the whole bucket (Watch), keeps the
// requested ids (the watch first delivers every existing key), has the
// run cancelled if it executes here when its id arrives (Config.OnKill),
// and does not start a run whose id it holds (Killed). So a kill reaches a
// run wherever it is, even one still waiting in the stream for a worker.
package kills

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
)

// Error is the cancellation cause of a killed run.
type Error struct{ Reason string }

func (e Error) Error() string { return "killed: " + e.Reason }

// Config is what a Set needs.
type Config struct {
	// JS opens the bucket.
	JS jetstream.JetStream
	// Streams creates the bucket if it is missing.
	Streams stream.Config
	// OnKill is told of each kill request as it arrives, to cancel the run
	// if it executes here (with Error{reason} as the cause).
	OnKill func(run int64, reason string)
	// Logger; default none.
	Logger *zap.Logger
}

// Set holds the kill requests a worker has seen.
type Set struct {
	cfg Config
	mu  sync.Mutex
	ids map[int64]time.Time // kill requests seen, by run id, and when made
}

// New returns an empty Set; Watch fills it.
func New(cfg Config) *Set {
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.OnKill == nil {
		cfg.OnKill = func(int64, string) {}
	}
	return &Set{cfg: cfg, ids: make(map[int64]time.Time)}
}

// rewatchDelay paces the watch's restarts after errors.
const rewatchDelay = time.Second

// Watch keeps the Set current until ctx ends, re-watching after errors
// (NATS reconnects are waited out by the watcher itself). It closes loaded
// once the requests that existed at start are known, so that the worker
// does not start a run killed while no worker was up; after an error
// before that, never (the worker waits a bounded time).
func (s *Set) Watch(ctx context.Context, loaded chan<- struct{}) {
	for ctx.Err() == nil {
		err := s.watchOnce(ctx, loaded)
		loaded = nil // closed already, or never will be
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn("kill-request watch ended; restarting", zap.Error(err))
		t := time.NewTimer(rewatchDelay)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (s *Set) watchOnce(ctx context.Context, loaded chan<- struct{}) error {
	kv, err := stream.Kills(ctx, s.cfg.JS, s.cfg.Streams)
	if err != nil {
		return fmt.Errorf("open kill requests: %w", err)
	}
	watch, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch kill requests: %w", err)
	}
	defer func() { _ = watch.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-watch.Updates():
			if !ok {
				return errors.New("kill-request watcher closed")
			}
			if e == nil {
				if loaded != nil {
					close(loaded)
					loaded = nil
				}
				continue
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue
			}
			id, err := strconv.ParseInt(e.Key(), 10, 64)
			if err != nil || id <= 0 {
				continue
			}
			s.add(id, string(e.Value()), e.Created())
		}
	}
}

// add records a kill request made at and passes it on to OnKill. Requests
// older than the bucket's TTL are forgotten with it.
func (s *Set) add(run int64, reason string, at time.Time) {
	if reason == "" {
		reason = "kill requested"
	}
	s.mu.Lock()
	s.ids[run] = at
	for id, t := range s.ids {
		if time.Since(t) > stream.KillTTL {
			delete(s.ids, id)
		}
	}
	s.mu.Unlock()
	// After the record: a run registered from now on finds it (Killed)
	// before it starts; one registered before is OnKill's to find.
	s.cfg.OnKill(run, reason)
}

// Killed reports whether a kill of run was requested.
func (s *Set) Killed(run int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ids[run]
	return ok
}

// Request puts a kill request for run with reason into the bucket.
func (s *Set) Request(ctx context.Context, run int64, reason string) error {
	kv, err := stream.Kills(ctx, s.cfg.JS, s.cfg.Streams)
	if err != nil {
		return fmt.Errorf("open kill requests: %w", err)
	}
	if _, err := kv.Put(ctx, stream.KillKey(run), []byte(reason)); err != nil {
		return fmt.Errorf("request kill of run %d: %w", run, err)
	}
	return nil
}
