package scheduler

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/backfill"
	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/scheduler/internal/console"
	"github.com/jetjob/jetjob/scheduler/internal/dispatch"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/httplimit"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/lost"
	"github.com/jetjob/jetjob/scheduler/internal/mapout"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/scheduler/internal/registry"
	"github.com/jetjob/jetjob/scheduler/internal/reroute"
	"github.com/jetjob/jetjob/scheduler/internal/results"
	"github.com/jetjob/jetjob/scheduler/internal/retention"
	"github.com/jetjob/jetjob/scheduler/internal/route"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/supersede"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/scheduler/internal/wheel"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// wiring is one Run's components, built by wire. Its methods are the
// callbacks between them: each component gets, at construction, the
// functions it calls, and nothing is set on a component afterwards.
type wiring struct {
	// store answers the workers' requests for secrets (serveSecrets).
	store     *store.Store
	s         *Scheduler
	js        jetstream.JetStream
	leases    *lease.Manager
	registry  *registry.Registry
	dispatch  *dispatch.Dispatcher
	planner   *planner.Planner
	reroute   *reroute.Rerouter
	results   *results.Applier
	retention *retention.Maintainer
	backlog   *backlog.Sampler
	alarms    *alarm.Sender
	alerts    *alerts.Engine
	lost      *lost.Monitor
	backfill  *backfill.Runner

	// acquired carries newly acquired shards from the lease loop to
	// recovery, which runs apart so that it never delays renewals.
	acquired chan lease.Lease
	// stopping is closed when Run's context ends: the lease loop then no
	// longer waits for recovery to take a shard (it stops before the
	// leases, which release the shard anyway).
	stopping <-chan struct{}
	// shards is the cluster's shard count.
	shards int
}

