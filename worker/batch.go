package worker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Trigger batches: schedulers publish the runs of a group that are due at
// the same instant as one message on the group's batch subject
// (wire.EncodeTriggerBatch), because every message costs the broker and both
// processes a store, a delivery, an ack and a removal whatever it carries.
// The worker pulls them on a lane of its own (fetch.go), and on its
// directed lane those of jobs routed consistent_hash (directedBatch), and runs every
// member exactly as if it had come alone: each is handed to the run path
// (receive.go, exec.go) as a batchMember, a jetstream.Msg over the shared
// delivered message, so claims, the start check, misfires, kills, block
// strategies, events and hand-backs need not know about batches.
//
// A member's ack or hand-back settles that member only; the delivered
// message is settled once, when its last member settles: handed back
// (NakWithDelay) if any member was, else acknowledged. A redelivery then
// brings every member back with a delivery count above 1, so each goes
// through the start check: the members that finished are acknowledged
// without running (from this worker's recent runs, or the schedulers'
// answer) and only the others run.

// directedBatch reports whether msg is a trigger batch sent to this
// worker's directed subject (stream.BatchHeader): the batches of jobs
// routed consistent_hash, which the schedulers send here because this
// worker's heartbeat says it reads them (wire.WorkerInfo.DirectedBatches).
// Its runs take the directed lane's slots, one each; those beyond the
// slots the pull request held wait for one, as on the batch lane. No other
// worker could run them anyway.
func directedBatch(msg jetstream.Msg) bool {
	h := msg.Headers()
	return h != nil && h.Get(stream.BatchHeader) == "1"
}

// batchRunsGuess is how many runs the batch lane expects a message to
// carry: the schedulers' default batch size. A worker cannot know a
// batch's size before it holds it, so with n free slots it asks for
// n/batchRunsGuess messages (at least one). When batches are smaller the
// request ends as soon as its messages arrive and the slots left over go
// into the next request at once; when they are larger, the runs beyond
// the slots wait here for one (lane.enqueue), never beyond Concurrency.
const batchRunsGuess = 16

// batchProgressGap is the least time between two in-progress acks a batch's
// members forward to the delivered message (AckWait/10 if shorter): each
// member's run sends its own every AckWait/3, and one of them resets the
// server's timer for all.
const batchProgressGap = time.Second

// splitBatch starts the runs of the trigger batch msg: the first owned on
// slots the pull request holds, the rest as slots free up. It returns how
// many of the owned slots it used. A message that is no batch at all is
// terminated: it names no run, and a redelivery would be just as unusable.
func (w *Worker) splitBatch(ctx context.Context, l *lane, msg jetstream.Msg, owned int) (used int) {
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	lines, err := wire.SplitTriggerBatch(msg.Data())
	if err != nil {
		w.log.Error("malformed trigger batch dropped: it names no run to report on", zap.Error(err),
			zap.String("subject", msg.Subject()), zap.Uint64("stream_seq", seq),
			zap.ByteString("data", msg.Data()[:min(len(msg.Data()), 512)]))
		if err := msg.TermWithReason("invalid trigger batch"); err != nil {
			w.log.Warn("terminating malformed trigger batch failed", zap.Uint64("stream_seq", seq), zap.Error(err))
		}
		return 0
	}
	l.lastRuns.Store(int32(len(lines)))
	for _, m := range w.newBatch(msg, seq, lines) {
		switch {
		case used < owned:
			used++
			w.startRun(ctx, l, m)
		case !l.enqueue(w.slotWaiter(ctx, l, m, m.b.log)):
			w.handBack(m, m.b.log, "worker stopping before the run started")
		}
	}
	return used
}

// newBatch returns the members of the delivered batch msg (at stream
// sequence seq), one per line, and starts keeping msg alive until they
// have all settled.
func (w *Worker) newBatch(msg jetstream.Msg, seq uint64, lines [][]byte) []*batchMember {
	b := &batchMsg{
		msg: msg, pending: len(lines), gap: min(batchProgressGap, w.cfg.AckWait/10),
		log: w.log.WithLazy(zap.Uint64("stream_seq", seq), zap.Int("batch_runs", len(lines))),
	}
	// The members waiting for a slot have no run to keep the message
	// alive; the batch does it until it is settled.
	b.stopKeep = w.keepAlive(b.log, func() []jetstream.Msg {
		if b.final.Load() {
			return nil
		}
		return []jetstream.Msg{msg}
	})
	members := make([]*batchMember, len(lines))
	for i, line := range lines {
		members[i] = &batchMember{b: b, data: line}
	}
	return members
}

// slotWaiter is trigger msg (a batch member, or a lone trigger that
// arrived beyond its request's slots) waiting for a slot of l: its run
// starts on the slot handed to it, and it is handed back if the lane
// closes first. log is the trigger's, ctx the fetch loop's.
func (w *Worker) slotWaiter(ctx context.Context, l *lane, msg jetstream.Msg, log *zap.Logger) waiter {
	return waiter{
		start: func() { w.startWaiter(ctx, l, msg, log) },
		drop:  func() { w.handBack(msg, log, "worker stopping before the run started") },
	}
}

