// Package lost records runs whose worker died: when a trigger has been
// delivered its consumer's max deliveries times without being acknowledged
// (each worker that took it died or hung past the ack wait), JetStream
// publishes a max-deliveries advisory; JETJOB_ADVISORIES keeps it until a
// scheduler handles it. The monitor then ends the run LOST — by publishing
// an ordinary finished event, so the results applier records it and the
// retry and alarm path follows exactly as for a failure — and deletes the
// spent trigger, which a work-queue stream would otherwise keep forever.
//
// The bound is the workers' ack wait × max deliveries (plus the advisory's
// way here): seconds, not xxl-job's ten minutes.
//
// A spent trigger batch (stream.TriggerBatch) names several runs: the
// monitor publishes the LOST event of every one of them, each under its
// own Msg-Id, before it deletes the message. A worker acknowledges a batch
// only once all its runs have settled, so some of them may have ended
// already: the applier moves a run only to a status of higher rank, so an
// ended run keeps its status.
//
// Only what a scheduler published is believed. With trigger signing on
// (docs/protocol.md, "Signed triggers"), a spent message whose signature
// does not verify with a key the schedulers trust (their own, and the
// previous one while it is rotated) was not made by a scheduler: it is
// deleted and counted (jetjob_foreign_messages_total{source="lost_unsigned"}),
// and the runs it names are left alone, or anyone able to publish on a
// trigger subject could end any run of the group LOST. Workers hand a
// trigger they refuse back (they do not terminate it), so a genuine one
// that no worker would run — every worker of the group given the wrong
// key — runs out of deliveries and ends LOST here with the rest.
package lost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// advisory is the part of JetStream's max-deliveries advisory we use.
type advisory struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// Monitor consumes the advisories.
type Monitor struct {
	js   jetstream.JetStream
	keys *trigsign.Verifier // nil: triggers are not signed, and spent ones are believed
	log  *zap.Logger
	lost *prometheus.CounterVec
}

// New returns a monitor; Run drives it. keys checks the signature of a
// spent trigger before its runs are ended; nil where the schedulers do not
// sign triggers.
func New(js jetstream.JetStream, keys *trigsign.Verifier, log *zap.Logger) *Monitor {
	return &Monitor{js: js, keys: keys, log: log.Named("lost"), lost: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "jetjob_lost_runs_total",
		Help: "Runs ended LOST because their trigger ran out of deliveries (their workers died or hung), by group; for a trigger batch every run of it, including any that had ended already.",
	}, []string{"group"})}
}

// Collector is the monitor's metric, for the scheduler's registry.
func (m *Monitor) Collector() prometheus.Collector { return m.lost }

// Run handles advisories until ctx ends. It returns an error if its
// consumer cannot be set up or ends under it (deleted): its supervisor
// then runs it again, which creates the consumer anew.
func (m *Monitor) Run(ctx context.Context) error {
	cons, err := m.js.CreateOrUpdateConsumer(ctx, stream.Advisories, jetstream.ConsumerConfig{
		Durable:       stream.LostConsumer,
		Description:   "jetjob schedulers record runs whose deliveries ran out as LOST",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
		FilterSubject: stream.MaxDeliveriesSubject,
	})
	if err != nil {
		return fmt.Errorf("lost-run consumer: %w", err)
	}
	triggers, err := m.js.Stream(ctx, stream.Triggers)
	if err != nil {
		return fmt.Errorf("lost-run monitor: %w", err)
	}
	var lastErr atomic.Pointer[error] // what ended the consumer, if it ends
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		if err := m.handle(ctx, triggers, msg.Data()); err != nil {
			if ctx.Err() == nil {
				errcount.NATS(errcount.LostMonitor)
				m.log.Warn("handling a max-deliveries advisory failed; it will be redelivered", zap.Error(err))
				_ = msg.NakWithDelay(2 * time.Second)
			}
			return
		}
		_ = msg.Ack()
	}, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) { lastErr.Store(&err) }))
	if err != nil {
		return fmt.Errorf("lost-run monitor: %w", err)
	}
	defer cc.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-cc.Closed():
		if last := lastErr.Load(); last != nil {
			return fmt.Errorf("lost-run monitor: the consumer ended: %w", *last)
		}
		return errors.New("lost-run monitor: the consumer ended")
	}
}

