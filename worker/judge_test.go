package worker

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// The tests of judge.go hold a late fire_once trigger's supersede question
// unanswered while they look at the worker: the question is the one wait
// of a judgement a test can stretch. The worker's Asker would give up on it
// after 2 s (and the trigger then run), too short a bound for a loaded
// machine: the tests' workers wait longer than the fake scheduler holds a
// question (supersedeWait).

// answerSupersede answers the workers' supersede questions
// (stream.Supersede) in the schedulers' place with what by says of each
// (the newer run that supersedes it, 0 for none), until the test ends. by
// may block: questions are answered one at a time.
func (e *env) answerSupersede(by func(wire.SupersedeQuery) int64) {
	e.t.Helper()
	e.answerQuestions(stream.Supersede, func(data []byte) any {
		var req wire.SupersedeRequest
		var reply wire.SupersedeReply
		if err := wire.DecodeControl(data, &req); err != nil {
			reply.Error = err.Error()
		}
		for _, q := range req.Queries {
			reply.By = append(reply.By, by(q))
		}
		return &reply
	})
}

// heldQuestion is a fake scheduler's hold on the first supersede question:
// it reports the question on asked and answers it with what the test sends
// on answer (0 if the test sends nothing within waitLimit). Later
// questions are answered later at once.
type heldQuestion struct {
	asked  chan wire.SupersedeQuery
	answer chan int64
	later  int64
}

func (e *env) holdFirstQuestion(later int64) *heldQuestion {
	h := &heldQuestion{asked: make(chan wire.SupersedeQuery, 1), answer: make(chan int64, 1), later: later}
	var once sync.Once
	e.answerSupersede(func(q wire.SupersedeQuery) int64 {
		first := false
		once.Do(func() { first = true })
		if !first {
			return h.later
		}
		h.asked <- q
		select {
		case by := <-h.answer:
			return by
		case <-time.After(waitLimit):
			return 0
		}
	})
	return h
}

// calls records the handler calls of a test in order, and which worker
// made each.
type calls struct {
	mu   sync.Mutex
	runs []int64
	by   map[int64][]string
}

func (c *calls) add(worker string, run int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = make(map[int64][]string)
	}
	c.runs = append(c.runs, run)
	c.by[run] = append(c.by[run], worker)
}

func (c *calls) order() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.runs)
}

func (c *calls) of(run int64) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.by[run])
}

// judgeHandlers registers "h", which records its call and returns, and
// "block", which signals started and then waits for release; both count
// themselves in g. It also lets w wait for a held supersede question.
func judgeHandlers(w *Worker, c *calls, g *gauge, started chan<- int64, release <-chan struct{}) {
	w.supersedeWait = 2 * waitLimit // longer than a held question (holdFirstQuestion)
	w.Handle("h", func(_ context.Context, job *Job) error {
		g.enter()
		defer g.leave()
		c.add(w.ID(), job.RunID)
		return nil
	})
	block := g.blocking(release)
	w.Handle("block", func(ctx context.Context, job *Job) error {
		c.add(w.ID(), job.RunID)
		started <- job.RunID
		return block(ctx, job)
	})
}

// judgeRig is what the judge tests share: an env whose fake scheduler
// holds the first supersede question (answering later ones 0), the events
// it sees, and the handlers of judgeHandlers with their records.
type judgeRig struct {
	env     *env
	ev      *events
	q       *heldQuestion
	c       calls
	g       gauge
	started chan int64
	release chan struct{}
}

func newJudgeRig(t *testing.T) *judgeRig {
	e := newEnv(t)
	return &judgeRig{env: e, ev: e.events(), q: e.holdFirstQuestion(0),
		started: make(chan int64, 4), release: make(chan struct{})}
}

// startWorker starts a worker with cfg and the rig's handlers, then more.
func (j *judgeRig) startWorker(cfg Config, more ...func(*Worker)) *running {
	return j.env.start(cfg, func(w *Worker) {
		judgeHandlers(w, &j.c, &j.g, j.started, j.release)
		for _, f := range more {
			f(w)
		}
	})
}

// lateFireOnce is a fire_once schedule trigger 10s late (threshold 1s)
// for handler "h".
func lateFireOnce(runID int64) *wire.Trigger {
	return lateTrigger(runID, wire.TriggerSchedule, "fire_once", 1000, 10*time.Second)
}

// waitSlotWaiting waits until a trigger waits for a slot of r's lane
// named name.
func (r *running) waitSlotWaiting(what, name string) {
	r.t.Helper()
	r.w.signals.slotWaiting.WaitFor(r.t, waitLimit, what, func(v laneRun) bool { return v.lane == name })
}

const (
	busyShared = `jetjob_worker_slots_busy{group="g",lane="shared"}`
	busyBatch  = `jetjob_worker_slots_busy{group="g",lane="batch"}`
	judging    = `jetjob_worker_late_triggers_judging{group="g"}`
)