// startWaiter starts the run of a trigger that waited for a slot of l,
// now handed to it; a stopping worker hands the trigger back instead, and
// the slot on.
func (w *Worker) startWaiter(ctx context.Context, l *lane, msg jetstream.Msg, log *zap.Logger) {
	if ctx.Err() != nil {
		w.handBack(msg, log, "worker stopping before the run started")
		l.release(1)
		return
	}
	w.startRun(ctx, l, msg)
}

// batchMsg is one delivered trigger batch, shared by its members.
type batchMsg struct {
	msg      jetstream.Msg
	log      *zap.Logger
	gap      time.Duration // least time between forwarded in-progress acks
	stopKeep func()        // ends the batch's keep-alive
	// final is set once every member has settled. The keep-alive reads
	// it without mu: the last member stops the keep-alive holding mu.
	final atomic.Bool

	mu           sync.Mutex
	pending      int       // members not settled yet
	handedBack   int       // members handed back
	retryAt      time.Time // the latest time a handed-back member asked to be offered again
	lastProgress time.Time // last in-progress ack forwarded
	done         bool      // msg is settled
}

// settleMsg settles the delivered message once its last member has
// settled (b.mu held): handed back, after the longest delay a member asked
// for, when any member was, so that it comes back to run those; else
// acknowledged. It is called again by a member's retried ack while it has
// not succeeded.
func (b *batchMsg) settleMsg(ctx context.Context) error {
	var err error
	if b.handedBack > 0 {
		err = b.msg.NakWithDelay(max(0, time.Until(b.retryAt)))
	} else {
		actx, cancel := context.WithTimeout(ctx, ackAttemptTimeout)
		err = b.msg.DoubleAck(actx)
		cancel()
	}
	if err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return err
	}
	b.done = true
	if b.handedBack > 0 {
		b.log.Info("trigger batch handed back: its runs that did not end here come back",
			zap.Int("handed_back", b.handedBack))
	}
	return nil
}

// batchMember is one run of a trigger batch as the run path sees it: its
// own trigger, the delivered message's metadata and headers, and acks that
// settle this run only (see the top of this file).
type batchMember struct {
	b       *batchMsg
	data    []byte
	settled bool // under b.mu
}

var _ jetstream.Msg = (*batchMember)(nil)

// Metadata is the delivered message's: every member of a redelivered batch
// counts as redelivered.
func (m *batchMember) Metadata() (*jetstream.MsgMetadata, error) { return m.b.msg.Metadata() }

// Data is the member's own trigger; headers, subject and reply are the
// delivered message's.
func (m *batchMember) Data() []byte         { return m.data }
func (m *batchMember) Headers() nats.Header { return m.b.msg.Headers() }
func (m *batchMember) Subject() string      { return m.b.msg.Subject() }
func (m *batchMember) Reply() string        { return m.b.msg.Reply() }

// Ack settles the member as done, Nak as handed back at once (see
// NakWithDelay).
func (m *batchMember) Ack() error { return m.settle(context.Background(), false, 0) }
func (m *batchMember) Nak() error { return m.settle(context.Background(), true, 0) }

// Term settles the member as done: it was invalid (receive.go's reject
// reported it), and its siblings must not come back for it.
func (m *batchMember) Term() error                 { return m.settle(context.Background(), false, 0) }
func (m *batchMember) TermWithReason(string) error { return m.settle(context.Background(), false, 0) }

// DoubleAck settles the member as done; when it is the last, it returns
// the delivered message's settlement, and a retry after an error retries
// that.
func (m *batchMember) DoubleAck(ctx context.Context) error { return m.settle(ctx, false, 0) }

// NakWithDelay settles the member as handed back: the delivered message
// goes back once all its members have settled, delayed by the longest delay
// asked for.
func (m *batchMember) NakWithDelay(delay time.Duration) error {
	return m.settle(context.Background(), true, delay)
}

// InProgress is forwarded to the delivered message, at most once per gap:
// all members share its ack timer.
func (m *batchMember) InProgress() error {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.settled || b.pending == 0 {
		return jetstream.ErrMsgAlreadyAckd
	}
	now := time.Now()
	if now.Sub(b.lastProgress) < b.gap {
		return nil
	}
	b.lastProgress = now
	return b.msg.InProgress()
}

// settle records how the member ended (handed back or done; a terminated
// member is done: it was invalid, and its siblings must not come back for
// it) and settles the delivered message after the last member. ctx bounds
// that settlement's ack (besides ackAttemptTimeout). A call on a settled
// member retries the message's settlement if it failed, and otherwise
// reports jetstream.ErrMsgAlreadyAckd like a settled message.
func (m *batchMember) settle(ctx context.Context, handBack bool, delay time.Duration) error {
	b := m.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if m.settled {
		if b.pending == 0 && !b.done {
			return b.settleMsg(ctx)
		}
		return jetstream.ErrMsgAlreadyAckd
	}
	m.settled = true
	b.pending--
	if handBack {
		b.handedBack++
		if at := time.Now().Add(delay); at.After(b.retryAt) {
			b.retryAt = at
		}
	}
	if b.pending > 0 {
		return nil
	}
	// No in-progress ack may follow the settlement: it could delay a
	// hand-back's redelivery by the ack wait.
	b.final.Store(true)
	b.stopKeep()
	return b.settleMsg(ctx)
}