// handle ends one spent trigger's runs LOST: the one run of a trigger, or
// every run of a trigger batch. Publishing the events is idempotent (a
// fixed Msg-Id per run; and a run already ended does not move), so a
// redelivered advisory, or one handled again after a failure half-way, is
// harmless. The message is deleted only after every event was stored.
func (m *Monitor) handle(ctx context.Context, triggers jetstream.Stream, data []byte) error {
	adv, ok := parseAdvisory(data)
	if !ok {
		m.log.Error("dropping a malformed max-deliveries advisory", zap.ByteString("advisory", data))
		return nil
	}
	raw, err := triggers.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // acknowledged or deleted meanwhile: nothing is lost
	}
	if err != nil {
		return fmt.Errorf("read trigger %d: %w", adv.StreamSeq, err)
	}
	if err := m.verify(raw.Subject, raw.Header, raw.Data); err != nil {
		foreign.Refused(foreign.LostUnsigned)
		m.log.Error("spent trigger not signed by a key the schedulers trust: its runs are not ended; deleting it",
			zap.String("subject", raw.Subject), zap.Uint64("stream_seq", adv.StreamSeq),
			zap.String("key_id", raw.Header.Get(trigsign.HeaderKey)), zap.String("reason", trigsign.Reason(err)), zap.Error(err))
		return m.deleteSpent(ctx, triggers, adv.StreamSeq)
	}
	trigs := spentRuns(raw.Subject, raw.Data, func(msg string, err error) {
		// Not a run: malformed triggers are terminated by workers, but be
		// safe and drop what names no run.
		m.log.Error(msg, zap.String("subject", raw.Subject), zap.Uint64("stream_seq", adv.StreamSeq), zap.Error(err))
	})
	at := time.Now()
	for _, trig := range trigs {
		ev, subject, msgID := lostEvent(trig, adv.Deliveries, at)
		body, err := wire.EncodeEvents(ev)
		if err != nil {
			return fmt.Errorf("encode LOST of run %d: %w", trig.RunID, err)
		}
		if _, err := m.js.Publish(ctx, subject, body, jetstream.WithMsgID(msgID)); err != nil {
			return fmt.Errorf("publish LOST of run %d: %w", trig.RunID, err)
		}
		m.lost.WithLabelValues(trig.Group).Inc()
		m.log.Warn("run lost", logging.Run(trig.RunID), logging.Job(trig.JobID), logging.Group(trig.Group),
			zap.Uint64("deliveries", adv.Deliveries), zap.Int("runs_in_message", len(trigs)))
	}
	return m.deleteSpent(ctx, triggers, adv.StreamSeq)
}

// deleteSpent deletes the spent trigger at seq, which a work-queue stream
// would otherwise keep forever.
func (m *Monitor) deleteSpent(ctx context.Context, triggers jetstream.Stream, seq uint64) error {
	if err := triggers.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("delete spent trigger %d: %w", seq, err)
	}
	return nil
}

// verify checks that a scheduler signed the spent message on subject, as
// the kind of message (lone trigger or batch) its subject says, for the
// group its subject names. Without keys every message passes; a message
// on no trigger subject passes too, and spentRuns drops it.
func (m *Monitor) verify(subject string, h nats.Header, data []byte) error {
	if m.keys == nil {
		return nil
	}
	group, ok := stream.ParseTrigger(subject)
	if !ok {
		return nil
	}
	_, batch := stream.ParseTriggerBatch(subject)
	return m.keys.Verify(h, group, batch, data)
}

// spentRuns returns the triggers of a spent message on subject: its one
// trigger, or every valid line of a trigger batch. What names no run is
// reported to bad and left out, and so is a trigger of another group than
// the subject's (counted, foreign.Lost): only schedulers publish triggers,
// and always on their run's group's subjects, so such a trigger was
// forged, and its run is none of this subject's to end.
func spentRuns(subject string, data []byte, bad func(msg string, err error)) []*wire.Trigger {
	group, ok := stream.ParseTrigger(subject)
	if !ok {
		bad("spent message is not on a trigger subject; deleting it", fmt.Errorf("subject %q", subject))
		return nil
	}
	own := func(trig *wire.Trigger, what string) bool {
		if trig.Group == group {
			return true
		}
		foreign.Refused(foreign.Lost)
		bad(what+" names another group than its subject's; its run is not ended",
			fmt.Errorf("run %d of group %q on a subject of group %q", trig.RunID, trig.Group, group))
		return false
	}
	if _, ok := stream.ParseTriggerBatch(subject); !ok {
		trig, err := wire.DecodeTrigger(data)
		if err != nil {
			bad("spent trigger is not a valid trigger; deleting it", err)
			return nil
		}
		if !own(trig, "spent trigger") {
			return nil
		}
		return []*wire.Trigger{trig}
	}
	lines, err := wire.SplitTriggerBatch(data)
	if err != nil {
		bad("spent trigger batch cannot be read; deleting it", err)
		return nil
	}
	out := make([]*wire.Trigger, 0, len(lines))
	for i, line := range lines {
		trig, err := wire.DecodeTrigger(line)
		if err != nil {
			bad(fmt.Sprintf("line %d of a spent trigger batch is not a valid trigger; its run (if any) was failed by the worker", i+1), err)
			continue
		}
		if own(trig, fmt.Sprintf("line %d of a spent trigger batch", i+1)) {
			out = append(out, trig)
		}
	}
	return out
}

// parseAdvisory reads a max-deliveries advisory; false when it is
// malformed or names no stream sequence (nothing to look up: dropped).
func parseAdvisory(data []byte) (advisory, bool) {
	var adv advisory
	if err := json.Unmarshal(data, &adv); err != nil || adv.StreamSeq == 0 {
		return advisory{}, false
	}
	return adv, true
}

// lostEvent is the finished event that ends trig's run LOST at at, after
// deliveries deliveries; subject is its group's events subject (the
// applier takes an event only for a run of the group its subject names)
// and msgID is fixed per run, so a redelivered advisory publishes nothing
// new.
func lostEvent(trig *wire.Trigger, deliveries uint64, at time.Time) (ev wire.Event, subject, msgID string) {
	ev = wire.Event{Kind: wire.EventFinished, RunID: trig.RunID, JobID: trig.JobID, Status: wire.StatusLost, At: at,
		ScheduledAt: trig.ScheduledAt,
		Message:     fmt.Sprintf("lost: delivered %d times (the consumer's max deliveries) and never acknowledged: the worker(s) running it died or stopped responding", deliveries)}
	return ev, stream.Event(trig.Group), fmt.Sprintf("run-%d-lost", trig.RunID)
}
