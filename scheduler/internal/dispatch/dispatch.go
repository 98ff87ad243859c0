// Package dispatch publishes due runs as triggers on JetStream and records
// them TRIGGERED.
//
// Publishing is asynchronous and pipelined: Fire sends every trigger of a
// batch without waiting, a collector goroutine takes the acknowledgements in
// order, and a flusher writes TRIGGERED with the stream sequence for many
// runs in one statement (runs.Record), a little later: the deferred
// TRIGGERED write of package runs. Each trigger carries Nats-Msg-Id = wire.MsgID(run),
// so a re-publish of the same run (a retry after a failed ack, or a shard's
// next owner firing what this process published but never recorded) is
// dropped by the stream's duplicate window: the run reaches one worker once.
//
// # Trigger batches
//
// The runs of a trigger batch (runs.Planned.Batch, fixed when they were
// planned) are published as one message: wire.EncodeTriggerBatch of their
// triggers, in the order Fire got them, with Nats-Msg-Id
// wire.BatchMsgID(batch), never alone: on their group's batch subject
// (stream.TriggerBatch), or, for jobs routed consistent_hash, whole on the
// directed subject of the worker their hash picks (batchSubject). Every
// publish of a batch (a retry, a recovery) so carries the batch's runs
// still SCHEDULED under one id, and the duplicate window, which spans the
// stream's subjects, drops the copies. For that the first publish must
// hold every run of the batch:
//
//   - the lease check is the batch's: if any of its runs may not be
//     published, none is (they share a shard: all or none anyway);
//   - the misfire check (misfired) may skip some runs of a late batch:
//     they are written SKIPPED, and committed, before the message that
//     leaves them out is published (skipFirst). A SKIPPED mark queued for
//     the flusher would not do: had the message gone out without a run
//     and this process died before the write, the run's recovered copy
//     would go out inside a duplicate the stream drops, and the run would
//     be lost. If that write fails, the batch goes out whole and each
//     worker applies the misfire policy to the late runs it receives
//     (EXPIRED rather than SKIPPED);
//   - a run that cannot be encoded at all is left out and FAILED, as
//     alone; it cannot be encoded in a later copy either.
//
// Each run of the message is recorded TRIGGERED with the message's stream
// sequence. With tracing on the planner plans no batches (a trace follows
// one run per message); a batch planned before tracing was switched on gets
// one publish span, its first run's, whose context the message carries.
package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/runtrace"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/route"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/spans"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// Config tunes dispatch. Zero values mean the defaults.
type Config struct {
	// MisfireThreshold is copied into each trigger so that a worker can
	// apply the job's misfire policy to a trigger that reaches it late.
	MisfireThreshold time.Duration
	// FlushInterval bounds how long an acknowledged publish waits before
	// its run is written TRIGGERED (default 20 ms).
	FlushInterval time.Duration
	// FlushSize flushes earlier when this many runs wait (default 2000).
	FlushSize int
	// TriggeredDelay holds a published run's TRIGGERED write back for this
	// long after its ack (default: the misfire threshold plus a second,
	// at least 2 s and at most 20 s; negative: no delay): the deferred
	// TRIGGERED write, explained in package runs.
	TriggeredDelay time.Duration
	// InFlight caps publishes awaiting their ack (default 4096); Fire
	// blocks beyond it.
	InFlight int
}

// Validate says which field is wrong. TriggeredDelay may be negative (no
// delay); every other duration and size must be positive, or 0 for its
// default.
func (c Config) Validate() error {
	return errors.Join(
		tuning.NotNegative("dispatch", "MisfireThreshold", c.MisfireThreshold, ""),
		tuning.NotNegative("dispatch", "FlushInterval", c.FlushInterval, "20ms"),
		tuning.NotNegative("dispatch", "FlushSize", c.FlushSize, "2000"),
		tuning.NotNegative("dispatch", "InFlight", c.InFlight, "4096"),
	)
}

