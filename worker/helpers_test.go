package worker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testsignal"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

// waitLimit bounds every wait of the tests: generous for slow CI machines,
// yet a hang becomes a failure, not a stuck test run.
const waitLimit = testnats.WaitLimit

// testFetchWait shortens pull requests so that stops are quick in tests.
const testFetchWait = 300 * time.Millisecond

// testLockTTL shortens the job lock's TTL for the tests that wait for a
// holder to go stale: 2s, not the default 6s, yet beats (every 2/3 s) keep
// a live holder's lock through the stalls of a loaded -race run.
const testLockTTL = 2 * time.Second

const testGroup = "g"

// env is one embedded NATS server with jetjob's streams, and a scheduler's
// trigger signing key: every trigger the tests publish is signed with it,
// and every worker they start accepts it (unless the test says otherwise).
type env struct {
	t      *testing.T
	nats   *testnats.Env
	url    string
	nc     *nats.Conn
	js     jetstream.JetStream
	signer *trigsign.Signer
	keys   *trigsign.Verifier
}

func newEnv(t *testing.T) *env {
	t.Helper()
	n := testnats.New(t)
	e := &env{t: t, nats: n, url: n.URL, nc: n.NC, js: n.JS}
	e.signer, e.keys = testKeys(t)
	return e
}

// ctx is a context bounded by waitLimit.
func (e *env) ctx() context.Context { return e.nats.Ctx() }

// connect opens another connection, closed when the test ends.
func (e *env) connect() *nats.Conn {
	e.t.Helper()
	return e.nats.Connect()
}

// trigger returns a valid trigger of testGroup; job id is 1000+run id.
func trigger(runID int64, handler, params string) *wire.Trigger {
	return &wire.Trigger{
		RunID: runID, JobID: 1000 + runID, Group: testGroup, Handler: handler, Params: params,
		TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// testKeys is a scheduler's trigger signing key and the verifier of its
// public half.
func testKeys(t testing.TB) (*trigsign.Signer, *trigsign.Verifier) {
	t.Helper()
	s, v, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// signed is the trigger message data on subject (of group, a trigger batch
// if batch), signed as a scheduler signs it.
func (e *env) signed(subject, group string, batch bool, data []byte) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = data
	e.signer.Sign(m.Header, group, batch, data)
	return m
}

// publishSigned publishes data on subject signed for group (a trigger
// batch if batch), with message id msgID unless empty, and returns its
// stream sequence.
func (e *env) publishSigned(subject, group string, batch bool, data []byte, msgID string) uint64 {
	e.t.Helper()
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := e.js.PublishMsg(e.ctx(), e.signed(subject, group, batch, data), opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return ack.Sequence
}

// publish publishes tr on its group's shared subject, signed, with the
// scheduler's message id.
func (e *env) publish(tr *wire.Trigger) {
	e.t.Helper()
	data, err := wire.EncodeTrigger(tr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.publishSigned(stream.TriggerAny(tr.Group), tr.Group, false, data, wire.MsgID(tr.RunID))
}

// publishRaw publishes arbitrary bytes, signed, on the group's shared
// subject: what a worker does with a message a scheduler signed but that
// is no valid trigger.
func (e *env) publishRaw(data []byte) {
	e.t.Helper()
	e.publishSigned(stream.TriggerAny(testGroup), testGroup, false, data, "")
}

// triggersLeft is how many messages JETJOB_TRIGGERS still holds.
func (e *env) triggersLeft() uint64 { return e.streamState(stream.Triggers).Msgs }

// streamState is a stream's state now.
func (e *env) streamState(name string) jetstream.StreamState {
	e.t.Helper()
	s, err := e.js.Stream(e.ctx(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := s.Info(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	return info.State
}

// groupConsumer returns the info of the group's shared consumer.
func (e *env) groupConsumer() *jetstream.ConsumerInfo {
	e.t.Helper()
	return e.consumer(stream.AnyConsumer(testGroup))
}

// consumer returns the info of the trigger consumer named name.
func (e *env) consumer(name string) *jetstream.ConsumerInfo {
	e.t.Helper()
	c, err := e.js.Consumer(e.ctx(), stream.Triggers, name)
	if err != nil {
		e.t.Fatal(err)
	}
	info, err := c.Info(e.ctx())
	if err != nil {
		e.t.Fatal(err)
	}
	return info
}

// running is a worker whose Run executes in a goroutine.
type running struct {
	t      *testing.T
	w      *Worker
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
	seen   bool // the test has looked at err
}

// start creates a worker of testGroup on its own connection, lets setup
// register handlers, and runs it until the test ends or stop is called.
func (e *env) start(cfg Config, setup func(w *Worker)) *running {
	e.t.Helper()
	cfg.NATS = e.connect()
	if cfg.Group == "" {
		cfg.Group = testGroup
	}
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(e.t)
	}
	if cfg.TriggerKeys == nil && !cfg.AcceptUnsignedTriggers {
		cfg.TriggerKeys = e.keys
	}
	w, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	w.fetchWait = testFetchWait
	w.signals.init(e.t)
	setup(w)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: e.t, w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- w.Run(ctx) }()
	e.t.Cleanup(func() {
		r.cancel()
		if err := r.result(); err != nil && !r.seen {
			e.t.Errorf("Run: %v", err)
		}
	})
	return r
}

// stop cancels Run's context and returns what Run returned.
func (r *running) stop() error {
	r.cancel()
	return r.wait()
}

// waitProcessed waits until a delivery of each of ids has been processed
// here (testSignals.finished: settled, its run out of the run table, its
// slot free). A run's ack is confirmed by the server before that, so the
// stream and consumer state that follows from it shows at once. It takes
// the signals up to the last of ids: wait in the order they come.
func (r *running) waitProcessed(ids ...int64) {
	r.t.Helper()
	waitRuns(r.t, &r.w.signals.finished, fmt.Sprintf("runs %v processed", ids), ids...)
}

// waitRuns waits until sig has reported each of ids.
func waitRuns(t *testing.T, sig *testsignal.Signal[laneRun], what string, ids ...int64) {
	t.Helper()
	left := make(map[int64]bool, len(ids))
	for _, id := range ids {
		left[id] = true
	}
	sig.WaitFor(t, waitLimit, what, func(v laneRun) bool {
		delete(left, v.run)
		return len(left) == 0
	})
}

// beginStop cancels Run's context and returns once the stop has begun
// (the stages stop from then on); the channel gets what Run returns.
func (r *running) beginStop() <-chan error {
	r.t.Helper()
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop() }()
	r.w.signals.stopBegun.WaitFor(r.t, waitLimit, "the stop to begin", func(struct{}) bool { return true })
	return stopped
}

// wait returns what Run returned, waiting for it at most waitLimit. The
// test then owns the error: the cleanup does not report it again.
func (r *running) wait() error {
	r.seen = true
	return r.result()
}

func (r *running) result() error {
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(waitLimit):
			r.err = errors.New("Run did not return within the wait limit")
		}
	})
	return r.err
}

// recv waits for a value on ch, failing the test after waitLimit.
func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	return testwait.Recv(t, waitLimit, what, ch)
}

