// Package results applies the run events workers publish on JETJOB_EVENTS
// to job_runs.
//
// All schedulers share one durable consumer, so each event message is
// applied by one of them. One of them applies all the time: the holder of
// shard 0's lease (Deps.Active); the others stand by and only take events
// while that one is not keeping up (standby.go). A run's started and
// finished events then meet in one process, which writes the run once when
// both come in one batch; with every scheduler consuming, the two went to
// different processes about half the time and each wrote the row (issue
// #16: two schedulers cost PostgreSQL a third more per run than one).
//
// Events are applied in batches, in one statement, and acknowledged only
// after the transaction commits: if PostgreSQL is down the messages wait
// in the stream (and in this process, which retries) and nothing a worker
// reported is lost. Applying is idempotent and monotonic
// (wire.Status.Rank), so a redelivered or reordered event changes nothing
// it should not.
//
// Events are messages anyone with access to the subjects can publish, so
// nothing in one may stop the applier: a message that cannot be decoded is
// terminated, an event applies only to a run of the group its subject
// names, text PostgreSQL would refuse is made storable, and every message
// that changed nothing is logged with its subject and stream sequence.
package results

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

// Config tunes the applier. Zero values mean the defaults.
type Config struct {
	// BatchSize caps the messages applied in one transaction (default 1000).
	BatchSize int
	// AckWait is the consumer's ack wait (default 30 s); while a batch is
	// being retried its messages are kept in progress.
	AckWait time.Duration
	// Linger is how long a batch waits for more messages after its first
	// (default 5 ms). Under a steady trickle of
	// events (runs spread over each second rather than due together),
	// applying each message as it comes costs a transaction, and a WAL
	// flush, per message; waiting a few milliseconds turns that into one
	// per batch. It delays only the recording of results, never a run.
	Linger time.Duration
	// MaxChainRuns caps the runs one root fire may cause through child
	// jobs (default refs.DefaultMaxRuns): a run whose children would pass
	// it triggers none of them, and its message says why. The API checks
	// links against the same cap when they are made (scheduler.Config).
	MaxChainRuns int
}

// Validate says which field is wrong: each value must be positive, or 0
// for its default.
func (c Config) Validate() error {
	return errors.Join(
		tuning.NotNegative("results", "BatchSize", c.BatchSize, "1000"),
		tuning.NotNegative("results", "AckWait", c.AckWait, "30s"),
		tuning.NotNegative("results", "Linger", c.Linger, DefaultLinger.String()),
		refs.ValidateMaxRuns(c.MaxChainRuns),
	)
}

// Deps are what an Applier consumes and writes through, and whom it tells
// about what it applied: given to New and fixed from then on, never set on a
// running component. Config holds only what an operator tunes.
type Deps struct {
	// JS consumes JETJOB_EVENTS.
	JS jetstream.JetStream
	// Pool is where events are applied.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Trace records a span per status change applied, in the run's
	// trace; nil: tracing off.
	Trace *spans.Tracer
	// Applied, when set, is called after each committed batch with the
	// runs whose status changed.
	Applied func([]Change)
	// WorkflowsEnded, when set, is called after each committed batch that
	// ended workflow runs (their node runs' ends advanced them to the
	// end).
	WorkflowsEnded func(ended []wfengine.Ended)
	// Spawned, when set, is called after each committed batch with the
	// ids of the runs it created (retries, child runs), SCHEDULED for a
	// later time, and Run's context: the scheduler hands them to its wheel.
	Spawned func(ctx context.Context, ids []int64)
	// Fire, when set, is called after each committed batch with the
	// workflow node runs it created, due now, as dispatch takes them, and
	// Run's context: the scheduler hands them to its wheel without reading
	// them back. Nil: their ids go to Spawned with the others.
	Fire func(ctx context.Context, rs []runs.Planned)
	// Active reports whether this scheduler is the one that applies all
	// the time (the scheduler passes "holds shard 0's lease"); while it
	// reports false the applier stands by (standby.go). Nil: always.
	Active func() bool
	// TestSignals report applied batches to tests; zero, as in
	// production, they do nothing.
	TestSignals TestSignals
}

// TestSignals are the applier's key moments, for tests (package
// internal/testsignal).
type TestSignals struct {
	// Applied fires once a batch of events is done — committed (after
	// Deps.Applied and Deps.Spawned returned) and its messages acked —
	// with the runs whose status changed: none when no event changed
	// anything.
	Applied testsignal.Signal[[]Change]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) { ts.Applied.Init(tb) }