// Deps are what a Dispatcher publishes and writes through, and whom it
// tells: given to New and fixed from then on, never set on a running
// component. Config holds only what an operator tunes.
type Deps struct {
	// JS publishes the triggers. Create it with an async publish timeout
	// (jetstream.WithPublishAsyncTimeout) so that a lost ack surfaces as
	// an error and is retried.
	JS jetstream.JetStream
	// Pool is where TRIGGERED, SKIPPED and FAILED are written.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Route picks the worker of each run whose job routes to one (nil:
	// every trigger goes to its group's shared queue).
	Route *route.Picker
	// Owner is this scheduler's id in scheduler_shards: records are
	// written only while it still holds the run's shard at the run's epoch.
	Owner string
	// Valid reports whether this scheduler still holds shard at epoch
	// (lease.Manager.Valid). A run failing it is not published: the
	// shard's new owner recovers it. Nil means every lease is valid.
	Valid func(shard int, epoch int64) bool
	// Trace records each publish as the root span of its run's trace and
	// sends its context in the trigger's header; nil: tracing off.
	Trace *spans.Tracer
	// Signer signs every trigger message (package trigsign), so that
	// workers run only what a scheduler sent; nil publishes them
	// unsigned, which only workers told to accept unsigned triggers run.
	Signer *trigsign.Signer
	// Observe, when set, is called with each run's fire lag (publish
	// acknowledged − scheduled time).
	Observe func(runs.Planned, time.Duration)
	// StartWorkflow starts the workflow runs of workflows' fires (runs
	// with Planned.Workflow), which are never published; nil fails such
	// runs. It is called on a goroutine of Run's, one call at a time, in
	// the order Fire met them, with every such run handed over since the
	// last call (their leases checked): they start together, and the runs
	// due meanwhile (node runs) are published without waiting for them.
	StartWorkflow func(context.Context, []runs.Planned)
	// Paused returns the groups that are paused or draining, kept current
	// from their changes' notifications (the scheduler's watch): their
	// retries, child runs and node runs that fell due after the pause
	// began are not published (runs.Paused.Holds, package runs' held.go).
	// They stay SCHEDULED, and the sweep hands them over again once their
	// group is active. Nil: no group is ever paused.
	Paused func() runs.Paused
	// TestSignals report written batches to tests; zero, as in
	// production, they do nothing.
	TestSignals TestSignals
}

// settings is what New was given, the tuning with its defaults and the
// wiring, so that the code reads both through d.cfg.
type settings struct {
	Config
	Deps
}

func (c Config) withDefaults() Config {
	c.FlushInterval = cmp.Or(c.FlushInterval, 20*time.Millisecond)
	c.FlushSize = cmp.Or(c.FlushSize, 2000)
	c.InFlight = cmp.Or(c.InFlight, 4096)
	c.TriggeredDelay = cmp.Or(c.TriggeredDelay, DefaultTriggeredDelay(c.MisfireThreshold))
	return c
}

// DefaultTriggeredDelay is Config.TriggeredDelay's default for a misfire
// threshold: a run is to start within its threshold, however long its
// trigger waits for a worker (past it, it expires), and its worker's
// events then record it, so holding its mark a second longer than that
// drops the mark for every run that starts on time, a queue in front of
// busy workers included (under overload triggers wait seconds, and a 2 s
// hold had every one of those runs written twice). At least 2 s, and at
// most 20 s: the sweep re-publishes runs that still read SCHEDULED 30 s
// after their time (planner.OrphanAge), and a held mark keeps its run so.
func DefaultTriggeredDelay(misfireThreshold time.Duration) time.Duration {
	return min(max(misfireThreshold+time.Second, 2*time.Second), 20*time.Second)
}

// Dispatcher publishes triggers. Create with New, start Run, then Fire.
type Dispatcher struct {
	cfg  settings
	js   jetstream.JetStream
	pool *pgxpool.Pool
	log  *zap.Logger

	inflight chan inflight
	marks    chan runs.Mark
	// flows carries workflows' fires from Fire to the starter (start).
	flows chan []runs.Planned
	// abandoned drops what is not yet written when Run ends (Abandon).
	abandoned atomic.Bool
	// recorded holds runs the results applier recorded with their
	// trigger's sequence (Recorded), and when: their held TRIGGERED marks
	// are dropped instead of written.
	recordedMu sync.Mutex
	recorded   map[int64]time.Time
	// pending counts runs handed to Fire whose outcome is not yet queued
	// for recording: Drain waits for it to reach zero.
	pending atomic.Int64
	// now times the holding back of TRIGGERED marks (tests set a fake
	// clock).
	now func() time.Time
}

// TestSignals are the dispatcher's key moments, for tests (package
// internal/testsignal): zero, as in production, they do nothing.
type TestSignals struct {
	// Flushed fires after a batch of outcomes (TRIGGERED, SKIPPED,
	// FAILED) was written, with the batch's run ids. A TRIGGERED write
	// changes only runs still SCHEDULED: one whose events were applied
	// first is in the batch but unchanged.
	Flushed testsignal.Signal[[]int64]
	// Held fires with the runs a Fire call held back because they wait
	// for their group's resume (holdBack).
	Held testsignal.Signal[[]int64]
}

// Init initialises every signal for tb's test.
func (ts *TestSignals) Init(tb testsignal.TB) {
	ts.Flushed.Init(tb)
	ts.Held.Init(tb)
}

