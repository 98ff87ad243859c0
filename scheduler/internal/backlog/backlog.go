// Package backlog measures, per group, the triggers that wait in
// JETJOB_TRIGGERS for a worker, and says when a group falls behind.
//
// Why the stream and not PostgreSQL: a run reads TRIGGERED (or still
// SCHEDULED, while dispatch holds its write back) whether its trigger waits
// in the stream or runs; only JetStream knows which triggers no worker has
// taken yet. Its consumers' state says so without reading the triggers.
//
// Each group has a shared durable consumer on jetjob.trigger.<group>.any,
// one on its trigger batches, jetjob.trigger.<group>.batch, and one directed
// consumer per worker on jetjob.trigger.<group>.w.<id>. Summed over the
// group's consumers, and counting runs, not messages (a trigger batch
// counts as the runs it carries, see below):
//
//   - Pending is NumPending: triggers stored and never delivered. No worker
//     holds them and none has a slot for them: this is the backlog. A work
//     queue keeps only unacknowledged triggers, so Pending is also what will
//     still be run (or expired by misfire policy) once workers catch up.
//   - InFlight is NumAckPending: delivered and not yet acknowledged. A worker
//     acknowledges a trigger only after the run's final event is stored, so
//     this is the runs executing, the runs a block strategy holds back
//     (serial: waiting for the job lock, kept in progress), and triggers of a
//     worker that died, waiting for the ack wait before their redelivery.
//     They are not in Pending: each has, or had, a worker slot.
//   - Redelivered is NumRedelivered: of InFlight, the triggers delivered more
//     than once (a worker died with them, or handed them back when it
//     stopped). JetStream does not tell apart those still waiting for their
//     redelivery, so they are reported here, apart from Pending; it should
//     be 0 and grows when workers crash.
//
// Triggers on a subject no consumer reads are pending too (a group whose
// first worker never started, a directed consumer the server removed after
// an hour idle): their count is the stream's per-subject count.
//
// The age of the oldest pending trigger is how long the first undelivered
// one has waited in the stream: for a consumer, the first message of its
// subject after the last stream sequence it delivered (one "next message
// for subject" get), for a subject without a consumer its first message.
// Ages are differences of two NATS server times (the time of the info
// answer minus the message's stored time), so skew between the scheduler's
// clock and NATS's does not enter. With fires published on time the age is
// how late the oldest waiting trigger will start; past the misfire threshold
// those triggers reach a worker late and their jobs' misfire policy applies
// (skip: EXPIRED). A trigger moved from a dead worker's subject to the
// shared queue (scheduler/internal/reroute) is a new message: its wait starts again.
//
// One sample costs one stream info (the JETJOB_TRIGGERS subjects that hold
// triggers), one consumer listing (256 consumers a page) and one message get
// per consumer or subject with pending triggers: nothing per trigger, so a
// backlog of a million costs what a backlog of one does. Every scheduler
// samples (it only reads), every second by default: planning leaves out
// the jobs of a group whose workers are behind (package planner, admit.go),
// and reads it from the last sample.
//
// Trigger batches: a consumer's figures count messages, and a batch message
// carries several runs (one per line). So the stored messages of a group's
// batch subject are read, up to maxBatchReads a sample, first those
// delivered and not acknowledged (in flight), then the pending ones, and
// their lines counted; past that bound the rest are estimated at the mean
// runs per message of those read. Redelivered batch messages are counted
// at that mean too (JetStream does not say which messages they are).
package backlog

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
)

// DefaultInterval is the default time between samples.
const DefaultInterval = time.Second

// Config configures a Sampler. Zero values mean the defaults.
type Config struct {
	// Interval between samples (default 1 s).
	Interval time.Duration
	// WarnAfter is the age of a group's oldest pending trigger past which
	// the sampler logs a warning (once per episode, then once at info when
	// the group recovers). The scheduler sets it to its misfire threshold:
	// older triggers reach their worker as misfires. Default 5 s.
	WarnAfter time.Duration
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	switch {
	case c.Interval < 0:
		return fmt.Errorf("backlog interval %s: must not be negative", c.Interval)
	case c.WarnAfter < 0:
		return fmt.Errorf("backlog warn-after %s: must not be negative", c.WarnAfter)
	}
	return nil
}