// DefaultLinger is Config.Linger's default.
const DefaultLinger = 5 * time.Millisecond

func (c Config) withDefaults() Config {
	c.BatchSize = cmp.Or(c.BatchSize, 1000)
	if c.Linger <= 0 {
		c.Linger = DefaultLinger
	}
	c.AckWait = cmp.Or(c.AckWait, 30*time.Second)
	c.MaxChainRuns = refs.MaxRunsOr(c.MaxChainRuns)
	return c
}

// Applier consumes JETJOB_EVENTS.
type Applier struct {
	cfg  Config
	js   jetstream.JetStream
	pool *pgxpool.Pool
	log  *zap.Logger
	// trace, applied, workflowsEnded, spawned, fire and signals are
	// Deps.Trace, Deps.Applied, Deps.WorkflowsEnded, Deps.Spawned,
	// Deps.Fire and Deps.TestSignals.
	trace          *spans.Tracer
	applied        func([]Change)
	workflowsEnded func([]wfengine.Ended)
	spawned        func(context.Context, []int64)
	fire           func(context.Context, []runs.Planned)
	signals        TestSignals
	active         func() bool
	// standbyCheck is how often a standing-by applier looks at the
	// consumer (standbyInterval; tests shorten it).
	standbyCheck time.Duration
}

// New validates cfg and returns an applier; Run drives it.
func New(cfg Config, deps Deps) (*Applier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Applier{cfg: cfg.withDefaults(), js: deps.JS, pool: deps.Pool, log: logging.Named(deps.Log, "results"),
		trace: deps.Trace, applied: deps.Applied, workflowsEnded: deps.WorkflowsEnded, spawned: deps.Spawned, fire: deps.Fire,
		signals: deps.TestSignals,
		active:  deps.Active, standbyCheck: standbyInterval}, nil
}

// Run applies events until ctx ends: consuming while this scheduler is the
// active applier or the active one is not keeping up, standing by
// otherwise (standby.go). It returns an error if the consumer cannot be
// set up or ends under it (deleted): its supervisor then runs it again. A
// broken NATS connection is waited out by the client.
func (a *Applier) Run(ctx context.Context) error {
	cons, err := a.consumer(ctx)
	if err != nil {
		return err
	}
	sb := standby{cons: cons}
	for ctx.Err() == nil {
		if a.isActive() || sb.needed(ctx, a.log) {
			if err := a.consume(ctx, cons, &sb); err != nil {
				return err
			}
			continue
		}
		if backoff.Sleep(ctx, a.standbyCheck) != nil {
			return nil
		}
	}
	return nil
}

// isActive reports whether this applier consumes all the time.
func (a *Applier) isActive() bool { return a.active == nil || a.active() }

// consume applies events as they come until ctx ends, or, checking every
// standbyCheck, until this applier is neither the active one nor needed
// as a stand-in (sb) any more: then it hands back what it had buffered.
func (a *Applier) consume(ctx context.Context, cons jetstream.Consumer, sb *standby) error {
	in := make(chan jetstream.Msg, a.cfg.BatchSize)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var lastErr atomic.Pointer[error] // what ended the consumer, if it ends
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case in <- m:
		case <-cctx.Done():
			_ = m.Nak() // stopping: see handBack
		}
	}, jetstream.PullMaxMessages(a.cfg.BatchSize), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		lastErr.Store(&err)
		if ctx.Err() == nil {
			a.log.Debug("events consumer", zap.Error(err))
		}
	}))
	if err != nil {
		return fmt.Errorf("consume %s: %w", stream.Events, err)
	}
	defer func() { stop(); a.handBack(cc, in) }()
	batch := make([]jetstream.Msg, 0, a.cfg.BatchSize)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	check := time.NewTicker(a.standbyCheck)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-cc.Closed():
			// The client gave up (the consumer was deleted, say): Run
			// fails, and its supervisor runs it again, which creates the
			// consumer anew.
			return consumerEnded(stream.Events, lastErr.Load())
		case <-check.C:
			if !a.isActive() && !sb.needed(ctx, a.log) {
				return nil
			}
			continue
		case m := <-in:
			batch = append(batch[:0], m)
		}
		var ok bool
		if batch, ok = gather(ctx, in, batch, a.cfg.BatchSize, linger, a.cfg.Linger); !ok {
			nakAll(batch)
			return nil
		}
		if !a.applyBatch(ctx, batch) {
			nakAll(batch)
			return nil
		}
	}
}