// inflight is one published message awaiting its ack: one run's trigger,
// or a trigger batch.
type inflight struct {
	// runs are the message's runs: one, or a batch's, which share shard
	// and epoch.
	runs  []runs.Planned
	msg   *nats.Msg
	msgID string
	fut   jetstream.PubAckFuture
	err   error      // PublishAsync itself failed: go straight to retry
	span  trace.Span // the publish span; nil with tracing off
}

// New validates cfg and returns a dispatcher; start Run before Fire.
func New(cfg Config, deps Deps) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Dispatcher{
		cfg: settings{Config: cfg, Deps: deps}, js: deps.JS, pool: deps.Pool, log: logging.Named(deps.Log, "dispatch"),
		inflight: make(chan inflight, cfg.InFlight),
		marks:    make(chan runs.Mark, cfg.FlushSize*4),
		flows:    make(chan []runs.Planned, 64),
		now:      time.Now,
	}, nil
}

var errLeaseLost = errors.New("lease lost")

// HeaderScheduler names the scheduler that published a trigger: for
// operators tracing a run, and for tests proving a fenced scheduler
// published nothing.
const HeaderScheduler = "Jetjob-Scheduler"

// message is a trigger message of rs on subject: a trigger batch sent to
// one worker's directed subject says so (stream.BatchHeader). Every trigger
// a scheduler publishes is made here, the first publish and every retry,
// lone triggers, broadcast parts and batches alike, whatever made the run
// (schedule, manual, retry, child, backfill): so this is where each is
// signed (Deps.Signer), once per message. The same message signs the same
// way (Ed25519 is deterministic), so a retry is a byte-identical copy.
func (d *Dispatcher) message(rs []runs.Planned, subject string, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	if d.cfg.Owner != "" {
		m.Header.Set(HeaderScheduler, d.cfg.Owner)
	}
	batch := rs[0].Batch != 0
	if batch && subject != stream.TriggerBatch(rs[0].Group) {
		m.Header.Set(stream.BatchHeader, "1")
	}
	if d.cfg.Signer != nil {
		d.cfg.Signer.Sign(m.Header, rs[0].Group, batch, data)
	}
	return m
}

// Subject is where a lone run's trigger goes: its target worker's directed
// subject once routing picked one, else the group's shared queue (a run of
// a trigger batch goes with its batch: batchSubject).
func Subject(r *runs.Planned) string {
	if r.Target != "" {
		return stream.TriggerWorker(r.Group, r.Target)
	}
	return stream.TriggerAny(r.Group)
}

// Fire publishes runs without waiting for their acks. It blocks while NATS
// is disconnected, when InFlight publishes are outstanding, or until ctx
// ends. Runs whose shard lease is no longer held are dropped (they stay
// SCHEDULED for the new owner); runs found late apply their misfire policy.
// The runs of a trigger batch go out as one message (see the package doc):
// all of them must be in due (the wheel hands a batch over whole), in the
// order they are to be in the message.
func (d *Dispatcher) Fire(ctx context.Context, due []runs.Planned) {
	if !d.Connected(ctx) {
		return
	}
	if due = d.holdBack(due); len(due) == 0 {
		return
	}
	now := time.Now()
	skip := d.misfired(due, now)
	batches := batchesOf(due)
	var flows []runs.Planned
	defer func() { d.startWorkflows(ctx, flows) }()
	for i := range due {
		r := &due[i]
		if r.Batch != 0 {
			members, first := batches[r.Batch]
			if !first {
				continue // published with the batch's first run
			}
			delete(batches, r.Batch)
			if !d.fireBatch(ctx, members, skip, now) {
				return
			}
			continue
		}
		if r.Epoch != 0 && d.cfg.Valid != nil && !d.cfg.Valid(r.Shard, r.Epoch) {
			d.log.Debug("lease lost; not publishing", logging.Run(r.RunID), logging.Shard(r.Shard))
			continue
		}
		if msg, ok := skip[r.RunID]; ok {
			d.record(ctx, runs.Mark{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: r.Epoch, Status: wire.StatusSkipped, At: now, Message: msg})
			continue
		}
		if r.Workflow {
			// A workflow's fire goes to no worker: its run starts here,
			// in a transaction fenced by the run's epoch (package wfengine),
			// with the others of this call.
			flows = append(flows, *r)
			continue
		}
		for _, part := range d.route(ctx, due, i) {
			if !d.publish(ctx, &part, now) {
				return
			}
		}
	}
}

