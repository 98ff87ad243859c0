package worker

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/logging"
	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// process owns one delivered trigger from receipt to its ack, nak or term,
// and the slot of lane l it arrived on.
func (w *Worker) process(l *lane, msg jetstream.Msg) {
	defer w.runs.Done()
	defer l.release(1)
	defer w.metrics.slotTaken(l.name)()

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
	if err != nil {
		w.reject(msg, trig, origin, err)
		return
	}
	r := w.claim(trig, msg, delivery, origin)
	if r == nil {
		return
	}
	w.trace.begin(r, msg)
	reported := r.execute()
	w.trace.end(r, reported)
	w.release(r, reported)
}

// claim registers a new execution of trig's run, or returns nil when this
// process already has one: a delivery of a run executing here joins it, and
// a delivery of a run finished here lately is acked without running again.
func (w *Worker) claim(trig *wire.Trigger, msg jetstream.Msg, delivery uint64, origin stored) *run {
	// WithLazy: most runs never log, and encoding the fields up front was
	// a few percent of a busy worker's CPU.
	log := w.log.WithLazy(logging.Run(trig.RunID), logging.Job(trig.JobID), zap.Uint64("delivery", delivery))
	w.mu.Lock()
	if r, ok := w.active[trig.RunID]; ok {
		joined := r.join(msg)
		w.mu.Unlock()
		if !joined {
			// The execution is settling its deliveries right now; once it
			// has, a redelivery is either acked as finished or runs anew.
			w.handBack(msg, log, "run settling here")
			return nil
		}
		log.Warn("trigger delivered again while its run executes here: joined, not started twice")
		_ = msg.InProgress()
		return nil
	}
	if _, ok := w.recent[trig.RunID]; ok {
		w.mu.Unlock()
		log.Warn("trigger delivered again after its run finished here: acknowledged without running again")
		if err := w.ackMsg(w.pubCtx, msg); err != nil {
			log.Warn("ack of repeated trigger failed", zap.Error(err))
		}
		return nil
	}
	r := newRun(w, trig, msg, delivery, origin, log)
	r.mayStart = mayHaveStarted(msg, delivery)
	w.active[trig.RunID] = r
	w.mu.Unlock()
	return r
}

// recentTTL is how long a finished run id is remembered: long enough to
// catch a redelivery that crossed the ack, or a re-publish of the trigger
// within the stream's duplicate window.
func (w *Worker) recentTTL() time.Duration {
	dw := w.cfg.Streams.DuplicateWindow
	if dw == 0 {
		dw = stream.DefaultDuplicateWindow
	}
	return max(2*w.cfg.AckWait, dw)
}

// release ends an execution; reported says its result was published.
func (w *Worker) release(r *run, reported bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.active, r.trig.RunID)
	if reported {
		w.recent[r.trig.RunID] = now
		w.recentQ = append(w.recentQ, recentRun{r.trig.RunID, now})
	}
	ttl := w.recentTTL()
	for len(w.recentQ) > 0 && now.Sub(w.recentQ[0].at) > ttl {
		delete(w.recent, w.recentQ[0].id)
		w.recentQ = w.recentQ[1:]
	}
}

type recentRun struct {
	id int64
	at time.Time
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
