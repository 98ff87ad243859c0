package worker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/stream"
)

// Kills: the API puts a run's id into the KV bucket JETJOB_KILLS. Every
// worker watches the bucket, keeps the requested ids (the watch first
// delivers every existing key), cancels a run it is executing when its id
// arrives, and does not start a run whose id it holds. So a kill reaches a
// run wherever it is, even one still waiting in the stream for a worker.

// killError is the cancellation cause of a killed run.
type killError struct{ reason string }

func (e killError) Error() string { return "killed: " + e.reason }

// watchKills keeps w.kills current until ctx ends, re-watching after
// errors (NATS reconnects are waited out by the watcher itself). It
// closes loaded once the requests that existed at start are known, so that
// Run does not start a run killed while no worker was up.
func (w *Worker) watchKills(ctx context.Context, loaded chan<- struct{}) {
	for ctx.Err() == nil {
		err := w.watchKillsOnce(ctx, loaded)
		loaded = nil // closed already, or never will be: Run waits a bounded time
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("kill-request watch ended; restarting", zap.Error(err))
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (w *Worker) watchKillsOnce(ctx context.Context, loaded chan<- struct{}) error {
	kv, err := stream.Kills(ctx, w.js, w.cfg.Streams)
	if err != nil {
		return err
	}
	watch, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-watch.Updates():
			if !ok {
				return errors.New("watcher closed")
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
			w.kill(id, string(e.Value()), e.Created())
		}
	}
}

// kill records a kill request and cancels the run if it executes here.
// Requests older than the stream's kill TTL are forgotten with it.
func (w *Worker) kill(runID int64, reason string, at time.Time) {
	if reason == "" {
		reason = "kill requested"
	}
	w.mu.Lock()
	w.kills[runID] = at
	for id, t := range w.kills {
		if time.Since(t) > stream.KillTTL {
			delete(w.kills, id)
		}
	}
	r := w.active[runID]
	w.mu.Unlock()
	if r != nil {
		w.log.Info("kill request: cancelling the run", logging.Run(runID), zap.String("reason", reason))
		r.cancel(killError{reason})
	}
}

// killed reports whether a kill of runID was requested.
func (w *Worker) killed(runID int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.kills[runID]
	return ok
}