// holdBack returns due without the runs that wait for their group's
// resume (Deps.Paused). They are dropped from memory only: still
// SCHEDULED, they are left out of the sweep until the resume, and handed
// over by it then. A trigger batch is of one group, one fire time and one
// trigger type, so it is held whole or not at all. With no group paused
// due is returned as it is, at the cost of one empty map.
func (d *Dispatcher) holdBack(due []runs.Planned) []runs.Planned {
	if d.cfg.Paused == nil {
		return due
	}
	paused := d.cfg.Paused()
	if len(paused) == 0 {
		return due
	}
	var (
		kept []runs.Planned
		held []int64
	)
	for i := range due {
		r := &due[i]
		if !paused.Holds(r) {
			if held != nil {
				kept = append(kept, *r)
			}
			continue
		}
		if held == nil {
			kept = append(make([]runs.Planned, 0, len(due)-1), due[:i]...)
		}
		held = append(held, r.RunID)
		d.log.Info("group paused; holding the run back until its resume", logging.Run(r.RunID), logging.Job(r.JobID),
			logging.Group(r.Group), zap.String("trigger_type", string(r.TriggerType)))
	}
	if held == nil {
		return due
	}
	d.cfg.TestSignals.Held.Signal(held)
	return kept
}

// publish sends one run's trigger without waiting for its ack. It returns
// false when ctx ended first.
func (d *Dispatcher) publish(ctx context.Context, r *runs.Planned, now time.Time) bool {
	data, err := wire.EncodeTrigger(r.Trigger(d.cfg.MisfireThreshold))
	if err != nil {
		d.log.Error("run cannot be encoded; failing it", logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(err))
		d.fail(ctx, r, now, err)
		return true
	}
	if err := d.fits(data); err != nil {
		// NATS would refuse it on every attempt: only a server whose max
		// payload is below a trigger's params limit (64 KiB) gets here.
		d.log.Error("trigger too big to publish; failing its run", logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(err))
		d.fail(ctx, r, now, err)
		return true
	}
	return d.send(ctx, []runs.Planned{*r}, Subject(r), wire.MsgID(r.RunID), data)
}

// startWorkflows hands workflows' runs to the starter (start), waiting
// while it is 64 handovers behind; without Deps.StartWorkflow (a
// dispatcher built for tests of publishing alone) the runs fail. If ctx
// ends first, or the process before they start, they stay SCHEDULED and
// are handed over again (recovery, the sweep): starting is fenced and
// happens once.
func (d *Dispatcher) startWorkflows(ctx context.Context, rs []runs.Planned) {
	if len(rs) == 0 || ctx.Err() != nil {
		return
	}
	if d.cfg.StartWorkflow == nil {
		for i := range rs {
			d.fail(ctx, &rs[i], time.Now(), errors.New("this scheduler cannot start workflow runs"))
		}
		return
	}
	select {
	case d.flows <- rs:
	case <-ctx.Done():
	}
}

// start passes the workflows' fires Fire hands over to
// Deps.StartWorkflow until ctx ends, all those waiting in one call.
func (d *Dispatcher) start(ctx context.Context) {
	for {
		var rs []runs.Planned
		select {
		case <-ctx.Done():
			return
		case rs = <-d.flows:
		}
	more:
		for {
			select {
			case next := <-d.flows:
				rs = append(rs, next...)
			default:
				break more
			}
		}
		d.cfg.StartWorkflow(ctx, rs)
	}
}

// fits reports, as an error, a message NATS would refuse on every attempt:
// one above the server's max payload, less room for its headers.
func (d *Dispatcher) fits(data []byte) error {
	if limit := d.js.Conn().MaxPayload(); limit > 0 && int64(len(data))+maxPayloadSlack > limit {
		return fmt.Errorf("trigger message of %d bytes is more than NATS's max payload (%d bytes) allows", len(data), limit)
	}
	return nil
}

// fail records a run that cannot be published FAILED, with why.
func (d *Dispatcher) fail(ctx context.Context, r *runs.Planned, now time.Time, err error) {
	d.record(ctx, runs.Mark{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: r.Epoch, Status: wire.StatusFailed, At: now, Message: wire.TruncateMessage(err.Error())})
}

// send publishes one message of rs (one run, or a trigger batch's runs)
// without waiting for its ack. It returns false when ctx ended first.
func (d *Dispatcher) send(ctx context.Context, rs []runs.Planned, subject, msgID string, data []byte) bool {
	d.pending.Add(int64(len(rs)))
	f := inflight{runs: rs, msg: d.message(rs, subject, data), msgID: msgID}
	f.span = d.cfg.Trace.Publish(&rs[0], subject, f.msg.Header)
	if f.span != nil && rs[0].Batch != 0 {
		// The batch's one span, recorded as its first run's (package doc).
		f.span.SetAttributes(attribute.Int64("jetjob.batch", rs[0].Batch), runtrace.AttrRuns.Int(len(rs)))
	}
	f.fut, f.err = d.js.PublishMsgAsync(f.msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(stream.Triggers))
	select {
	case d.inflight <- f:
		return true
	case <-ctx.Done():
		d.pending.Add(-int64(len(rs)))
		return false
	}
}

