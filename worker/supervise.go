package worker

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetjob/jetjob/internal/supervise"
)

// The worker's background loops run under a supervisor (package
// internal/supervise), like the scheduler's components. Each loop retries
// its own errors (a fetch, a watch, a publish), so a loop that returns
// while the worker runs, or panics, is a bug or a connection gone for
// good: the kill-request watch, which holds nothing, is restarted; the
// others (the fetch lanes, the event publisher, the questions to the
// schedulers) own channels and state that a second Run cannot reuse, so
// their failure stops the worker cleanly, and Run returns an error naming
// the loop, for its orchestrator to start a fresh process. Ready reports
// what is down meanwhile.

// supervision is the worker's supervisor and why it stopped the worker.
type supervision struct {
	super *supervise.Supervisor
	// stop, set by Run before any loop starts, ends Run's context: the
	// stages stop (lifecycle.go).
	stop context.CancelCauseFunc
	// failure is the first failure that stopped the worker.
	failure error
	// fault, set by tests, fails a loop's start when it returns an error
	// (the loop's Run is not called then: fault only loops whose end
	// nothing else waits for, the kill watch and the fetch lanes).
	fault func(loop string) error
}

// newSupervision builds w's supervisor (tests: with their backoffs and
// signals); its restarts counter joins w's metrics (newMetrics).
func newSupervision(w *Worker, cfg supervise.Config, signals supervise.TestSignals) (*supervise.Supervisor, error) {
	// A name of its own: jetjob-scheduler dev registers the worker's
	// metrics beside the scheduler's, which has jetjob_component_restarts_total.
	restarts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetjob_worker_component_restarts_total", ConstLabels: prometheus.Labels{"group": w.cfg.Group},
		Help: "Restarts of a loop of this worker that failed (returned an error, or returned while it should run), by component.",
	}, []string{"component"})
	return supervise.New(cfg, supervise.Deps{Log: w.log, Stop: w.failed, Restarts: restarts, TestSignals: signals})
}

// supervised runs a loop of Run under the supervisor until ctx ends.
func (w *Worker) supervised(ctx context.Context, name string, onFailure supervise.Policy, run func(context.Context) error) error {
	if fault := w.sup.fault; fault != nil {
		inner := run
		run = func(ctx context.Context) error {
			if err := fault(name); err != nil {
				return err
			}
			return inner(ctx)
		}
	}
	return w.sup.super.Run(ctx, supervise.Component{Name: name, Run: run, OnFailure: onFailure})
}

// failed stops the worker because a loop failed for good (supervise.Stop).
func (w *Worker) failed(err error) {
	w.mu.Lock()
	if w.sup.failure == nil {
		w.sup.failure = err
	}
	stop := w.sup.stop
	w.mu.Unlock()
	if stop != nil {
		stop(err)
	}
}

// failure is what stopped the worker, nil if nothing failed.
func (w *Worker) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sup.failure
}

// Ready reports whether every loop of the worker runs: nil, or an error
// whose message names those that are down (failed, waiting for their
// restart, or stopping the worker). The drop-in worker's /readyz answers
// 503 with it.
func (w *Worker) Ready() error {
	// Within this module, errors.As to a *supervise.DownError lists them.
	return w.sup.super.Err()
}
