// Package reroute moves the directed triggers of dead workers to their
// group's shared queue.
//
// Routing strategies other than any send a trigger to one worker's subject,
// jetjob.trigger.<group>.w.<id>, read only by that worker's durable
// consumer. If the worker dies, what waits there (and what it had been
// given but never finished, once the ack wait has passed) would wait for
// that worker forever. So every scheduler looks, every Interval, at the
// directed subjects of JETJOB_TRIGGERS that hold messages; for one whose
// worker the registry no longer lists, it pulls them from the worker's
// consumer like the worker would, publishes each to the group's shared
// queue, and then acks it. The copy carries its own Nats-Msg-Id derived from the original's
// stream sequence, so two schedulers moving the same trigger, or a
// scheduler that dies between publish and ack, still produce one copy.
//
// A trigger batch on a directed subject (stream.BatchHeader: the runs of
// jobs routed consistent_hash) is moved whole, as it is, to the group's
// batch subject, whose consumer every worker of the group reads: a run of
// a batch only ever goes out inside its batch's message (package
// dispatch). The batches on the group's batch subject are never moved: a
// batch a dead worker held there is delivered to another after the ack
// wait.
package reroute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/supervise"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// Interval is how often directed consumers are checked.
const Interval = 2 * time.Second

// batchSize is how many triggers one pull moves.
const batchSize = 256

// Deps are what a Rerouter reads and moves through, and whom it tells: given
// to New and fixed from then on, never set on a running Rerouter.
type Deps struct {
	// JS reads and moves the triggers.
	JS jetstream.JetStream
	// Live reports whether worker id of group is live; Synced whether the
	// registry knows enough to say (see registry.Registry.Synced). Both
	// are required.
	Live   func(group, id string) bool
	Synced func() bool
	// Moved, when set, is called with the number of triggers each drain
	// moved.
	Moved func(n int)
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
}

// Rerouter is run by every scheduler.
type Rerouter struct {
	js      jetstream.JetStream
	live    func(group, id string) bool
	synced  func() bool
	onMoved func(n int)
	log     *zap.Logger
}

// New returns a rerouter; Run drives it.
func New(deps Deps) *Rerouter {
	return &Rerouter{js: deps.JS, live: deps.Live, synced: deps.Synced, onMoved: deps.Moved, log: logging.Named(deps.Log, "reroute")}
}

// Run checks every Interval until ctx ends.
func (r *Rerouter) Run(ctx context.Context) error {
	return supervise.Every(ctx, Interval, func(ctx context.Context) {
		if !r.synced() {
			return
		}
		if err := r.Check(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("checking directed consumers failed; retrying", zap.Error(err))
		}
	})
}

