package worker

import (
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/trigsign"
)

// Trusting triggers: a worker runs a trigger only when a scheduler signed
// it (package trigsign; docs/protocol.md, "Signed triggers"). The check is
// made once per delivered message, before it takes a run slot, in drain
// (fetch.go): a trigger batch is signed, and verified, as one message. A
// message that fails it runs nothing and publishes no event (the run ids
// it names are not to be believed, so it reports on none): it is handed
// back after refusedRetry, not terminated. Another worker of the group —
// one given the right key, in a rotation or a fleet set up half-way — may
// run it; and once its deliveries run out, the schedulers' lost-run
// monitor decides (scheduler/internal/lost): a message they signed ends
// its runs LOST, so a genuine trigger no worker would run is still
// accounted for, and a forged one is deleted without ending any run. Each
// refusal is counted in jetjob_worker_triggers_rejected_total{reason} and
// logged once per subject and signing key (then at most once a
// refusalEvery, with how many were not logged).

// refusedRetry is how long a refused trigger waits before its next
// delivery: a few seconds, so that a trigger no worker accepts reaches the
// lost-run monitor (after the consumer's max deliveries) within about
// half a minute, not after a redelivery storm.
const refusedRetry = 5 * time.Second

// trusted reports whether msg, a trigger message of this worker's group (a
// trigger batch if batch), may run; it hands back, logs and counts one that
// may not.
func (w *Worker) trusted(msg jetstream.Msg, batch bool) bool {
	v := w.cfg.TriggerKeys
	if v == nil {
		return true // AcceptUnsignedTriggers, and no key to check a signature with
	}
	h := msg.Headers()
	err := v.Verify(h, w.cfg.Group, batch, msg.Data())
	if err == nil || (w.cfg.AcceptUnsignedTriggers && errors.Is(err, trigsign.ErrUnsigned)) {
		return true
	}
	reason := trigsign.Reason(err)
	w.metrics.rejected.WithLabelValues(reason).Inc()
	var seq uint64
	if md, merr := msg.Metadata(); merr == nil {
		seq = md.Sequence.Stream
	}
	key := h.Get(trigsign.HeaderKey)
	if skipped, ok := w.refusals.due(msg.Subject(), key, time.Now()); ok {
		w.log.Error("trigger refused: not signed by a scheduler this worker trusts; handed back without running",
			zap.String("subject", msg.Subject()), zap.Uint64("stream_seq", seq), zap.String("key_id", key),
			zap.String("reason", reason), zap.Int64("not_logged_since", skipped), zap.Error(err))
	}
	if nerr := msg.NakWithDelay(refusedRetry); nerr != nil {
		w.log.Warn("handing back a refused trigger failed; it comes back after the ack wait", zap.Uint64("stream_seq", seq), zap.Error(nerr))
	}
	return false
}

// refusalEvery is how often refusals of one subject and key are logged
// after the first.
const refusalEvery = time.Minute

// maxRefusalKeys bounds what refusalLog remembers: forged messages may
// name any key id, and a flood of them must not grow the worker.
const maxRefusalKeys = 1024

// refusalLog rate-limits the logs of refused triggers per subject and key.
type refusalLog struct {
	mu   sync.Mutex
	seen map[refusalKey]*refusals
}

type refusalKey struct{ subject, key string }

type refusals struct {
	logged  time.Time
	skipped int64
}

// due reports whether a refusal on subject by key at now is to be logged,
// and how many were not logged since the last one that was.
func (l *refusalLog) due(subject, key string, now time.Time) (skipped int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := refusalKey{subject, key}
	r := l.seen[k]
	if r == nil {
		if l.seen == nil || len(l.seen) >= maxRefusalKeys {
			l.seen = make(map[refusalKey]*refusals)
		}
		l.seen[k] = &refusals{logged: now}
		return 0, true
	}
	if now.Sub(r.logged) < refusalEvery {
		r.skipped++
		return 0, false
	}
	skipped, r.logged, r.skipped = r.skipped, now, 0
	return skipped, true
}