// A late fire_once trigger gives its only slot back while the schedulers
// are asked about it: another trigger runs on the slot meanwhile, and the
// late one ends EXPIRED, published and acked, while that run still holds
// the slot. Normal runs go on afterwards.
func TestLateTriggerJudgedOffItsSlot(t *testing.T) {
	t.Parallel()
	j := newJudgeRig(t)
	e, ev, q, c, g := j.env, j.ev, j.q, &j.c, &j.g
	started, release := j.started, j.release
	r := j.startWorker(Config{Concurrency: 1})
	col := r.w.metrics

	e.publish(lateFireOnce(1))
	if got := recv(t, "the late trigger's supersede question", q.asked); got.RunID != 1 {
		t.Fatalf("question about run %d, want 1", got.RunID)
	}
	// The slot was given back before the question was sent.
	if s := series(t, col); s[busyShared] != 0 || s[judging] != 1 {
		t.Errorf("while run 1 is judged: %s = %v, %s = %v; want 0 and 1", busyShared, s[busyShared], judging, s[judging])
	}
	e.publish(trigger(2, "block", ""))
	recv(t, "run 2 to start on the slot run 1 left", started)
	q.answer <- 99

	f := ev.waitFinished(1)[1]
	if f.Status != wire.StatusExpired {
		t.Errorf("run 1 finished %+v, want EXPIRED", f)
	}
	if n := g.cur.Load(); n != 1 {
		t.Errorf("%d handlers running when run 1 expired, want run 2 still holding the slot", n)
	}
	r.waitProcessed(1)
	if s, pending := series(t, col), e.groupConsumer().NumAckPending; pending != 1 || s[judging] != 0 || s[busyShared] != 1 {
		t.Errorf("once run 1 was processed: %d unacknowledged, %s = %v, %s = %v; want run 2 alone on the slot, no judge",
			pending, judging, s[judging], busyShared, s[busyShared])
	}
	close(release)
	e.publish(trigger(3, "h", ""))
	r.waitProcessed(2, 3)
	if left := e.triggersLeft(); left != 0 {
		t.Errorf("%d triggers left once every run was processed, want them acked", left)
	}
	wantSucceeded(t, ev.waitFinished(2, 3))
	if got := c.of(1); len(got) != 0 {
		t.Errorf("run 1's handler called on %v, want never", got)
	}
	if s := r.w.Stats(); s.ExpiredTotal != 1 {
		t.Errorf("stats %+v, want 1 expired", s)
	}
}

// A late trigger judged to run after all waits for the next slot ahead of
// any new pull request: while it waits no trigger is fetched, it runs
// (once) as soon as the slot frees, before a trigger published meanwhile,
// and no more handlers run at once than there are slots.
func TestJudgedRunWaitsForASlot(t *testing.T) {
	t.Parallel()
	j := newJudgeRig(t)
	e, ev, q, c, g := j.env, j.ev, j.q, &j.c, &j.g
	started, release := j.started, j.release
	r := j.startWorker(Config{Concurrency: 1})
	col := r.w.metrics

	e.publish(lateFireOnce(1))
	e.publish(trigger(2, "block", ""))
	recv(t, "the late trigger's supersede question", q.asked)
	recv(t, "run 2 to start on the slot run 1 left", started)
	q.answer <- 0 // no newer fire: run 1 runs

	r.waitSlotWaiting("run 1 waiting for the slot", laneShared)
	if s := series(t, col); s[judging] != 0 || s[busyShared] != 1 {
		t.Errorf("while run 1 waits: %s = %v, %s = %v; want 0 and 1", judging, s[judging], busyShared, s[busyShared])
	}
	e.publish(trigger(3, "h", ""))
	// No pull request is open while run 1 waits: run 3 stays in the stream.
	testwait.Eventually(t, waitLimit, "no pull request open", func() bool {
		ci := e.groupConsumer()
		return ci.NumWaiting == 0 && ci.NumPending == 1
	})
	if got := c.order(); !slices.Equal(got, []int64{2}) {
		t.Errorf("handlers called for runs %v while run 1 waits, want [2]", got)
	}

	close(release)
	wantSucceeded(t, ev.waitFinished(1, 2, 3))
	if got := c.order(); !slices.Equal(got, []int64{2, 1, 3}) {
		t.Errorf("handlers called for runs %v, want [2 1 3]: the judged run before the trigger fetched after it", got)
	}
	if p := g.peak.Load(); p != 1 {
		t.Errorf("%d handlers ran at once, want at most 1 (the slots)", p)
	}
	if kinds := eventKinds(ev.run(1)); !slices.Equal(kinds, []wire.EventKind{wire.EventStarted, wire.EventFinished}) {
		t.Errorf("run 1's events %v, want started then finished", kinds)
	}
	r.waitProcessed(1, 2, 3)
	if left, busy := e.triggersLeft(), series(t, col)[busyShared]; left != 0 || busy != 0 {
		t.Errorf("once every run was processed: %d triggers left, %v slots busy; want none", left, busy)
	}
}