// Check drains every directed subject that holds triggers and whose
// worker is not live. It goes by the stream's subjects, not by the
// consumers: a trigger published to a worker whose consumer is gone (or
// never existed) would otherwise wait forever. Such a consumer is
// created as the worker would (with the default ack wait and deliveries).
func (r *Rerouter) Check(ctx context.Context) error {
	s, err := r.js.Stream(ctx, stream.Triggers)
	if err != nil {
		return fmt.Errorf("stream %s: %w", stream.Triggers, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(stream.TriggerWorker("*", "*")))
	if err != nil {
		return fmt.Errorf("stream %s subjects: %w", stream.Triggers, err)
	}
	var errs []error
	for _, d := range stranded(info.State.Subjects, r.live) {
		cons, err := s.CreateOrUpdateConsumer(ctx, r.consumerConfig(ctx, s, d.group, d.worker))
		if err != nil {
			errs = append(errs, fmt.Errorf("consumer of %s: %w", d.subject, err))
			continue
		}
		if err := r.drain(ctx, cons, d.group, d.worker); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// directed is one worker's directed trigger subject.
type directed struct{ subject, group, worker string }

// stranded returns, in subject order, the directed subjects among subjects
// (each with the number of triggers it holds) that hold triggers of a
// worker live does not report: the ones to move.
func stranded(subjects map[string]uint64, live func(group, id string) bool) []directed {
	var out []directed
	for subject, n := range subjects {
		group, id, ok := stream.ParseTriggerWorker(subject)
		if !ok || n == 0 || live(group, id) {
			continue
		}
		out = append(out, directed{subject: subject, group: group, worker: id})
	}
	slices.SortFunc(out, func(a, b directed) int { return strings.Compare(a.subject, b.subject) })
	return out
}

// consumerConfig is the dead worker's consumer as it is, or as the worker
// would have created it.
func (r *Rerouter) consumerConfig(ctx context.Context, s jetstream.Stream, group, id string) jetstream.ConsumerConfig {
	if c, err := s.Consumer(ctx, stream.WorkerConsumer(group, id)); err == nil {
		return c.CachedInfo().Config
	}
	return stream.DirectedConsumerConfig(group, id, stream.DefaultAckWait, stream.DefaultMaxDeliver)
}

// drain moves what the consumer has to hand out now. Triggers still
// delivered to the dead worker come out once their ack wait has passed;
// a later check moves them.
func (r *Rerouter) drain(ctx context.Context, cons jetstream.Consumer, group, worker string) error {
	name := stream.WorkerConsumer(group, worker)
	log := r.log.With(logging.Group(group), logging.Worker(worker))
	moved := 0
	defer func() {
		if moved > 0 {
			log.Info("moved the triggers of a dead worker to the shared queue", zap.Int("triggers", moved))
			if r.onMoved != nil {
				r.onMoved(moved)
			}
		}
	}()
	for ctx.Err() == nil {
		batch, err := cons.FetchNoWait(batchSize)
		if err != nil {
			return fmt.Errorf("fetch from %s: %w", name, err)
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			if r.live(group, worker) {
				// It came back: leave the rest to it.
				_ = msg.Nak()
				continue
			}
			if err := r.move(ctx, group, msg, log); err != nil {
				_ = msg.Nak()
				return err
			}
			moved++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("fetch from %s: %w", name, err)
		}
		if n < batchSize || r.live(group, worker) {
			return nil
		}
	}
	return nil
}

// move publishes one trigger to the shared queue, then acks the original.
// The copy keeps the original's signature (package trigsign): it signs the
// body, the group and that it is a lone trigger, none of which moving
// changes, so a rerouter never signs anything itself, and a forged
// directed trigger stays forged where it is moved.
func (r *Rerouter) move(ctx context.Context, group string, msg jetstream.Msg, log *zap.Logger) error {
	md, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("trigger metadata: %w", err)
	}
	if h := msg.Headers(); h != nil && h.Get(stream.BatchHeader) == "1" {
		return r.moveBatch(ctx, group, msg, md, log)
	}
	trig, err := wire.DecodeTrigger(msg.Data())
	if err != nil {
		// Nobody can run it; the worker would have rejected it the same way.
		log.Warn("dropping a malformed directed trigger", zap.Uint64("stream_seq", md.Sequence.Stream), zap.Error(err))
		return msg.Term()
	}
	cp, id := copyOf(group, msg.Data(), trig.RunID, md.Sequence.Stream, md.NumDelivered)
	trigsign.CopyHeaders(cp.Header, msg.Headers())
	if err := r.republish(ctx, msg, cp, id, log.With(logging.Run(trig.RunID))); err != nil {
		return fmt.Errorf("re-publish run %d: %w", trig.RunID, err)
	}
	log.Debug("directed trigger moved to the shared queue", logging.Run(trig.RunID), logging.Job(trig.JobID))
	return nil
}

// moveBatch publishes a directed trigger batch, whole and unread, to the
// group's batch subject, then acks the original. Its runs are checked by
// the worker that gets the copy, as any batch's are.
func (r *Rerouter) moveBatch(ctx context.Context, group string, msg jetstream.Msg, md *jetstream.MsgMetadata, log *zap.Logger) error {
	seq := md.Sequence.Stream
	cp := nats.NewMsg(stream.TriggerBatch(group))
	cp.Data = msg.Data()
	cp.Header.Set(stream.ReroutedHeader, strconv.FormatUint(md.NumDelivered-1, 10))
	trigsign.CopyHeaders(cp.Header, msg.Headers())
	if err := r.republish(ctx, msg, cp, fmt.Sprintf("batch-rerouted-%d", seq), log.With(zap.Uint64("stream_seq", seq))); err != nil {
		return fmt.Errorf("re-publish trigger batch at stream sequence %d: %w", seq, err)
	}
	log.Debug("directed trigger batch moved to the group's batch subject", zap.Uint64("stream_seq", seq))
	return nil
}

// republish publishes cp, the copy of msg, under Msg-Id id, then acks msg.
func (r *Rerouter) republish(ctx context.Context, msg jetstream.Msg, cp *nats.Msg, id string, log *zap.Logger) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := r.js.PublishMsg(pctx, cp, jetstream.WithMsgID(id), jetstream.WithExpectStream(stream.Triggers)); err != nil {
		return err
	}
	if err := msg.DoubleAck(pctx); err != nil {
		// The copy is out; the original comes back to a later check, whose
		// copy the Msg-Id drops within the duplicate window.
		log.Warn("moved trigger not acknowledged", zap.Error(err))
	}
	return nil
}

// copyOf returns the shared-queue copy of a directed trigger of run runID
// (data, stored at streamSeq, delivered numDelivered times counting this
// drain's delivery) and the copy's Msg-Id, which the original's stream
// sequence makes the same for every scheduler that moves it.
func copyOf(group string, data []byte, runID int64, streamSeq, numDelivered uint64) (*nats.Msg, string) {
	// The copy says how often the dead worker had the original (this
	// drain's delivery aside): a run it may have started must not start
	// again, so the worker that gets the copy checks first.
	cp := nats.NewMsg(stream.TriggerAny(group))
	cp.Data = data
	cp.Header.Set(stream.ReroutedHeader, strconv.FormatUint(numDelivered-1, 10))
	return cp, fmt.Sprintf("%s-rerouted-%d", wire.MsgID(runID), streamSeq)
}
