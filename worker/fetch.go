package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// How triggers are fetched.
//
// The group's consumer is shared by every worker of the group, and a trigger
// delivered to one worker is invisible to the others until it is acked or
// redelivered. So a worker must never hold a trigger it cannot start yet:
// that trigger would wait in its buffer while another worker idles. Consume
// and Messages keep a client-side buffer of PullMaxMessages and refill it
// when half of it has been handed to the application, whether or not the
// application can run anything: they are built for throughput, not for
// fairness between competing consumers.
//
// Instead a worker announces exactly its free capacity: it takes every free
// run slot (at least one) and sends one pull request (Fetch) for that many
// triggers; each trigger that arrives already owns a slot and starts at once;
// slots the request did not fill are released when it expires. As slots free
// up, new requests are sent at once, in parallel with the open ones (at most
// maxFetches), so the capacity announced to the server is always the
// capacity free here. Under a backlog every request fills immediately.
//
// When the worker stops, open requests are not abandoned (a trigger the
// server sent to a vanished inbox would be stuck until AckWait): they are
// drained until they expire, and what still arrives is handed back with a
// delay of fetchWait, by which time this worker's requests have expired and
// the trigger goes to another worker.
const (
	// defaultFetchWait is how long one pull request stays open. It bounds
	// how long an idle worker takes to stop; an idle worker sends one
	// request per fetchWait.
	defaultFetchWait = 2 * time.Second
	// defaultMaxFetches bounds the open pull requests of one worker, so a
	// large group stays well below the server's MaxWaiting (512).
	defaultMaxFetches = 4
)

// fetchLoop sends pull requests until the worker stops. It returns nil when
// Run's context is cancelled, and an error (after calling stop with it)
// when fetching can never succeed again.
func (w *Worker) fetchLoop(cons jetstream.Consumer, stop context.CancelCauseFunc) error {
	var bo backoff
	for {
		n, ok := w.acquireSlots()
		if !ok {
			return nil
		}
		select {
		case w.tokens <- struct{}{}:
		case <-w.stopCtx.Done():
			w.releaseSlots(n)
			return nil
		}
		if w.stopCtx.Err() != nil { // select picks at random among ready cases
			w.releaseSlots(n)
			<-w.tokens
			return nil
		}
		n += w.tryAcquireSlots(w.cfg.Concurrency - n) // freed while we waited for a token
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(w.fetchWait))
		if err != nil {
			w.releaseSlots(n)
			<-w.tokens
			if w.cfg.NATS.IsClosed() {
				err = fmt.Errorf("worker: NATS connection closed: %w", err)
				w.log.Error("cannot fetch triggers any more", zap.Error(err))
				stop(err)
				return err
			}
			w.log.Warn("fetching triggers failed", zap.Error(err))
			if !sleepCtx(w.stopCtx, bo.next()) {
				return nil
			}
			continue
		}
		bo.reset()
		w.fetchers.Add(1)
		go w.drain(batch, n)
	}
}

// drain starts a run for each trigger of batch, each on one of the n slots
// acquired for it, and releases the rest when the request ends.
func (w *Worker) drain(batch jetstream.MessageBatch, n int) {
	defer w.fetchers.Done()
	used := 0
	for msg := range batch.Messages() {
		if w.stopCtx.Err() != nil {
			w.handBack(msg, w.log, "worker stopping before the run started")
			continue
		}
		used++
		w.runs.Add(1)
		go w.process(msg)
	}
	if err := batch.Error(); err != nil {
		// e.g. missing heartbeats or a deleted consumer: slow the next
		// request down instead of spinning.
		w.log.Warn("pull request failed", zap.Error(err))
		sleepCtx(w.stopCtx, time.Second)
	}
	w.releaseSlots(n - used)
	<-w.tokens
}

// acquireSlots waits for one free slot, then takes every other free one. It
// returns false when the worker stops first.
func (w *Worker) acquireSlots() (int, bool) {
	select {
	case w.slots <- struct{}{}:
	case <-w.stopCtx.Done():
		return 0, false
	}
	return 1 + w.tryAcquireSlots(w.cfg.Concurrency-1), true
}

// tryAcquireSlots takes up to max free slots without waiting.
func (w *Worker) tryAcquireSlots(max int) int {
	n := 0
	for n < max {
		select {
		case w.slots <- struct{}{}:
			n++
		default:
			return n
		}
	}
	return n
}

func (w *Worker) releaseSlots(n int) {
	for range n {
		<-w.slots
	}
}