func eventKinds(evs []wire.Event) []wire.EventKind {
	out := make([]wire.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// A worker that stops while a late trigger judged to run waits for a slot
// hands the trigger back: another worker runs it, once.
func TestStopWhileJudgedRunWaits(t *testing.T) {
	t.Parallel()
	j := newJudgeRig(t)
	e, ev, q, c := j.env, j.ev, j.q, &j.c
	started, release := j.started, j.release
	e.answerStartChecks(func(wire.StartQuery) wire.RunStart { return wire.RunStart{} }) // nothing started
	a := j.startWorker(Config{ID: "a", Concurrency: 1, ShutdownGrace: waitLimit})

	e.publish(lateFireOnce(1))
	e.publish(trigger(2, "block", ""))
	recv(t, "the late trigger's supersede question", q.asked)
	recv(t, "run 2 to start on the slot run 1 left", started)
	q.answer <- 0
	a.waitSlotWaiting("run 1 waiting for a's slot", laneShared)

	a.cancel() // run 2 keeps a running until released
	j.startWorker(Config{ID: "b", Concurrency: 1})
	f := ev.waitFinished(1)[1]
	if f.Status != wire.StatusSucceeded || f.WorkerID != "b" {
		t.Errorf("run 1 finished %+v, want SUCCEEDED on b", f)
	}
	if got := c.of(1); !slices.Equal(got, []string{"b"}) {
		t.Errorf("run 1's handler called on %v, want once on b", got)
	}
	close(release)
	if err := a.wait(); err != nil {
		t.Errorf("a's Run: %v", err)
	}
	if f := ev.waitFinished(2)[2]; f.Status != wire.StatusSucceeded || f.WorkerID != "a" {
		t.Errorf("run 2 finished %+v, want SUCCEEDED on a", f)
	}
	testwait.Eventually(t, waitLimit, "every trigger acked", func() bool { return e.triggersLeft() == 0 })
}

// A late member of a trigger batch is judged off its batch slot too: the
// member waiting for a slot behind it gets the slot and runs meanwhile,
// the late one expires, and the batch is settled as usual.
func TestLateBatchMemberJudgedOffItsSlot(t *testing.T) {
	t.Parallel()
	j := newJudgeRig(t)
	e, ev, q, c := j.env, j.ev, j.q, &j.c
	started, release := j.started, j.release
	r := j.startWorker(Config{Concurrency: 1})
	col := r.w.metrics

	onTime := lateTrigger(2, wire.TriggerSchedule, "fire_once", 60_000, 0)
	onTime.Handler = "block"
	e.publishBatch(lateFireOnce(1), onTime)
	recv(t, "the late member's supersede question", q.asked)
	recv(t, "run 2 to start on the batch slot run 1 left", started)
	q.answer <- 99

	if f := ev.waitFinished(1)[1]; f.Status != wire.StatusExpired {
		t.Errorf("run 1 finished %+v, want EXPIRED", f)
	}
	if s := series(t, col); s[busyBatch] != 1 {
		t.Errorf("%s = %v once run 1 expired, want 1 (run 2)", busyBatch, s[busyBatch])
	}
	close(release)
	if f := ev.waitFinished(2)[2]; f.Status != wire.StatusSucceeded {
		t.Errorf("run 2 finished %+v, want SUCCEEDED", f)
	}
	if got := c.of(1); len(got) != 0 {
		t.Errorf("run 1's handler called on %v, want never", got)
	}
	r.waitProcessed(1, 2)
	if left, pending := e.triggersLeft(), e.batchConsumer().NumAckPending; left != 0 || pending != 0 {
		t.Errorf("once both runs were processed: %d triggers left, %d unacknowledged; want the batch acked", left, pending)
	}
}

// When the pool of judges is full, a late trigger is judged on its slot,
// as before: that is what bounds the late triggers a worker takes.
func TestLateTriggerJudgedOnItsSlotWhenJudgesAreBusy(t *testing.T) {
	t.Parallel()
	j := newJudgeRig(t)
	e, ev, q := j.env, j.ev, j.q
	r := j.startWorker(Config{Concurrency: 1}, func(w *Worker) {
		for range cap(w.judges) {
			w.judges <- struct{}{}
		}
	})
	col := r.w.metrics

	e.publish(lateFireOnce(1))
	recv(t, "the late trigger's supersede question", q.asked)
	if s := series(t, col); s[busyShared] != 1 || s[judging] != float64(judgePool(1)) {
		t.Errorf("while run 1 is judged: %s = %v, %s = %v; want 1 and %d",
			busyShared, s[busyShared], judging, s[judging], judgePool(1))
	}
	q.answer <- 99
	if f := ev.waitFinished(1)[1]; f.Status != wire.StatusExpired {
		t.Errorf("run 1 finished %+v, want EXPIRED", f)
	}
	r.waitProcessed(1)
	if left, busy := e.triggersLeft(), series(t, col)[busyShared]; left != 0 || busy != 0 {
		t.Errorf("once run 1 was processed: %d triggers left, %v slots busy; want none", left, busy)
	}
}