func (c Config) withDefaults() Config {
	c.Interval = cmp.Or(c.Interval, DefaultInterval)
	c.WarnAfter = cmp.Or(c.WarnAfter, 5*time.Second)
	return c
}

// Group is one group's backlog at a sample (see the package doc), in runs:
// a trigger batch counts as the runs it carries.
type Group struct {
	Group       string
	Pending     int64
	InFlight    int64
	Redelivered int64
	// OldestPendingAt is when the oldest pending trigger was stored (NATS
	// server time); zero when nothing is pending.
	OldestPendingAt time.Time
	// OldestPending is its age at the sample; 0 when nothing is pending.
	OldestPending time.Duration
}

// Snapshot is one sample of every group that has trigger consumers or
// stored triggers.
type Snapshot struct {
	// At is when the sample was taken (this process's clock); zero before
	// the first sample succeeded.
	At     time.Time
	Groups []Group // by group name
	// Events is the schedulers' own backlog, sampled alongside.
	Events Events
}

// Events is what waits in JETJOB_EVENTS: run events workers stored that no
// scheduler has applied to PostgreSQL yet. The stream is a work queue, so
// it keeps exactly those, and one stream info says how many and since
// when. It grows while PostgreSQL is down or the appliers fall behind;
// the runs' records are then stale by OldestUnapplied.
type Events struct {
	Unapplied int64
	// OldestUnapplied is the age of the first of them (NATS server times
	// on both ends, like the triggers' ages); 0 when none waits.
	OldestUnapplied time.Duration
	// FirstSeq is the first one's stream sequence, and Still how long it
	// has been the first (since a sample saw another, or none): an
	// applier that makes progress moves it; one that is away does not.
	FirstSeq uint64
	Still    time.Duration
}

// StallAfter is how long the first unapplied event may stay the first
// before the applier counts as away rather than slow (Events.Lag). One
// batch applied under a loaded PostgreSQL takes up to a few hundred
// milliseconds.
const StallAfter = 5 * time.Second

// Lag is how far the events applier is behind, for planning's
// backpressure (package planner, admit.go): the age of the oldest event
// not yet applied, while the applier makes progress (Still under
// StallAfter), else 0. Planning waits for an applier that is slow, never
// for one that is away (no scheduler holds shard 0 and no stand-in has
// taken over yet, the applier is being restarted, or a message waits for
// its redelivery after the process that held it died): that would stop
// every fire for what only delays the recording of results, which wait
// durably in the stream.
func (e Events) Lag() time.Duration {
	if e.Still >= StallAfter {
		return 0
	}
	return e.OldestUnapplied
}

// eventsWatch remembers, between samples, since when the first unapplied
// event has been the first (Events.Still).
type eventsWatch struct {
	first uint64
	since time.Time
}

// observe sets ev.Still for a sample taken at at.
func (w *eventsWatch) observe(ev *Events, at time.Time) {
	if ev.Unapplied == 0 || ev.FirstSeq != w.first || w.since.IsZero() {
		// Empty (the next event takes the first sequence, which has not
		// moved then, and must not count as still), or moved.
		w.first, w.since = ev.FirstSeq, at
	}
	if ev.Unapplied > 0 {
		ev.Still = at.Sub(w.since)
	}
}

// Group returns the figures of one group, ok false if the sample did not
// see it (no consumer and no stored trigger: nothing is pending).
func (s Snapshot) Group(name string) (Group, bool) {
	i := sort.Search(len(s.Groups), func(i int) bool { return s.Groups[i].Group >= name })
	if i < len(s.Groups) && s.Groups[i].Group == name {
		return s.Groups[i], true
	}
	return Group{}, false
}

// Deps are what a Sampler reads and whom it tells: given to New and fixed
// from then on, never set on a running component. Config holds only what an
// operator tunes.
type Deps struct {
	// JS reads the streams' and consumers' state.
	JS jetstream.JetStream
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Sampled, when set, is called after each successful sample with its
	// snapshot (a test signal).
	Sampled func(Snapshot)
}