// connect waits for PostgreSQL and NATS: it opens the store (creating the
// cluster's shards) and provisions the streams, retrying until they answer.
// st is nil if ctx ended first.
func (s *Scheduler) connect(ctx context.Context) (st *store.Store, js jetstream.JetStream, err error) {
	st, err = retry(ctx, s.log, "open store", func() { errcount.Postgres(errcount.OpenStore) }, func() (*store.Store, error) {
		return store.Open(ctx, s.deps.Pool, s.cfg.ShardCount, store.WithMaxChainRuns(s.cfg.MaxChainRuns),
			store.WithWorkflowsEnded(s.workflowsEnded), store.WithScriptVersions(s.cfg.ScriptVersions),
			store.WithSecrets(s.cfg.Secrets))
	})
	if err != nil {
		return nil, nil, nil
	}
	if s.cfg.ShardCount != 0 && s.cfg.ShardCount != st.ShardCount() {
		s.log.Warn("shard count is fixed at cluster creation; ignoring the requested one",
			zap.Int("cluster", st.ShardCount()), zap.Int("requested", s.cfg.ShardCount))
	}
	js, err = jetstream.New(s.deps.NATS, jetstream.WithPublishAsyncTimeout(5*time.Second),
		jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	if _, err := retry(ctx, s.log, "provision streams", func() { errcount.NATS(errcount.Provision) }, func() (struct{}, error) {
		return struct{}{}, stream.Provision(ctx, js, s.cfg.Streams)
	}); err != nil {
		return nil, nil, nil
	}
	return st, js, nil
}

// wire builds the components of one Run, each from its Config section and
// its Deps: leases decide which shards this instance plans; the planner
// feeds the wheel; the wheel feeds dispatch; dispatch publishes only under
// a valid lease; results applies what workers report and feeds the wheel
// the runs it spawns. It also registers their metrics and installs the
// HTTP handler. cancel ends the Run (Crash).
func (s *Scheduler) wire(ctx context.Context, st *store.Store, js jetstream.JetStream, cancel context.CancelFunc) (*wiring, error) {
	w := &wiring{s: s, js: js, store: st, acquired: make(chan lease.Lease, st.ShardCount()), stopping: ctx.Done(), shards: st.ShardCount()}
	var err error
	if w.leases, err = lease.New(s.cfg.Lease, lease.Deps{Pool: s.deps.Pool, Log: s.log,
		Acquired: w.leasesAcquired, Lost: w.leasesLost, TestSignals: s.testSignals.Lease}); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.leases, s.cancel = w.leases, cancel
	s.mu.Unlock()
	w.registry = registry.New(js, s.cfg.Streams, s.log)
	picker := route.New(w.registry.Live, s.deps.NATS, s.log)
	if w.dispatch, err = dispatch.New(s.cfg.Dispatch, dispatch.Deps{JS: js, Pool: s.deps.Pool, Log: s.log,
		Route: picker, Owner: w.leases.ID(), Valid: w.leases.Valid, Trace: s.tracer, Observe: s.metrics.observeFire,
		Signer: s.deps.TriggerSigner, StartWorkflow: w.startWorkflows, Paused: s.pausedGroups, TestSignals: s.testSignals.Dispatch}); err != nil {
		return nil, err
	}
	s.wheel = wheel.New(w.dispatch.Fire, w.dispatch.Connected)
	// The paused groups are read before anything publishes; from then on
	// the job-change listener keeps them (jobwatch.go). Should this read
	// fail, recovery and the sweep still leave waiting runs out, and the
	// listener reads them as it connects.
	if p, err := runs.LoadPaused(ctx, s.deps.Pool); err != nil {
		s.log.Warn("reading the paused groups failed; the job-change listener reads them", zap.Error(err))
	} else {
		s.paused.Store(&p)
	}
	if w.planner, err = planner.New(s.cfg.Planner, planner.Deps{Pool: s.deps.Pool, Log: s.log, Owner: w.leases.ID(),
		Leases: w.leases.Held, Out: w.planned, Planned: s.metrics.lag.planned, Trace: s.tracer, BatchTarget: picker.BatchTarget,
		Pressure: w.pressure, Held: s.metrics.observeHeld, TestSignals: s.testSignals.Planner}); err != nil {
		return nil, err
	}
	s.metrics.register(s.reg, s.wheel.Len, w.leases.Held)
	s.metrics.registerDispatchLag(s.reg, s.wheel.Lag)
	w.reroute = reroute.New(reroute.Deps{JS: js, Live: picker.Live, Synced: w.registry.Synced, Log: s.log,
		Moved: s.metrics.observeRerouted})
	if w.results, err = results.New(s.cfg.Results, results.Deps{JS: js, Pool: s.deps.Pool, Log: s.log, Trace: s.tracer,
		Applied: w.applied, WorkflowsEnded: s.workflowsEnded, Spawned: w.spawned, Fire: w.fireNodes, Active: w.holdsShardZero, TestSignals: s.testSignals.Results}); err != nil {
		return nil, err
	}
	// Partitions, the daily rollup and retention: every scheduler runs
	// the loop, one at a time does a round (see package retention).
	if w.retention, err = retention.New(s.cfg.Retention, retention.Deps{Pool: s.deps.Pool, Log: s.log}); err != nil {
		return nil, err
	}
	s.reg.MustRegister(w.retention.Collectors()...)
	// Every scheduler samples the backlog: it only reads consumer state.
	if w.backlog, err = backlog.New(s.cfg.Backlog, backlog.Deps{JS: js, Log: s.log}); err != nil {
		return nil, err
	}
	s.reg.MustRegister(w.backlog.Collector())
	egressPolicy, err := s.egressPolicy()
	if err != nil {
		return nil, err
	}
	if w.alarms, err = alarm.New(s.cfg.Alarm, alarm.Deps{Log: s.log, Egress: egressPolicy}); err != nil {
		return nil, err
	}
	if w.alerts, err = alerts.New(s.cfg.Alerts, alerts.Deps{Pool: s.deps.Pool, Log: s.log, Sender: w.alarms}); err != nil {
		return nil, err
	}
	spentKeys, err := s.spentTriggerKeys()
	if err != nil {
		return nil, err
	}
	w.lost = lost.New(js, spentKeys, s.log)
	s.reg.MustRegister(w.alarms.Collector(), w.lost.Collector())
	if w.backfill, err = backfill.New(s.cfg.Backfill, backfill.Deps{Store: st, Fire: w.fire, Log: s.log}); err != nil {
		return nil, err
	}

	a, err := api.New(api.Config{
		Token: s.cfg.APIToken, InsecureNoAuth: s.cfg.InsecureNoAuth, InsecureCookies: s.cfg.InsecureCookies,
		Gatherer: s.reg, MetricsToken: s.cfg.MetricsToken,
		Ready: s.readyErr, Dependencies: s.dependencies, SchedulerID: w.leases.ID(), Fire: w.fireOne, Logs: runlog.New(js),
		Workers: w.registry.Live, Backlog: w.backlog.Latest, Kill: w.kill, Locks: w.lockValue, Egress: egressPolicy,
		SendTest: w.alarms.SendTest, SSO: s.deps.SSO,
	}, st, s.log)
	if err != nil {
		return nil, err
	}
	s.reg.MustRegister(a.Collector())
	con, err := console.New(console.Config{API: a, Log: s.log, InsecureCookies: s.cfg.InsecureCookies})
	if err != nil {
		return nil, err
	}
	// Slow bodies and anonymous floods are bounded in front of both the
	// API and the console (whose forms are read before their session is
	// checked); the probes are always served.
	limits := s.cfg.HTTP
	limits.AlwaysServe = []string{"/healthz", "/readyz"}
	lim := httplimit.New(limits, console.Split(a, con), a.Authenticated)
	s.reg.MustRegister(lim.Collector())
	var h http.Handler = lim
	s.handler.Store(&h)
	return w, nil
}

// leasesAcquired queues newly acquired shards for recovery.
func (w *wiring) leasesAcquired(ls []lease.Lease) {
	w.s.metrics.leaseChanges.WithLabelValues("acquired").Add(float64(len(ls)))
	for _, l := range ls {
		select {
		case w.acquired <- l:
		case <-w.stopping: // released with the rest
		}
	}
}

// leasesLost drops from the wheel the planned runs of lost shards: their
// new owner recovers them. Runs without an epoch (manual, retries,
// children) belong to no lease and stay.
func (w *wiring) leasesLost(shards []int, _ string) {
	w.s.metrics.leaseChanges.WithLabelValues("lost").Add(float64(len(shards)))
	lost := make(map[int]bool, len(shards))
	for _, sh := range shards {
		lost[sh] = true
	}
	w.s.wheel.Remove(func(r *runs.Planned) bool { return r.Epoch != 0 && lost[r.Shard] })
}

// pressure is how far the stages after planning are behind: dispatch, by
// the wheel's oldest due run not yet published; the events applier and
// each worker group, from the last backlog sample, by the oldest event not
// yet applied (backlog.Events.Lag) and by the group's oldest trigger no
// worker took (planner/admit.go). While NATS is disconnected dispatch is
// not behind but stopped, and planning goes on: the wheel holds what falls
// due and hands it over in one batch when NATS is back, so that dispatch's
// misfire policy sees all of a job's missed fires at once (fire_once runs
// one of them); planning held back meanwhile would leave the rest to a
// catch-up of its own, a second run of the same outage. For the same
// reason a group without live workers is not behind but away, and its
// jobs are planned as before: its triggers wait in the stream, and when a
// worker comes back fire_once runs the newest of them. A backlog sample
// older than three intervals (sampling fails) says nothing.
func (w *wiring) pressure(context.Context) planner.Pressure {
	var p planner.Pressure
	if w.s.deps.NATS.IsConnected() {
		p.Dispatch = w.s.wheel.Lag()
	}
	snap := w.backlog.Latest()
	if !snap.At.IsZero() && time.Since(snap.At) <= 3*w.backlog.Interval() {
		p.Results = snap.Events.Lag()
		var live map[string]bool // groups with a live worker, looked up once
		for _, g := range snap.Groups {
			if g.OldestPending <= 0 {
				continue
			}
			if live == nil {
				live = map[string]bool{}
				for _, wi := range w.registry.Live("") {
					live[wi.Group] = true
				}
			}
			if live[g.Group] {
				if p.Groups == nil {
					p.Groups = map[string]time.Duration{}
				}
				p.Groups[g.Group] = g.OldestPending
			}
		}
	}
	return p
}

// planned hands the planner's runs to the wheel.
func (w *wiring) planned(runs []runs.Planned) {
	w.s.metrics.planned.Add(float64(len(runs)))
	w.s.wheel.Add(runs...)
}

// applied records a committed batch of results in the metrics, and tells
// dispatch which of its held TRIGGERED writes the batch made redundant.
func (w *wiring) applied(cs []results.Change) {
	w.s.metrics.observeApplied(cs)
	var ids []int64
	for _, c := range cs {
		if c.Triggered {
			ids = append(ids, c.RunID)
		}
	}
	if len(ids) == 0 {
		return
	}
	w.dispatch.Recorded(ids)
	if len(w.leases.Held()) == w.shards {
		return // every run was published here: nobody else holds a mark
	}
	// The other schedulers published some of these runs: tell them too.
	data, err := wire.EncodeControl(&wire.RecordedNotice{Scheduler: w.leases.ID(), Runs: ids})
	if err == nil {
		err = w.s.deps.NATS.Publish(stream.Recorded, data)
	}
	if err != nil {
		w.s.log.Debug("recorded notice not sent; other schedulers write TRIGGERED for those runs", zap.Error(err))
	}
}

// hearRecorded passes the other schedulers' recorded notices to dispatch
// until ctx ends. A notice that does not decode is dropped, with a log
// line: it is only ever an optimisation.
func (w *wiring) hearRecorded(ctx context.Context) error {
	notices := make(chan *nats.Msg, 64)
	sub, err := w.s.deps.NATS.ChanSubscribe(stream.Recorded, notices)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", stream.Recorded, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	self := w.leases.ID()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-notices:
			var n wire.RecordedNotice
			if err := wire.DecodeControl(m.Data, &n); err != nil {
				w.s.log.Warn("dropping a malformed recorded notice", zap.String("subject", m.Subject), zap.Error(err))
				continue
			}
			if n.Scheduler != self {
				w.dispatch.Recorded(n.Runs)
			}
		}
	}
}

