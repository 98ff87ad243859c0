package builtin_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/internal/workertest"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// waitLimit bounds every wait: a hang becomes a failure.
const waitLimit = jstest.WaitLimit

const group = "g"

// env is an embedded NATS server with jetjob's streams and a worker of
// group running the given handlers.
type env struct{ *jstest.Env }

// newEnv starts NATS and a worker with handlers; the worker stops (and
// must stop cleanly) when the test ends.
func newEnv(t *testing.T, handlers map[string]worker.HandlerFunc) *env {
	t.Helper()
	e := &env{jstest.Start(t, natsembed.Options{StoreDir: t.TempDir()})}
	w, err := worker.New(worker.Config{NATS: e.Connect(), Group: group, Logger: zaptest.NewLogger(t), TriggerKeys: jstest.Keys})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range handlers {
		w.Handle(name, h)
	}
	stop := workertest.Start(t, w)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("worker Run: %v", err)
		}
	})
	return e
}

// trigger returns a valid manual trigger; job id is 1000+run id.
func trigger(runID int64, handler, params string) *wire.Trigger {
	return &wire.Trigger{
		RunID: runID, JobID: 1000 + runID, Group: group, Handler: handler, Params: params,
		TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC().Truncate(time.Millisecond),
	}
}

// finished reads events until run has its finished event.
func (e *env) finished(runID int64) wire.Event {
	e.T.Helper()
	return e.Event(runID, wire.EventFinished)
}

// logLines returns every line of a run's log. The worker publishes the
// finished event after its lines are stored, so call it after finished.
func (e *env) logLines(runID int64) []wire.LogLine {
	e.T.Helper()
	return e.LogLines(group, runID)
}

// succeeded waits for run's end, fatal unless it SUCCEEDED, and returns its
// command output (output).
func (e *env) succeeded(runID int64) (stdout, stderr []string) {
	e.T.Helper()
	if f := e.finished(runID); f.Status != wire.StatusSucceeded {
		e.T.Fatalf("run %d finished %+v", runID, f)
	}
	return output(e.logLines(runID))
}

// output returns the command output lines of a run's log, per stream, as
// "level text".
func output(lines []wire.LogLine) (stdout, stderr []string) {
	for _, l := range lines {
		if text, ok := strings.CutSuffix(l.Msg, ` {"stream":"stdout"}`); ok {
			stdout = append(stdout, l.Level+" "+text)
		} else if text, ok := strings.CutSuffix(l.Msg, ` {"stream":"stderr"}`); ok {
			stderr = append(stderr, l.Level+" "+text)
		}
	}
	return stdout, stderr
}

// readPID waits for a pid file written by a test script.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testwait.Eventually(t, waitLimit, "pid file "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// gone reports whether process pid has ended: it no longer exists (ESRCH),
// or it is a zombie, dead and waiting for a parent that reaps it (an
// orphan's new parent, PID 1 of a container, may never do so).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// "pid (comm) S ...": the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// killAtEnd makes sure a sleep process a test script started is gone when
// the test ends, even if the test failed before the code under test killed
// it. It checks the process is still that sleep, not a reuse of its pid.
func killAtEnd(t *testing.T, pid int) {
	t.Cleanup(func() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.HasPrefix(string(b), "sleep\x00") && !gone(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// directJob is a Job for calling a handler without a worker.
func directJob(log *zap.Logger, params string) *worker.Job {
	return &worker.Job{
		RunID: 1, JobID: 2, Group: group, Handler: "h", Params: params, TriggerType: worker.TriggerManual,
		ScheduledAt: time.Now().UTC(), Logger: log,
	}
}
