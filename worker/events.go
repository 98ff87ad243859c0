package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// startedMsgID is the Nats-Msg-Id of a run's started event for one delivery
// of its trigger. Retrying the publish within a delivery is deduplicated; a
// redelivery (the first worker died) records a new start, so the scheduler
// learns which worker runs the run now.
func startedMsgID(runID int64, delivery uint64) string {
	return fmt.Sprintf("run-%d-started-%d", runID, delivery)
}

// finishedMsgID is the Nats-Msg-Id of a run's finished event. It is one per
// run, not per delivery: if a worker published a result and died before
// acking its trigger, a second execution's result is dropped as a duplicate
// (within the stream's duplicate window; after it the scheduler ignores a
// second terminal event anyway).
func finishedMsgID(runID int64) string { return fmt.Sprintf("run-%d-finished", runID) }

// publishAttemptTimeout bounds one publish or ack attempt.
const publishAttemptTimeout = 5 * time.Second

// ackAttempts bounds ack retries: a double ack whose reply was lost is not
// answered again by the server (the message is no longer pending), so
// retrying forever would never end. A trigger whose ack really got lost is
// redelivered and recognised as finished here (see claim).
const ackAttempts = 3

// publishEvent publishes one event as a wire.Events message, retrying with
// backoff until JetStream acknowledges it or retry ends. Each attempt runs
// under ctx, not retry: an attempt already sent may be stored by the server,
// so a stop must not abandon it halfway and act as if it had never been
// sent; it only stops further attempts.
func (w *Worker) publishEvent(ctx, retry context.Context, log *zap.Logger, ev wire.Event, msgID string) error {
	data, err := wire.EncodeEvents(ev)
	if err != nil {
		return err // a bug here, not a transient failure: retrying cannot help
	}
	var bo backoff
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, publishAttemptTimeout)
		_, err := w.js.Publish(actx, stream.Event(w.cfg.Group), data, jetstream.WithMsgID(msgID))
		cancel()
		if err == nil {
			return nil
		}
		if retry.Err() != nil {
			return fmt.Errorf("publish %s event: %w (last error: %v)", ev.Kind, retry.Err(), err)
		}
		log.Warn("publishing run event failed; retrying",
			zap.String("kind", string(ev.Kind)), zap.Int("attempt", attempt), zap.Error(err))
		if !sleepCtx(retry, bo.next()) {
			return fmt.Errorf("publish %s event: %w (last error: %v)", ev.Kind, retry.Err(), err)
		}
	}
}

// ackMsg acknowledges msg and waits for the server to confirm it.
func (w *Worker) ackMsg(ctx context.Context, msg jetstream.Msg) error {
	var bo backoff
	var err error
	for range ackAttempts {
		actx, cancel := context.WithTimeout(ctx, publishAttemptTimeout)
		err = msg.DoubleAck(actx)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			return nil
		}
		if !sleepCtx(ctx, bo.next()) {
			break
		}
	}
	return fmt.Errorf("ack trigger: %w", err)
}

// handBack returns a trigger to the group for another worker. The delay
// lets this worker's open pull requests expire first (fetch.go), so the
// trigger does not bounce back here and burn a delivery.
func (w *Worker) handBack(msg jetstream.Msg, log *zap.Logger, reason string) {
	if err := msg.NakWithDelay(w.fetchWait); err != nil {
		log.Warn("handing trigger back failed; it will be redelivered after the ack wait",
			zap.String("reason", reason), zap.Error(err))
		return
	}
	log.Info("trigger handed back", zap.String("reason", reason))
}

// backoff is an exponential delay with jitter, from 100ms to 5s.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	switch {
	case b.d == 0:
		b.d = 100 * time.Millisecond
	case b.d < 5*time.Second:
		b.d = min(2*b.d, 5*time.Second)
	}
	// ±20% so that workers that failed together do not retry together.
	return b.d - b.d/5 + rand.N(2*b.d/5+1)
}

func (b *backoff) reset() { b.d = 0 }

// sleepCtx waits d and reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