// batchesOf gathers the runs of each trigger batch in due, in due's order
// (the wheel hands them over adjacent; a batch's runs are gathered
// wherever they are, so that a batch is never published in two messages,
// the second of which the duplicate window would drop). nil when due
// holds no batch.
//
// A batch's runs are usually adjacent in due (the wheel's order): its
// entry is then due's own stretch of them, not a copy.
func batchesOf(due []runs.Planned) map[int64][]runs.Planned {
	var out map[int64][]runs.Planned
	for i := 0; i < len(due); {
		b, j := due[i].Batch, i+1
		for j < len(due) && due[j].Batch == b {
			j++
		}
		if b != 0 {
			if out == nil {
				out = map[int64][]runs.Planned{}
			}
			if prev, ok := out[b]; ok {
				out[b] = append(prev, due[i:j]...)
			} else {
				// Capped at its end: a second stretch of the same batch
				// appends to a copy, never over due.
				out[b] = due[i:j:j]
			}
		}
		i = j
	}
	return out
}

// skipTimeout bounds skipFirst's write.
const skipTimeout = 5 * time.Second

// skipFirst handles a batch some of whose runs (not all) the misfire policy
// skips here: it writes them SKIPPED now, in a fenced statement, and
// returns the others to publish. The write comes first because the
// message that leaves them out is the batch's first: once it is out, a
// recovered copy must not hold them, and they are no longer SCHEDULED
// only if the write committed (a SKIPPED mark queued for the flusher could
// die with this process). If the write fails the batch goes out whole and
// its workers judge the late runs (they end EXPIRED instead); nil means
// the lease was lost meanwhile, and nothing is to be published.
func (d *Dispatcher) skipFirst(ctx context.Context, members []runs.Planned, skip map[int64]string, now time.Time, batchLog []zap.Field) []runs.Planned {
	var marks []runs.Mark
	kept := members[:0:0]
	for i := range members {
		r := &members[i]
		if msg, ok := skip[r.RunID]; ok {
			marks = append(marks, runs.Mark{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: r.Epoch, Status: wire.StatusSkipped, At: now, Message: msg})
			continue
		}
		kept = append(kept, *r)
	}
	wctx, cancel := context.WithTimeout(ctx, skipTimeout)
	err := runs.Record(wctx, d.pool, d.cfg.Owner, marks)
	cancel()
	if err != nil {
		errcount.Postgres(errcount.RecordTriggered)
		d.log.Warn("late runs of a trigger batch not recorded SKIPPED; publishing it whole, its workers judge them",
			append(batchLog, zap.Int("late", len(marks)), zap.Error(err))...)
		return members
	}
	// A fenced write by a lost lease writes nothing: publishing without
	// the late runs is right only while the lease still holds.
	if r := &members[0]; r.Epoch != 0 && d.cfg.Valid != nil && !d.cfg.Valid(r.Shard, r.Epoch) {
		return nil
	}
	return kept
}

// maxPayloadSlack is room left under NATS's max payload for a message's
// headers (Nats-Msg-Id, the scheduler's id, trace context).
const maxPayloadSlack = 4 << 10