// Sampler samples the backlog every Interval; it is safe for concurrent
// use.
type Sampler struct {
	cfg     Config
	js      jetstream.JetStream
	log     *zap.Logger
	sampled func(Snapshot)

	mu      sync.Mutex
	latest  Snapshot
	watch   watch
	events  eventsWatch
	failing bool
}

// New validates cfg and returns a sampler; Run samples.
func New(cfg Config, deps Deps) (*Sampler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Sampler{cfg: cfg, js: deps.JS, log: logging.Named(deps.Log, "backlog"), sampled: deps.Sampled,
		watch: watch{after: cfg.WarnAfter, since: map[string]time.Time{}}}, nil
}

// Latest returns the last successful sample (zero before the first).
func (s *Sampler) Latest() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest
}

// Interval is the time between samples.
func (s *Sampler) Interval() time.Duration { return s.cfg.Interval }

// Run samples at once and then every Interval until ctx ends. A failed
// sample (NATS unreachable) keeps the last one and is retried at the next
// tick.
func (s *Sampler) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Sampler) tick(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval, 5*time.Second))
	defer cancel()
	snap, err := Sample(sctx, s.js)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		errcount.NATS(errcount.BacklogSample)
		s.mu.Lock()
		first := !s.failing
		s.failing = true
		s.mu.Unlock()
		if first { // once per outage, not every tick
			s.log.Warn("sampling the trigger backlog failed; keeping the last sample", zap.Error(err))
		}
		return
	}
	s.mu.Lock()
	if s.failing {
		s.log.Info("sampling the trigger backlog works again")
	}
	s.failing = false
	s.events.observe(&snap.Events, snap.At)
	s.latest = snap
	changes := s.watch.observe(snap)
	s.mu.Unlock()
	for _, c := range changes {
		s.logChange(c)
	}
	if s.sampled != nil {
		s.sampled(snap)
	}
}

func (s *Sampler) logChange(c change) {
	fields := []zap.Field{logging.Group(c.group.Group), zap.Int64("pending", c.group.Pending),
		zap.Duration("oldest_pending", c.group.OldestPending), zap.Int64("in_flight", c.group.InFlight)}
	if c.began {
		s.log.Warn("group is falling behind: its oldest pending trigger waited longer than the misfire threshold; add worker slots, or hosts if its runs are CPU-bound (docs/operations.md: Sizing workers)",
			append(fields, zap.Duration("misfire_threshold", s.cfg.WarnAfter))...)
		return
	}
	s.log.Info("group caught up: its oldest pending trigger is within the misfire threshold again",
		append(fields, zap.Duration("behind_for", c.lasted))...)
}

// watch remembers which groups are in a backlog episode (oldest pending
// trigger older than after), so that each episode is logged when it starts
// and when it ends, not at every sample.
type watch struct {
	after time.Duration
	since map[string]time.Time // group → sample that started its episode
}

// change is the start or the end of a group's episode.
type change struct {
	group  Group
	began  bool          // false: recovered
	lasted time.Duration // recovered: since the episode's first sample
}

// observe compares a sample with the groups' episodes. A group the sample
// no longer sees has nothing pending: it recovered.
func (w *watch) observe(snap Snapshot) []change {
	var out []change
	seen := make(map[string]bool, len(snap.Groups))
	for _, g := range snap.Groups {
		seen[g.Group] = true
		start, in := w.since[g.Group]
		behind := g.OldestPending > w.after
		switch {
		case behind && !in:
			w.since[g.Group] = snap.At
			out = append(out, change{group: g, began: true})
		case !behind && in:
			delete(w.since, g.Group)
			out = append(out, change{group: g, lasted: snap.At.Sub(start)})
		}
	}
	var gone []string
	for name := range w.since {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		out = append(out, change{group: Group{Group: name}, lasted: snap.At.Sub(w.since[name])})
		delete(w.since, name)
	}
	return out
}