// spawned hands retries and child runs to the wheel: this scheduler fires
// them at their time (if it dies first, the shard owner's sweep does).
func (w *wiring) spawned(ctx context.Context, ids []int64) {
	if len(ids) == 0 {
		return
	}
	runs, err := w.planner.Load(ctx, ids)
	if err != nil {
		w.s.log.Warn("loading new retry/child runs failed; the shard owners' sweep fires them", zap.Error(err))
		return
	}
	w.s.metrics.planned.Add(float64(len(runs)))
	w.s.wheel.Add(runs...)
}

// fireNodes hands workflow node runs, created due now, to the wheel as
// their transaction returned them: dispatch publishes them at once, with
// nothing read back (if this process dies first, the shard owners' sweep
// fires them).
func (w *wiring) fireNodes(_ context.Context, rs []runs.Planned) {
	if len(rs) == 0 {
		return
	}
	w.s.metrics.planned.Add(float64(len(rs)))
	w.s.wheel.Add(rs...)
}

// startWorkflows starts workflows' fires (dispatch hands them over
// instead of publishing them, every fire of a Fire call at once), fires
// the node runs that start, and asks the workers to stop the node runs of
// runs they covered (overlap cover_early). They start in one transaction;
// if it fails, each is tried in one of its own, so that a fire that
// cannot start holds up no other. A fire that fails to start stays
// SCHEDULED, and recovery or the sweep hands it over again.
func (w *wiring) startWorkflows(ctx context.Context, ps []runs.Planned) {
	_, done, err := wfengine.StartAll(ctx, w.s.deps.Pool, w.leases.ID(), ps, w.s.cfg.MaxChainRuns)
	if err != nil && len(ps) > 1 {
		if ctx.Err() != nil {
			return
		}
		w.s.log.Info("starting workflow runs together failed; starting them one by one", zap.Int("fires", len(ps)), zap.Error(err))
		for i := range ps {
			w.startWorkflows(ctx, ps[i:i+1])
		}
		return
	}
	if err != nil {
		w.s.log.Warn("workflow run not started; retried when its run is handed over again", logging.Run(ps[0].RunID), logging.Job(ps[0].JobID), zap.Error(err))
		return
	}
	w.s.log.Debug("workflow runs started", zap.Int("fires", len(ps)), zap.Int("node_runs", len(done.Fire)))
	w.s.workflowsEnded(done.Ended)
	w.fireNodes(ctx, done.Fire)
	w.killAll(ctx, done.Kill, "workflow run covered by a newer run (overlap cover_early)")
}