// fireBatch publishes the runs of one trigger batch as one message (see
// the package doc for why all or none, and whole). It returns false when
// ctx ended first.
func (d *Dispatcher) fireBatch(ctx context.Context, members []runs.Planned, skip map[int64]string, now time.Time) bool {
	first := &members[0]
	batchLog := []zap.Field{zap.Int64("batch", first.Batch), logging.Group(first.Group), logging.Shard(first.Shard), zap.Int("runs", len(members))}
	for i := range members {
		if r := &members[i]; r.Epoch != 0 && d.cfg.Valid != nil && !d.cfg.Valid(r.Shard, r.Epoch) {
			d.log.Debug("lease lost; not publishing the trigger batch", batchLog...)
			return true
		}
	}
	late := 0
	for i := range members {
		if _, ok := skip[members[i].RunID]; ok {
			late++
		}
	}
	if late == len(members) {
		for i := range members {
			r := &members[i]
			d.record(ctx, runs.Mark{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: r.Epoch, Status: wire.StatusSkipped, At: now, Message: skip[r.RunID]})
		}
		return true
	}
	if late > 0 {
		members = d.skipFirst(ctx, members, skip, now, batchLog)
		if members == nil {
			return true // the lease went meanwhile: the new owner has the batch
		}
	}
	data, err := d.encodeBatch(members)
	if err != nil {
		// Some run cannot be encoded: fail it alone, as a lone run would
		// be, and publish the others (no copy of the batch can hold it).
		kept := members[:0:0]
		for i := range members {
			r := &members[i]
			if _, err := wire.EncodeTrigger(r.Trigger(d.cfg.MisfireThreshold)); err != nil {
				d.log.Error("run of a trigger batch cannot be encoded; failing it, publishing the others",
					append(batchLog, logging.Run(r.RunID), logging.Job(r.JobID), zap.Error(err))...)
				d.fail(ctx, r, now, err)
				continue
			}
			kept = append(kept, *r)
		}
		if len(kept) == 0 {
			return true
		}
		members = kept
		if data, err = d.encodeBatch(members); err != nil {
			d.log.Error("trigger batch cannot be encoded; failing its runs", append(batchLog, zap.Error(err))...)
			for i := range members {
				d.fail(ctx, &members[i], now, err)
			}
			return true
		}
	}
	if err := d.fits(data); err != nil {
		// The planner keeps batches far smaller; a job's params edited
		// after planning could still make one too big. Its runs may not
		// go out alone.
		err = fmt.Errorf("trigger batch %d of %d runs: %w", first.Batch, len(members), err)
		d.log.Error("trigger batch too big to publish; failing its runs", append(batchLog, zap.Error(err))...)
		for i := range members {
			d.fail(ctx, &members[i], now, err)
		}
		return true
	}
	return d.send(ctx, members, d.batchSubject(first), wire.BatchMsgID(first.Batch), data)
}

// batchSubject is where the trigger batch whose first run is first goes:
// the directed subject of the worker consistent_hash picks for its job, if
// that worker reads batches there (route.Picker.BatchTarget), else the
// group's batch subject. The planner bound the batch's runs for one worker
// (package planner, batchLane); should the workers have changed since,
// the first run's decides. Either way the Msg-Id is the batch's: the
// stream's duplicate window covers every subject, so a copy published
// elsewhere by a later owner is still dropped.
func (d *Dispatcher) batchSubject(first *runs.Planned) string {
	if first.RouteStrategy == policy.RouteConsistentHash && d.cfg.Route != nil {
		if id := d.cfg.Route.BatchTarget(first.JobID, first.Group, first.Handler); id != "" {
			return stream.TriggerWorker(first.Group, id)
		}
	}
	return stream.TriggerBatch(first.Group)
}

// encodeBatch encodes the triggers of members as one batch message.
func (d *Dispatcher) encodeBatch(members []runs.Planned) ([]byte, error) {
	ts := make([]*wire.Trigger, len(members))
	for i := range members {
		ts[i] = members[i].Trigger(d.cfg.MisfireThreshold)
	}
	return wire.EncodeTriggerBatch(ts)
}

// misfired applies the misfire policy to runs this process is about to
// publish for the first time more than the threshold after their fire
// time (NATS was down, or this process was stalled): skip skips them,
// fire_once publishes only the newest of each job in the batch, fire_all
// publishes all. Recovered runs are exempt: a previous owner may already
// have published them, so they are re-published (the Msg-Id de-duplicates)
// and a late one is judged by the worker that receives it. It returns the
// runs to skip with their messages; the skipped runs of a trigger batch
// are written before the rest of it is published (fireBatch, skipFirst).
func (d *Dispatcher) misfired(due []runs.Planned, now time.Time) map[int64]string {
	late := func(r *runs.Planned) bool {
		threshold := d.cfg.MisfireThreshold
		if r.MisfireThreshold > 0 {
			threshold = r.MisfireThreshold // the job's own
		}
		return !r.Recovered && r.TriggerType == wire.TriggerSchedule && policy.Late(r.ScheduledAt, now, threshold)
	}
	newest := map[int64]time.Time{} // job → its newest late fire in the batch
	for i := range due {
		if r := &due[i]; late(r) && r.ScheduledAt.After(newest[r.JobID]) {
			newest[r.JobID] = r.ScheduledAt
		}
	}
	var skip map[int64]string
	for i := range due {
		r := &due[i]
		if !late(r) {
			continue
		}
		newer := policy.HasNewer
		if r.ScheduledAt.Equal(newest[r.JobID]) {
			newer = policy.NoNewer
		}
		dec := policy.Decide(policy.Facts{Stage: policy.AtPublishing, Policy: r.MisfirePolicy,
			Late: now.Sub(r.ScheduledAt), Newer: newer})
		if dec.Outcome == policy.Run {
			continue
		}
		if skip == nil {
			skip = map[int64]string{}
		}
		skip[r.RunID] = dec.Message
	}
	return skip
}