// consumerEnded is the error of a consumer the client stopped on its own,
// with the error it reported last (nil if none).
func consumerEnded(name string, last *error) error {
	if last != nil {
		return fmt.Errorf("consume %s: the consumer ended: %w", name, *last)
	}
	return fmt.Errorf("consume %s: the consumer ended", name)
}

// gather adds to batch, which holds the first message, what arrives on in
// until the batch holds size messages or linger has passed since the
// first (on timer t); false when ctx ended first.
func gather[M any](ctx context.Context, in <-chan M, batch []M, size int, t *time.Timer, linger time.Duration) ([]M, bool) {
	t.Reset(linger)
	defer t.Stop()
	for len(batch) < size {
		select {
		case m := <-in:
			batch = append(batch, m)
		case <-t.C:
			return batch, true
		case <-ctx.Done():
			return batch, false
		}
	}
	return batch, true
}

// handBackWait bounds how long a stopping applier waits for the events the
// client has buffered to be handed to it.
const handBackWait = 5 * time.Second

// handBack returns, when the applier stops, every events message it took
// but did not apply: NAKed, another scheduler applies it at once, where a
// message left unacknowledged would wait out the ack wait (30 s) first,
// and with it the record of the runs it carries (a rolling restart of the
// schedulers would leave runs without their start or end for that long).
func (a *Applier) handBack(cc jetstream.ConsumeContext, in chan jetstream.Msg) {
	cc.Drain() // what the client buffered still reaches the callback, which NAKs it
	select {
	case <-cc.Closed():
	case <-time.After(handBackWait):
		a.log.Warn("events still buffered at the stop are left to their ack wait")
	}
	for {
		select {
		case m := <-in:
			_ = m.Nak()
		default:
			return
		}
	}
}

func nakAll(msgs []jetstream.Msg) {
	for _, m := range msgs {
		_ = m.Nak()
	}
}

// consumer creates (or updates) the events consumer, retrying until NATS
// answers or ctx ends.
func (a *Applier) consumer(ctx context.Context) (cons jetstream.Consumer, err error) {
	err = backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		OnRetry: func(_ int, _ time.Duration, err error) {
			a.log.Warn("events consumer not available yet; retrying", zap.Error(err))
		},
	}, func(ctx context.Context) (err error) {
		cons, err = a.js.CreateOrUpdateConsumer(ctx, stream.Events, jetstream.ConsumerConfig{
			Durable:       stream.EventsConsumer,
			Description:   "jetjob schedulers apply run events",
			FilterSubject: "jetjob.event.>",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       a.cfg.AckWait,
			MaxAckPending: 20000,
		})
		return err
	})
	return cons, err
}