// reader is what one consumer (or, for a subject no consumer reads, the
// stream itself) reports for one trigger subject.
type reader struct {
	group, subject string
	pending        int64
	inFlight       int64
	redelivered    int64
	// from is the first stream sequence that may hold a pending trigger
	// of subject; at is the server's time of the figures.
	from uint64
	at   time.Time
	// batch marks a trigger-batch subject, whose figures above count
	// messages until countBatches turns them into runs; ackFloor is the
	// last sequence its consumer has seen acknowledged (every message
	// after it was delivered or is pending).
	batch    bool
	ackFloor uint64
}

// Sample reads the backlog of every group from JETJOB_TRIGGERS once.
func Sample(ctx context.Context, js jetstream.JetStream) (Snapshot, error) {
	at := time.Now()
	st, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		return Snapshot{}, fmt.Errorf("backlog: stream %s: %w", stream.Triggers, err)
	}
	readers := map[string]*reader{} // by subject
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		r, ok := consumerReader(ci)
		if !ok {
			continue
		}
		readers[r.subject] = r
	}
	if err := lister.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("backlog: list consumers of %s: %w", stream.Triggers, err)
	}
	// Subjects that hold triggers but have no consumer: every stored
	// trigger there is pending.
	info, err := st.Info(ctx, jetstream.WithSubjectFilter("jetjob.trigger.>"))
	if err != nil {
		return Snapshot{}, fmt.Errorf("backlog: subjects of %s: %w", stream.Triggers, err)
	}
	for subject, n := range info.State.Subjects {
		if _, ok := readers[subject]; ok || n == 0 {
			continue
		}
		group, batch, ok := triggerGroup(subject)
		if !ok {
			continue
		}
		// Every stored message is pending: none was delivered.
		readers[subject] = &reader{group: group, subject: subject, pending: int64(n), from: info.State.FirstSeq, at: info.TimeStamp,
			batch: batch, ackFloor: max(info.State.FirstSeq, 1) - 1}
	}

	groups := map[string]*Group{}
	for _, r := range readers {
		if r.batch {
			if err := countBatches(ctx, st, r); err != nil {
				return Snapshot{}, err
			}
		}
		g := groups[r.group]
		if g == nil {
			g = &Group{Group: r.group}
			groups[r.group] = g
		}
		g.Pending += r.pending
		g.InFlight += r.inFlight
		g.Redelivered += r.redelivered
		if r.pending == 0 {
			continue
		}
		stored, age, err := oldest(ctx, st, r, at)
		if err != nil {
			return Snapshot{}, err
		}
		if !stored.IsZero() && (g.OldestPendingAt.IsZero() || stored.Before(g.OldestPendingAt)) {
			g.OldestPendingAt, g.OldestPending = stored, age
		}
	}
	events, err := sampleEvents(ctx, js, at)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{At: at, Groups: make([]Group, 0, len(groups)), Events: events}
	for _, g := range groups {
		snap.Groups = append(snap.Groups, *g)
	}
	sort.Slice(snap.Groups, func(i, j int) bool { return snap.Groups[i].Group < snap.Groups[j].Group })
	return snap, nil
}

// sampleEvents reads JETJOB_EVENTS's state (one stream info).
func sampleEvents(ctx context.Context, js jetstream.JetStream, local time.Time) (Events, error) {
	st, err := js.Stream(ctx, stream.Events)
	if err != nil {
		return Events{}, fmt.Errorf("backlog: stream %s: %w", stream.Events, err)
	}
	info := st.CachedInfo()
	ev := Events{Unapplied: int64(info.State.Msgs), FirstSeq: info.State.FirstSeq}
	if ev.Unapplied > 0 && !info.State.FirstTime.IsZero() {
		now := info.TimeStamp
		if now.IsZero() { // a server too old to date its answers
			now = local
		}
		ev.OldestUnapplied = max(now.Sub(info.State.FirstTime), 0)
	}
	return ev, nil
}