// Connected blocks while NATS is disconnected (the wheel's ready check):
// publishing into the client's reconnect buffer would send runs at an
// unknown later time, past the misfire check. It returns false when ctx
// ends or the connection is closed.
func (d *Dispatcher) Connected(ctx context.Context) bool {
	nc := d.js.Conn()
	if nc.IsConnected() {
		return true
	}
	d.log.Warn("NATS disconnected; holding triggers until it is back")
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !nc.IsConnected() {
		if nc.IsClosed() {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	d.log.Info("NATS back; publishing held triggers")
	return true
}

// Drain waits until every run handed to Fire has been acknowledged and
// queued for recording, or ctx ends. Stop firing first.
func (d *Dispatcher) Drain(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for d.pending.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Recorded tells the dispatcher that these runs are recorded as triggered
// already (by the results applier of this process, from their workers'
// events): it drops their held TRIGGERED marks rather than send a write
// that would find nothing to do. Runs it does not hold are forgotten after
// a while.
func (d *Dispatcher) Recorded(ids []int64) {
	now := d.now()
	d.recordedMu.Lock()
	defer d.recordedMu.Unlock()
	if d.recorded == nil {
		d.recorded = make(map[int64]time.Time, len(ids))
	}
	for _, id := range ids {
		d.recorded[id] = now
	}
}

// dropRecorded removes from marks those Recorded covers, and forgets
// entries older than forget.
func (d *Dispatcher) dropRecorded(marks []runs.Mark, forget time.Duration) []runs.Mark {
	d.recordedMu.Lock()
	defer d.recordedMu.Unlock()
	if len(d.recorded) == 0 {
		return marks
	}
	kept := marks[:0]
	for _, m := range marks {
		if _, ok := d.recorded[m.RunID]; ok {
			delete(d.recorded, m.RunID)
			continue
		}
		kept = append(kept, m)
	}
	if forget > 0 {
		now := d.now()
		for id, at := range d.recorded {
			if now.Sub(at) > forget {
				delete(d.recorded, id)
			}
		}
	}
	return kept
}

// Abandon makes Run, when its ctx ends, drop the outcomes it has not
// written yet instead of writing them: a simulated crash (tests) must
// leave what a dead process leaves.
func (d *Dispatcher) Abandon() { d.abandoned.Store(true) }

// Run collects acks and records TRIGGERED, and starts the workflows' fires
// Fire hands over, until ctx ends, then records what was already
// acknowledged (with a short fresh deadline) and returns.
// Runs whose publish was never acknowledged stay SCHEDULED in PostgreSQL,
// where recovery finds them.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		d.collect(ctx)
		close(d.marks)
	}()
	go func() {
		defer wg.Done()
		if d.cfg.StartWorkflow != nil {
			d.start(ctx)
		}
	}()
	d.flush(ctx)
	wg.Wait()
	return nil
}

// collect waits for each publish's ack in order; a failed one is retried
// synchronously with backoff (same Msg-Id, so never duplicated).
func (d *Dispatcher) collect(ctx context.Context) {
	for {
		var f inflight
		select {
		case <-ctx.Done():
			return
		case f = <-d.inflight:
		}
		var ack *jetstream.PubAck
		err := f.err
		if err == nil {
			select {
			case ack = <-f.fut.Ok():
			case err = <-f.fut.Err():
			case <-ctx.Done():
				return
			}
		}
		if err != nil {
			if ack, err = d.retry(ctx, f, err); err != nil {
				d.cfg.Trace.Published(f.span, 0, err)
				d.pending.Add(-int64(len(f.runs)))
				if errors.Is(err, errLeaseLost) {
					continue
				}
				return // ctx ended; the runs stay SCHEDULED
			}
		}
		now := time.Now()
		d.cfg.Trace.Published(f.span, ack.Sequence, nil)
		for _, r := range f.runs {
			d.observe(r, now)
			d.record(ctx, runs.Mark{RunID: r.RunID, ScheduledAt: r.ScheduledAt, Epoch: r.Epoch, Status: wire.StatusTriggered, Seq: ack.Sequence, At: now})
		}
		d.pending.Add(-int64(len(f.runs)))
	}
}

// retry publishes f's message again, the same data under the same Msg-Id
// (a trigger batch: the same runs), until it is acknowledged, the lease of
// its runs is lost or ctx ends. cause is the failure of the asynchronous
// publish, the first attempt.
func (d *Dispatcher) retry(ctx context.Context, f inflight, cause error) (ack *jetstream.PubAck, err error) {
	r := &f.runs[0] // a batch's runs share shard and epoch
	fields := []zap.Field{logging.Run(r.RunID), logging.Job(r.JobID), runtrace.LogField(f.span)}
	if r.Batch != 0 {
		fields = append(fields, zap.Int64("batch", r.Batch), zap.Int("runs", len(f.runs)))
	}
	attempt := 0
	err = backoff.Retry(ctx, backoff.Policy{
		Backoff: backoff.Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second},
		OnRetry: func(attempt int, _ time.Duration, err error) {
			errcount.NATS(errcount.PublishTrigger)
			d.log.Warn("publish failed; retrying", append(fields, zap.Int("attempt", attempt), zap.Error(err))...)
		},
	}, func(ctx context.Context) error {
		err := cause
		if attempt++; attempt > 1 {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			m := d.message(f.runs, f.msg.Subject, f.msg.Data)
			spans.CopyHeader(m.Header, f.msg.Header)
			ack, err = d.js.PublishMsg(pctx, m, jetstream.WithMsgID(f.msgID), jetstream.WithExpectStream(stream.Triggers))
			cancel()
		}
		if err != nil && r.Epoch != 0 && d.cfg.Valid != nil && !d.cfg.Valid(r.Shard, r.Epoch) {
			// The shard moved on while the publish failed: its new owner
			// recovers the runs.
			return backoff.Permanent(fmt.Errorf("run %d: %w", r.RunID, errLeaseLost))
		}
		return err
	})
	return ack, err
}

