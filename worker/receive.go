package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Receiving triggers: what happens to each delivered trigger, from its
// receipt to its ack, hand-back or termination (docs/protocol.md, "The
// worker's side"). fetch.go delivers them here; exec.go runs them.

// process owns one delivered trigger from receipt to its ack, nak or term,
// and the slot of lane l it arrived on: held throughout, but while a late
// trigger is judged (judge.go). ctx is the fetch loop's: it ends when the
// worker stops taking triggers.
func (w *Worker) process(ctx context.Context, l *lane, msg jetstream.Msg) {
	defer w.procs.Done()
	seen := laneRun{lane: l.name}
	defer func() { w.signals.finished.Signal(seen) }() // once the slot is free
	slot := w.holdSlot(l)
	defer slot.end()

	delivery, origin := uint64(1), stored{}
	if md, err := msg.Metadata(); err == nil {
		delivery = md.NumDelivered
		origin = stored{seq: md.Sequence.Stream, at: md.Timestamp.UTC()}
	}
	w.metrics.pickedUp(l.name, delivery, origin.at)
	trig, err := wire.DecodeTrigger(msg.Data())
	if err == nil && trig.Group != w.cfg.Group {
		err = fmt.Errorf("invalid trigger: group %q delivered to a worker of group %q", trig.Group, w.cfg.Group)
	}
	if w.signals.admitted.On() || w.signals.finished.On() {
		seen.run, _ = readIDs(trig, msg.Data())
		w.signals.admitted.Signal(seen)
	}
	if err != nil {
		w.reject(msg, trig, origin, err)
		return
	}
	r := w.claim(trig, msg, delivery, origin, slot)
	if r == nil {
		return
	}
	w.trace.begin(r, msg)
	reported := r.execute(ctx)
	w.trace.end(r, reported)
	w.runs.remove(r.trig.RunID, reported, w.recentTTL())
}

// claim registers a new execution of trig's run, or returns nil when this
// process already has one: a delivery of a run executing here joins it, and
// a delivery of a run finished here lately is acked without running again.
func (w *Worker) claim(trig *wire.Trigger, msg jetstream.Msg, delivery uint64, origin stored, slot *slotHold) *run {
	// WithLazy: most runs never log, and encoding the fields up front was
	// a few percent of a busy worker's CPU.
	log := w.log.WithLazy(logging.Run(trig.RunID), logging.Job(trig.JobID), zap.Uint64("delivery", delivery))
	r, how := w.runs.claim(trig.RunID, msg, func() *run {
		r := newRun(w, trig, msg, delivery, origin, log)
		r.mayStart = mayHaveStarted(msg, delivery)
		r.slot = slot
		return r
	})
	switch how {
	case claimedSettling:
		// The execution is settling its deliveries right now; once it
		// has, a redelivery is either acked as finished or runs anew.
		w.handBack(msg, log, "run settling here")
	case claimedJoined:
		log.Warn("trigger delivered again while its run executes here: joined, not started twice")
		_ = msg.InProgress()
	case claimedFinished:
		log.Warn("trigger delivered again after its run finished here: acknowledged without running again")
		if err := w.ackMsg(msg); err != nil {
			log.Warn("ack of repeated trigger failed", zap.Error(err))
		}
	}
	return r
}

// recentTTL is how long a finished run id is remembered: long enough to
// catch a redelivery that crossed the ack, or a re-publish of the trigger
// within the stream's duplicate window.
func (w *Worker) recentTTL() time.Duration {
	dw := w.streams.DuplicateWindow
	if dw == 0 {
		dw = stream.DefaultDuplicateWindow
	}
	return max(2*w.cfg.AckWait, dw)
}

// reject handles a trigger that cannot run: reported FAILED when its run
// can be identified, and terminated in every case, since a redelivery would
// be just as invalid.
func (w *Worker) reject(msg jetstream.Msg, trig *wire.Trigger, origin stored, cause error) {
	runID, jobID := readIDs(trig, msg.Data())
	log := w.log.With(logging.Run(runID), logging.Job(jobID), zap.String("subject", msg.Subject()),
		zap.Uint64("stream_seq", origin.seq))
	if runID > 0 && jobID > 0 {
		ev := wire.Event{
			Kind: wire.EventFinished, RunID: runID, JobID: jobID, WorkerID: w.cfg.ID,
			Status: wire.StatusFailed, Message: wire.TruncateMessage(cause.Error()), At: time.Now().UTC(),
			TriggerSeq: origin.seq, TriggeredAt: origin.at,
		}
		if trig != nil {
			ev.ScheduledAt = trig.ScheduledAt
		}
		stop := w.keepAlive(log, func() []jetstream.Msg { return []jetstream.Msg{msg} })
		err := w.publishEvent(ev, "")
		stop()
		if err != nil {
			log.Error("rejection of an invalid trigger not published", zap.Error(err), zap.NamedError("reason", cause))
			w.handBack(msg, log, "rejection not published")
			return
		}
		w.metrics.finished(handlerInvalid, wire.StatusFailed)
		log.Error("invalid trigger: run reported FAILED", zap.Error(cause))
	} else {
		log.Error("malformed trigger dropped: it names no run to report on", zap.Error(cause),
			zap.ByteString("data", msg.Data()[:min(len(msg.Data()), 512)]))
	}
	if err := msg.TermWithReason("invalid trigger"); err != nil {
		log.Warn("terminating invalid trigger failed", zap.Error(err))
	}
}