// applyBatch decodes, applies and acks one batch, retrying the database
// write until it commits or ctx ends: then it reports false, and the caller
// hands the messages back.
// A message that can never be applied (malformed, another protocol version,
// a subject naming no group) is logged once and terminated, so that it is
// neither redelivered forever nor able to hold up the events behind it.
func (a *Applier) applyBatch(ctx context.Context, msgs []jetstream.Msg) bool {
	type decoded struct {
		from source
		evs  []wire.Event
	}
	var (
		events []sourcedEvent
		parts  = make([]decoded, 0, len(msgs))
		n      int
	)
	tb := a.trace.Batch()
	for _, m := range msgs {
		tb.Message(m.Headers())
		from := source{subject: m.Subject()}
		if md, err := m.Metadata(); err == nil {
			from.seq = md.Sequence.Stream
		}
		group, evs, err := decode(from.subject, m.Data())
		if err != nil {
			a.log.Error("dropping an events message that can never be applied", zap.String("subject", from.subject),
				zap.Uint64("stream_seq", from.seq), zap.Error(err), zap.ByteString("data", m.Data()[:min(len(m.Data()), 512)]))
			if err := m.TermWithReason("malformed events message"); err != nil {
				a.log.Warn("terminating a malformed events message failed", zap.Uint64("stream_seq", from.seq), zap.Error(err))
			}
			continue
		}
		from.group = group
		parts = append(parts, decoded{from, evs})
		n += len(evs)
	}
	events = make([]sourcedEvent, 0, n)
	for _, p := range parts {
		for _, e := range p.evs {
			events = append(events, sourcedEvent{Event: e, from: p.from})
		}
	}
	var changed []Change
	if len(events) > 0 {
		var done batchResult
		lastProgress := time.Now()
		err := backoff.Retry(ctx, backoff.Policy{
			Backoff: backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
			OnRetry: func(_ int, _ time.Duration, err error) {
				errcount.Postgres(errcount.ApplyEvents)
				a.log.Warn("applying events failed; retrying", zap.Int("events", len(events)), zap.Error(err))
				// The messages are still being worked on: keep them from
				// being redelivered to another scheduler meanwhile.
				if time.Since(lastProgress) > a.cfg.AckWait/3 {
					for _, m := range msgs {
						_ = m.InProgress()
					}
					lastProgress = time.Now()
				}
			},
		}, func(ctx context.Context) (err error) {
			tb.Writing()
			done, err = apply(ctx, a.pool, events, a.cfg.MaxChainRuns)
			return err
		})
		if err != nil {
			return false // ctx ended
		}
		changed = done.changes
		for _, c := range done.changes {
			tb.Applied(c.RunID, c.JobID, c.WorkflowRun, c.Status)
		}
		a.logIgnored(done.ignored)
		for _, c := range done.capped {
			a.log.Warn("child jobs not triggered: the fire's chain reached its cap", logging.Run(c.RunID),
				zap.Int64("job_id", c.JobID), zap.Int64("chain_root_run", c.Root), zap.Int("max_chain_runs", a.cfg.MaxChainRuns))
		}
		if a.applied != nil && len(done.changes) > 0 {
			a.applied(done.changes)
		}
		if a.workflowsEnded != nil && len(done.workflowsEnded) > 0 {
			a.workflowsEnded(done.workflowsEnded)
		}
		spawned := done.spawned
		if len(done.fire) > 0 {
			if a.fire != nil {
				a.fire(ctx, done.fire)
			} else {
				for _, r := range done.fire {
					spawned = append(spawned, r.RunID)
				}
			}
		}
		if a.spawned != nil && len(spawned) > 0 {
			a.spawned(ctx, spawned)
		}
	}
	for _, m := range msgs {
		if err := m.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			// Not acked means redelivered and applied again: harmless.
			a.log.Debug("ack of applied events failed", zap.Error(err))
		}
	}
	a.signals.Applied.Signal(changed)
	return true
}

// decode reads an events message that came on subject: the group the
// subject names and the events. An error means it can never be applied.
func decode(subject string, data []byte) (group string, evs []wire.Event, err error) {
	group, ok := stream.ParseEvent(subject)
	if !ok {
		return "", nil, fmt.Errorf("subject %q is not jetjob.event.<group>", subject)
	}
	evs, err = wire.DecodeEvents(data)
	return group, evs, err
}

// logIgnored says which updates of a committed batch changed nothing. An
// event for a run that does not exist in its subject's group is foreign
// (forged, or from a broken worker): a warning. One for a run already at
// or past its status is a redelivery or a late event, which the monotonic
// update makes harmless: worth a line, not an alarm.
func (a *Applier) logIgnored(ignored []Ignored) {
	for _, ig := range ignored {
		for _, from := range ig.From {
			fields := []zap.Field{logging.Run(ig.RunID), zap.String("group", ig.Group),
				zap.String("subject", from.subject), zap.Uint64("stream_seq", from.seq)}
			if ig.Status == "" {
				foreign.Refused(foreign.Events)
				a.log.Warn("event for a run that does not exist in its subject's group: ignored", fields...)
			} else {
				a.log.Info("event changed nothing: the run is already as far", append(fields, zap.String("status", string(ig.Status)))...)
			}
		}
	}
}

// Change is a run whose status an event changed.
type Change struct {
	RunID  int64
	JobID  int64
	Status wire.Status
	// Triggered says the change recorded the run's trigger sequence and
	// time too (from its worker's events): dispatch's own, deferred
	// TRIGGERED write for it has nothing left to do (see package runs).
	Triggered bool
	// Group, ScheduledAt, StartedAt and FinishedAt are the run's after the
	// change (StartedAt and FinishedAt zero while unknown), for metrics.
	Group                              string
	ScheduledAt, StartedAt, FinishedAt time.Time
	// StartApplied says the batch carried the run's started event: its
	// start lag is observed once, when the start is recorded.
	StartApplied bool
	// WorkflowRun is the workflow run of a node run, 0 for other runs.
	WorkflowRun int64
}
