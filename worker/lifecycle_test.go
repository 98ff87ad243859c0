package worker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/supervise"
)

// The tests of this file need no server: they run the stage runner over
// stages of their own.

// bareWorker is a Worker with what runStages needs and nothing else.
func bareWorker(t *testing.T) *Worker {
	t.Helper()
	w := &Worker{cfg: Config{Group: testGroup}, log: zaptest.NewLogger(t), runs: newRunTable()}
	sv, err := newSupervision(w, supervise.Config{Backoff: backoff.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond}}, supervise.TestSignals{})
	if err != nil {
		t.Fatal(err)
	}
	w.sup.super = sv
	return w
}

// journal records what the stages do, in order.
type journal struct {
	mu    sync.Mutex
	lines []string
}

func (j *journal) add(line string) {
	j.mu.Lock()
	j.lines = append(j.lines, line)
	j.mu.Unlock()
}

func (j *journal) get() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.lines)
}

// expect fails the test unless the journal holds want, in order.
func (j *journal) expect(t *testing.T, want ...string) {
	t.Helper()
	if got := j.get(); !slices.Equal(got, want) {
		t.Fatalf("journal %q\nwant %q", got, want)
	}
}

// recorded is a stage named name that records its start, its loop's end
// and its stop (with the failure it is given) in j.
func recorded(j *journal, name string) *stage {
	return &stage{
		name: name,
		loops: []loop{{name, func(ctx context.Context) error {
			<-ctx.Done()
			j.add("loop " + name + " ended")
			return nil
		}, supervise.Stop}},
		start: func(context.Context) error { j.add("start " + name); return nil },
		stop: func(_ context.Context, failure error) error {
			if failure != nil {
				j.add("stop " + name + " after " + failure.Error())
				return nil
			}
			j.add("stop " + name)
			return nil
		},
	}
}

// The stages start last first and stop in the order listed, each once
// its loops have returned; none stops before Run's context ends.
func TestStagesStartBackwardsStopInOrder(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	var j journal
	running := make(chan struct{})
	first := recorded(&j, "a")
	inner := first.start
	first.start = func(ctx context.Context) error { err := inner(ctx); close(running); return err }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.runStages(ctx, []*stage{first, recorded(&j, "b"), recorded(&j, "c")}) }()
	recv(t, "every stage started", running)
	j.expect(t, "start c", "start b", "start a")
	cancel()
	if err := recv(t, "runStages to return", done); err != nil {
		t.Fatalf("runStages: %v", err)
	}
	j.expect(t, "start c", "start b", "start a",
		"loop a ended", "stop a", "loop b ended", "stop b", "loop c ended", "stop c")
}

// A stage whose start fails is stopped, with the stages started before
// it; the stages that would have started after it never do, and the
// error is returned.
func TestStageStartFailureStopsWhatStarted(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	var j journal
	failing := recorded(&j, "b")
	failing.start = func(context.Context) error { j.add("start b"); return errors.New("init: injected") }
	err := w.runStages(context.Background(), []*stage{recorded(&j, "a"), failing, recorded(&j, "c")})
	if err == nil || err.Error() != "init: injected" {
		t.Fatalf("runStages: %v, want the start's error", err)
	}
	j.expect(t, "start c", "start b", "loop b ended", "stop b after init: injected", "loop c ended", "stop c after init: injected")
}

// A loop that fails under policy Stop stops the worker: every stage
// stops, told the failure, and runStages returns it.
func TestLoopFailureStopsEveryStage(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	var j journal
	broken := recorded(&j, "b")
	broken.loops = []loop{{"b", func(context.Context) error { return errors.New("injected") }, supervise.Stop}}
	err := w.runStages(context.Background(), []*stage{recorded(&j, "a"), broken, recorded(&j, "c")})
	const want = "component b failed and is not restarted in this process: injected"
	if err == nil || err.Error() != want {
		t.Fatalf("runStages: %v, want %q", err, want)
	}
	for _, name := range []string{"a", "b", "c"} {
		if !slices.Contains(j.get(), "stop "+name+" after "+want) {
			t.Errorf("stage %s not stopped with the failure: %q", name, j.get())
		}
	}
	if ready := w.Ready(); ready == nil || !strings.Contains(ready.Error(), "b") {
		t.Errorf("Ready after the failure: %v, want b named", ready)
	}
}

// A stage that ends at a stop step has its loops' context cancelled when
// the stop reaches that step, before the stage itself stops; that is their
// normal end, not a failure.
func TestStageEndsAtStopStep(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	var j journal
	var step stopStep
	ended := make(chan error, 1)
	sg := recorded(&j, "publishing")
	sg.endsAt = &step
	sg.loops = []loop{{"publisher", func(ctx context.Context) error {
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return nil
	}, supervise.Stop}}
	running := make(chan struct{})
	sg.start = func(context.Context) error { close(running); return nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.runStages(ctx, []*stage{sg}) }()
	recv(t, "the stage to start", running)
	step.reach(errResultsGivenUp)
	if cause := recv(t, "the loop to end", ended); !errors.Is(cause, errResultsGivenUp) {
		t.Fatalf("loop ended with %v, want the step's cause", cause)
	}
	if err := w.Ready(); err != nil {
		t.Fatalf("Ready after the step: %v, want nothing down", err)
	}
	cancel()
	if err := recv(t, "runStages to return", done); err != nil {
		t.Fatalf("runStages: %v", err)
	}
}

// A stop step cancels the contexts bound before it with its cause, and
// one bound after it at once; a context unbound (its work done) is left
// alone, and only the first cause counts.
func TestStopStep(t *testing.T) {
	t.Parallel()
	var s stopStep
	before, cancelBefore := s.bind(context.Background())
	done, cancelDone := s.bind(context.Background())
	cancelDone(nil)
	s.reach(errShutdown)
	s.reach(errors.New("later"))
	if !errors.Is(context.Cause(before), errShutdown) {
		t.Errorf("bound before: cause %v, want %v", context.Cause(before), errShutdown)
	}
	if !errors.Is(context.Cause(done), context.Canceled) {
		t.Errorf("unbound: cause %v, want its own cancel", context.Cause(done))
	}
	after, cancelAfter := s.bind(context.Background())
	if !errors.Is(context.Cause(after), errShutdown) {
		t.Errorf("bound after: cause %v, want %v", context.Cause(after), errShutdown)
	}
	cancelBefore(nil)
	cancelAfter(nil)
	if len(s.bound) != 0 {
		t.Errorf("%d contexts still bound", len(s.bound))
	}
}

// The table lists the stages in the order the doc of stages gives.
func TestStagesOrder(t *testing.T) {
	t.Parallel()
	w := bareWorker(t)
	var names []string
	for _, sg := range w.stages([]*lane{{name: laneShared}}) {
		names = append(names, sg.name)
	}
	want := []string{"fetching", "routing", "runs", "job locks", "run questions", "publishing", "kill requests", "heartbeat", "handlers"}
	if !slices.Equal(names, want) {
		t.Fatalf("stages %q, want %q", names, want)
	}
}