// readIDs gets a run and job id from whatever part of a bad trigger can be
// read: the decoded trigger if it was valid JSON, else the two fields alone
// (a type error elsewhere in the message does not hide them).
func readIDs(trig *wire.Trigger, data []byte) (runID, jobID int64) {
	if trig != nil {
		return trig.RunID, trig.JobID
	}
	var ids struct {
		RunID int64 `json:"run_id"`
		JobID int64 `json:"job_id"`
	}
	_ = json.Unmarshal(data, &ids)
	return ids.RunID, ids.JobID
}

// keepAlive sends in-progress acks for msgs every AckWait/3 until the
// returned stop is called; once stop returns, none is sent any more. A timer,
// not a goroutine: most runs end long before the first tick.
func (w *Worker) keepAlive(log *zap.Logger, msgs func() []jetstream.Msg) (stop func()) {
	var mu sync.Mutex // held while acks are sent, so that stop waits for them
	stopped := false
	period := w.cfg.AckWait / 3
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(period, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, m := range msgs() {
			if err := m.InProgress(); err != nil {
				log.Warn("in-progress ack failed", zap.Error(err))
			}
		}
		t.Reset(period)
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}

// ackAttempts bounds ack retries: a double ack whose reply was lost is not
// answered again by the server (the message is no longer pending), so
// retrying forever would never end. A trigger whose ack really got lost is
// redelivered and recognised as finished here (see claim).
const ackAttempts = 3

// ackAttemptTimeout bounds one ack attempt.
const ackAttemptTimeout = 5 * time.Second

// ackMsg acknowledges msg and waits for the server to confirm it, unless
// a stop gives up on results first (resultsEnd).
func (w *Worker) ackMsg(msg jetstream.Msg) error {
	ctx, cancel := w.resultsEnd.bind(context.Background())
	defer cancel(nil)
	err := backoff.Retry(ctx, backoff.Policy{
		Backoff:     backoff.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2},
		MaxAttempts: ackAttempts,
	}, func(ctx context.Context) error {
		err := doubleAck(ctx, msg)
		if errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return nil // an earlier attempt's ack did arrive
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("ack trigger: %w", err)
	}
	return nil
}

// doubleAck is one attempt at acknowledging msg, bounded by
// ackAttemptTimeout. A run of a trigger batch settles only itself, without
// a round trip, but for the last, whose settlement of the delivered message
// bounds its own ack (batchMsg.settleMsg): so a batch costs one deadline
// timer, not one per run (they were 2 % of a busy worker's CPU).
func doubleAck(ctx context.Context, msg jetstream.Msg) error {
	if _, ok := msg.(*batchMember); ok {
		return msg.DoubleAck(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, ackAttemptTimeout)
	defer cancel()
	return msg.DoubleAck(actx)
}

// handBack returns a trigger to the group for another worker. The delay
// lets this worker's open pull requests expire first (fetch.go), so the
// trigger does not bounce back here and burn a delivery.
func (w *Worker) handBack(msg jetstream.Msg, log *zap.Logger, reason string) {
	if err := msg.NakWithDelay(w.handBackDelay(time.Now())); err != nil {
		log.Warn("handing trigger back failed; it will be redelivered after the ack wait",
			zap.String("reason", reason), zap.Error(err))
		return
	}
	log.Info("trigger handed back", zap.String("reason", reason))
}

// handBackDelay is how long a trigger handed back now must wait before it
// is offered again: until every pull request this worker has open expires
// (plus a little, for the server to see them expire), or not at all when it
// has none. A stopping worker sends no new ones, so the triggers it hands
// back reach a live worker as soon as they can.
func (w *Worker) handBackDelay(now time.Time) time.Duration {
	var d time.Duration
	for _, l := range w.lanes {
		d = max(d, l.openFor(now))
	}
	if d == 0 {
		return 0
	}
	return d + handBackMargin
}

// handBackMargin covers the time between a pull request's expiry and the
// server dropping it.
const handBackMargin = 50 * time.Millisecond