// workflowsEnded reports workflow runs that ended, after the commit that
// ended them (each end once): jetjob_workflow_runs_total counts them and
// the tracer records each one's span, the root of its trace.
func (s *Scheduler) workflowsEnded(ended []wfengine.Ended) {
	if len(ended) == 0 {
		return
	}
	statuses := make([]string, len(ended))
	for i, e := range ended {
		statuses[i] = e.Status
	}
	s.metrics.observeWorkflowsEnded(statuses)
	if s.tracer != nil {
		ws := make([]spans.WorkflowEnded, len(ended))
		for i, e := range ended {
			ws[i] = spans.WorkflowEnded(e)
		}
		s.tracer.WorkflowsEnded(ws)
	}
}

// killAll sends the kills of runs, logging those it could not send.
func (w *wiring) killAll(ctx context.Context, ids []int64, reason string) {
	for _, id := range ids {
		if err := w.kill(ctx, id, reason); err != nil {
			w.s.log.Warn("kill request not sent", logging.Run(id), zap.Error(err))
		}
	}
}

// timeOutWorkflows ends the workflow runs past their timeout, every
// second, until ctx ends: each scheduler runs it, and the row locks
// of each run let one of them do each.
func (w *wiring) timeOutWorkflows(ctx context.Context) error {
	return supervise.Every(ctx, time.Second, func(ctx context.Context) {
		done, err := wfengine.TimeOut(ctx, w.s.deps.Pool, 100, w.s.cfg.MaxChainRuns)
		if err != nil && ctx.Err() == nil {
			w.s.log.Warn("timing out workflow runs", zap.Error(err))
		}
		w.s.workflowsEnded(done.Ended)
		w.fireNodes(ctx, done.Fire)
		w.killAll(ctx, done.Kill, "workflow run timed out")
	})
}