// workerGoroutines lists goroutines executing this package's worker code,
// or its internal packages' (not test code), to prove that a stopped worker
// left nothing behind.
func workerGoroutines() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"jetjob/worker.(*Worker)", "jetjob/worker.(*run)", "jetjob/worker.(*runLog)",
			"jetjob/worker/internal/"} {
			if strings.Contains(g, marker) {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// answerStartChecks answers the workers' start checks (stream.StartCheck)
// in the schedulers' place with what truth says of each run, until the
// test ends. The schedulers' own answer, from PostgreSQL, is tested in the
// scheduler package; here a test states what they would know.
func (e *env) answerStartChecks(truth func(wire.StartQuery) wire.RunStart) {
	e.t.Helper()
	e.answerQuestions(stream.StartCheck, func(data []byte) any {
		var req wire.StartRequest
		var reply wire.StartReply
		if err := wire.DecodeControl(data, &req); err != nil {
			reply.Error = err.Error()
		}
		for _, q := range req.Queries {
			reply.Runs = append(reply.Runs, truth(q))
		}
		return &reply
	})
}

// answerQuestions answers the workers' questions on subject, in the
// schedulers' queue group, with the reply answer makes of each request,
// until the test ends.
func (e *env) answerQuestions(subject string, answer func(data []byte) any) {
	e.t.Helper()
	sub, err := e.nc.QueueSubscribe(subject, stream.SupersedeQueue, func(m *nats.Msg) {
		data, err := wire.EncodeControl(answer(m.Data))
		if err == nil {
			err = m.Respond(data)
		}
		if err != nil {
			e.t.Errorf("question on %s not answered: %v", subject, err)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// observedLogger is a logger that writes to the test's log and keeps the
// entries at level or above for the test to look for.
func observedLogger(t testing.TB, level zapcore.Level) (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(level)
	return zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core)), logs
}