func (d *Dispatcher) observe(r runs.Planned, at time.Time) {
	if d.cfg.Observe != nil {
		d.cfg.Observe(r, at.Sub(r.ScheduledAt))
	}
}

func (d *Dispatcher) record(ctx context.Context, m runs.Mark) {
	select {
	case d.marks <- m:
	case <-ctx.Done():
	}
}

// maxHeld bounds the TRIGGERED marks held back (see
// Config.TriggeredDelay): beyond it the oldest are written at once.
const maxHeld = 200_000

// releasable is how many of the held TRIGGERED marks (in ack order) are
// written now: all of them when all is set (stopping), else those held
// for delay, and the oldest beyond limit whatever their age.
func releasable(held []runs.Mark, now time.Time, delay time.Duration, limit int, all bool) int {
	i := 0
	for i < len(held) && (all || len(held)-i > limit || now.Sub(held[i].At) >= delay) {
		i++
	}
	return i
}

// flush writes marks in batches until the marks channel closes.
// TRIGGERED marks wait in held, in ack order, for Config.TriggeredDelay.
func (d *Dispatcher) flush(ctx context.Context) {
	t := time.NewTicker(d.cfg.FlushInterval)
	defer t.Stop()
	var batch, held []runs.Mark
	var pruned time.Time
	release := func(all bool) {
		now := d.now()
		i := releasable(held, now, d.cfg.TriggeredDelay, maxHeld, all)
		// Once a second, entries for runs this dispatcher never held
		// (published by another scheduler) are forgotten.
		var forget time.Duration
		if now.Sub(pruned) > time.Second {
			forget, pruned = 2*d.cfg.TriggeredDelay+time.Second, now
		}
		batch = append(batch, d.dropRecorded(held[:i], forget)...)
		held = held[i:] // no copy of what stays: append reallocates as it grows
	}
	write := func(c context.Context) {
		if len(batch) == 0 {
			return
		}
		err := backoff.Retry(c, backoff.Policy{
			Backoff: backoff.Backoff{Initial: 50 * time.Millisecond, Max: 2 * time.Second},
			OnRetry: func(_ int, _ time.Duration, err error) {
				errcount.Postgres(errcount.RecordTriggered)
				d.log.Warn("recording TRIGGERED failed; retrying", zap.Int("runs", len(batch)), zap.Error(err))
			},
		}, func(c context.Context) error { return runs.Record(c, d.pool, d.cfg.Owner, batch) })
		if err != nil { // c ended
			d.log.Warn("stopping with runs not recorded TRIGGERED; recovery re-publishes them (deduplicated)",
				zap.Int("runs", len(batch)), zap.Error(err))
			return
		}
		if d.cfg.TestSignals.Flushed.On() {
			ids := make([]int64, len(batch))
			for i, m := range batch {
				ids[i] = m.RunID
			}
			d.cfg.TestSignals.Flushed.Signal(ids)
		}
		batch = batch[:0]
	}
	for {
		select {
		case m, ok := <-d.marks:
			if !ok {
				if d.abandoned.Load() {
					return
				}
				release(true)
				c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				write(c)
				cancel()
				return
			}
			if m.Status == wire.StatusTriggered && d.cfg.TriggeredDelay > 0 {
				held = append(held, m)
				continue
			}
			batch = append(batch, m)
			if len(batch) >= d.cfg.FlushSize {
				write(ctx)
			}
		case <-t.C:
			release(false)
			write(ctx)
		}
	}
}