// consumerReader reads a trigger consumer's figures, ok false for a
// consumer that is not one of jetjob's (its durable name is not the one
// its filter subject implies).
func consumerReader(ci *jetstream.ConsumerInfo) (*reader, bool) {
	if ci == nil {
		return nil, false
	}
	subject := ci.Config.FilterSubject
	var group, want string
	batch := false
	if g, ok := stream.ParseTriggerAny(subject); ok {
		group, want = g, stream.AnyConsumer(g)
	} else if g, ok := stream.ParseTriggerBatch(subject); ok {
		group, want, batch = g, stream.BatchConsumer(g), true
	} else if g, id, ok := stream.ParseTriggerWorker(subject); ok {
		group, want = g, stream.WorkerConsumer(g, id)
	} else {
		return nil, false
	}
	if ci.Name != want {
		return nil, false
	}
	return &reader{group: group, subject: subject, pending: int64(ci.NumPending), inFlight: int64(ci.NumAckPending),
		redelivered: int64(ci.NumRedelivered), from: ci.Delivered.Stream + 1, at: ci.TimeStamp,
		batch: batch, ackFloor: ci.AckFloor.Stream}, true
}

// triggerGroup returns the group of a trigger subject, and whether it is
// the group's trigger-batch subject.
func triggerGroup(subject string) (group string, batch, ok bool) {
	if g, ok := stream.ParseTriggerAny(subject); ok {
		return g, false, true
	}
	if g, ok := stream.ParseTriggerBatch(subject); ok {
		return g, true, true
	}
	g, _, ok := stream.ParseTriggerWorker(subject)
	return g, false, ok
}

// maxBatchReads bounds the batch messages read per subject and sample to
// count their runs (see the package doc).
const maxBatchReads = 64

// countBatches turns r's figures, which count messages, into runs: it
// reads r's stored messages after its ack floor (in a work queue only the
// unacknowledged are stored: before r.from in flight, from it pending),
// counts the lines of up to maxBatchReads of them, and estimates the rest
// at the mean of those read.
func countBatches(ctx context.Context, st jetstream.Stream, r *reader) error {
	if r.pending+r.inFlight == 0 {
		return nil
	}
	var read, runs, pendingRead, pendingRuns, inFlightRead, inFlightRuns int64
	seq := r.ackFloor + 1
	for read < maxBatchReads {
		msg, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(r.subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("backlog: count the runs of %s: %w", r.subject, err)
		}
		n := int64(bytes.Count(msg.Data, []byte{'\n'}) + 1)
		read, runs = read+1, runs+n
		if msg.Sequence < r.from {
			inFlightRead, inFlightRuns = inFlightRead+1, inFlightRuns+n
		} else {
			pendingRead, pendingRuns = pendingRead+1, pendingRuns+n
		}
		seq = msg.Sequence + 1
	}
	if read == 0 {
		r.pending, r.inFlight, r.redelivered = 0, 0, 0 // taken meanwhile
		return nil
	}
	estimate := func(msgs, readMsgs, readRuns int64) int64 {
		if msgs <= readMsgs || read < maxBatchReads {
			return readRuns // all read: exact
		}
		return readRuns + (msgs-readMsgs)*runs/read
	}
	inFlight := estimate(r.inFlight, inFlightRead, inFlightRuns)
	if r.redelivered > 0 {
		perMsg := float64(runs) / float64(read)
		if inFlightRead > 0 {
			perMsg = float64(inFlightRuns) / float64(inFlightRead)
		}
		r.redelivered = int64(math.Round(float64(r.redelivered) * perMsg))
	}
	r.pending, r.inFlight = estimate(r.pending, pendingRead, pendingRuns), inFlight
	return nil
}

// oldest returns when r's first pending trigger was stored and its age at
// r's figures; zero if it is gone meanwhile (taken or moved).
func oldest(ctx context.Context, st jetstream.Stream, r *reader, local time.Time) (time.Time, time.Duration, error) {
	msg, err := st.GetMsg(ctx, max(r.from, 1), jetstream.WithGetMsgSubject(r.subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return time.Time{}, 0, nil
	}
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("backlog: first pending trigger of %s: %w", r.subject, err)
	}
	now := r.at
	if now.IsZero() { // a server too old to date its answers
		now = local
	}
	return msg.Time, max(now.Sub(msg.Time), 0), nil
}