// fire hands backfilled runs to the wheel.
func (w *wiring) fire(runs []runs.Planned) { w.s.wheel.Add(runs...) }

// fireOne hands a manual run (the API's trigger) to the wheel.
func (w *wiring) fireOne(r runs.Planned) { w.s.wheel.Add(r) }

// kill asks the workers to stop a run, through the kills bucket.
func (w *wiring) kill(ctx context.Context, runID int64, reason string) error {
	kv, err := stream.Kills(ctx, w.js, w.s.cfg.Streams)
	if err != nil {
		return err
	}
	_, err = kv.Put(ctx, stream.KillKey(runID), []byte(reason))
	return err
}

// lockValue reads a key of JETJOB_LOCKS for a group's queue view: nil
// for a key that does not exist (nobody holds or waits).
func (w *wiring) lockValue(ctx context.Context, key string) ([]byte, error) {
	return stream.ReadFlowKey(ctx, w.js, w.s.cfg.Streams, key)
}

// recoverShards recovers the shards leasesAcquired queues.
func (w *wiring) recoverShards(ctx context.Context) error {
	return w.s.recoverShards(ctx, w.planner, w.acquired, w.leases.Valid)
}

// serveSupersede answers workers' fire_once questions.
func (w *wiring) serveSupersede(ctx context.Context) error {
	return supersede.Serve(ctx, w.s.deps.NATS, w.s.deps.Pool, w.s.log)
}

// serveSecrets answers workers' requests for their runs' secrets.
func (w *wiring) serveSecrets(ctx context.Context) error {
	return secrets.Serve(ctx, w.s.deps.NATS, w.store.RunSecrets, w.s.log)
}

// serveMapOutputs answers reduce runs' requests for their parts' outputs.
func (w *wiring) serveMapOutputs(ctx context.Context) error {
	return mapout.Serve(ctx, w.s.deps.NATS, w.s.deps.Pool, w.s.log)
}

// serveStarted answers workers' start checks of redelivered triggers.
func (w *wiring) serveStarted(ctx context.Context) error {
	return supersede.ServeStarted(ctx, w.s.deps.NATS, w.js, w.s.deps.Pool, w.s.log)
}

// settlePublishes ends publishing: on a clean stop it lets in-flight
// publishes be acknowledged and recorded for up to 2 s (what is not
// acknowledged in time stays SCHEDULED and is recovered); after Crash it
// drops them, as a dead process would.
func (w *wiring) settlePublishes(ctx context.Context) {
	if w.s.crashed.Load() {
		w.dispatch.Abandon()
		return
	}
	drain, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	w.dispatch.Drain(drain)
}

// holdsShardZero reports whether this scheduler holds shard 0's lease: the
// one that applies run events all the time (package results; the others
// stand by). Any fixed shard would do; every cluster has shard 0.
func (w *wiring) holdsShardZero() bool {
	held := w.leases.Held()
	return len(held) > 0 && held[0].Shard == 0
}

// spentTriggerKeys are the keys whose signatures the lost-run monitor
// accepts on a spent trigger: this scheduler's own and the ones it is told
// to trust besides (a rotation's previous key); none when it signs
// nothing.
func (s *Scheduler) spentTriggerKeys() (*trigsign.Verifier, error) {
	if s.deps.TriggerSigner == nil {
		return nil, nil
	}
	keys, err := trigsign.NewVerifier(append([]ed25519.PublicKey{s.deps.TriggerSigner.PublicKey()}, s.deps.TriggerPublicKeys...)...)
	if err != nil {
		return nil, fmt.Errorf("trigger public keys: %w", err)
	}
	return keys, nil
}
