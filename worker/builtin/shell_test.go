package builtin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

func shellEnv(t *testing.T, cfg builtin.ShellConfig) *env {
	return newEnv(t, map[string]worker.HandlerFunc{"shell": builtin.Shell(cfg)})
}

// Every stdout and stderr line of a script reaches the run log, stdout at
// info and stderr at warn, in order within each stream.
func TestShellOutputInRunLog(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	e.Publish(trigger(1, "shell", "echo out one; echo err one >&2; printf 'out two\\r\\n'; echo; echo err two >&2"))
	stdout, stderr := e.succeeded(1)
	if want := []string{"info out one", "info out two", "info "}; !slices.Equal(stdout, want) {
		t.Errorf("stdout lines %q, want %q", stdout, want)
	}
	if want := []string{"warn err one", "warn err two"}; !slices.Equal(stderr, want) {
		t.Errorf("stderr lines %q, want %q", stderr, want)
	}
}

// A non-zero exit fails the run with the status and the last stderr line.
func TestShellNonZeroExitFails(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	e.Publish(trigger(1, "shell", "echo working; echo first problem >&2; echo disk full >&2; echo >&2; exit 3"))
	e.Publish(trigger(2, "shell", "exit 4"))
	if f := e.finished(1); f.Status != wire.StatusFailed || f.Message != "exit status 3: disk full" {
		t.Errorf("finished %+v, want FAILED with %q", f, "exit status 3: disk full")
	}
	if f := e.finished(2); f.Status != wire.StatusFailed || f.Message != "exit status 4" {
		t.Errorf("finished %+v, want FAILED with %q", f, "exit status 4")
	}
	if _, stderr := output(e.logLines(1)); !slices.Contains(stderr, "warn disk full") {
		t.Errorf("stderr lines %q", stderr)
	}
}

// The command sees the run's JETJOB_* variables, the configured and the
// params' variables, the worker's variables it is told to pass, but not
// the worker's own JETJOB_* configuration (shell_env_test.go: nor anything
// else of the worker's).
func TestShellEnvironment(t *testing.T) {
	t.Setenv("JETJOB_NATS_PASSWORD", "secret")
	t.Setenv("SHELL_TEST_INHERITED", "yes")
	e := shellEnv(t, builtin.ShellConfig{Env: []string{"FROM_CONFIG=c", "BOTH=config"}, PassEnv: []string{"SHELL_TEST_INHERITED", "JETJOB_NATS_PASSWORD"}})
	params := `{"command": "env", "env": {"FROM_PARAMS": "p", "BOTH": "params"}}`
	tr := trigger(5, "shell", params)
	tr.JobID, tr.Attempt, tr.ShardIndex, tr.ShardTotal = 77, 2, 1, 3
	tr.TriggerType = wire.TriggerRetry
	tr.ScheduledAt = time.Date(2025, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	e.Publish(tr)
	stdout, _ := e.succeeded(5)
	for _, want := range []string{
		"JETJOB_RUN_ID=5", "JETJOB_JOB_ID=77", "JETJOB_GROUP=g", "JETJOB_SCHEDULED_AT=2025-03-01T12:00:00.123Z",
		"JETJOB_ATTEMPT=2", "JETJOB_DELIVERY=1", "JETJOB_SHARD_INDEX=1", "JETJOB_SHARD_TOTAL=3", "JETJOB_TRIGGER_TYPE=retry",
		"JETJOB_PARAMS=" + params, "FROM_CONFIG=c", "FROM_PARAMS=p", "BOTH=params", "SHELL_TEST_INHERITED=yes",
	} {
		if !slices.Contains(stdout, "info "+want) {
			t.Errorf("%s missing from the environment %q", want, stdout)
		}
	}
	for _, l := range stdout {
		if strings.Contains(l, "JETJOB_NATS_PASSWORD") {
			t.Errorf("worker configuration passed to the command: %s", l)
		}
	}
}

// Outside a sharding broadcast the command sees shard 0 of 1, as an
// xxl-job script's $2 and $3 did: `% $JETJOB_SHARD_TOTAL` works.
func TestShellShardOutsideBroadcast(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	e.Publish(trigger(6, "shell", "echo shard=$JETJOB_SHARD_INDEX/$JETJOB_SHARD_TOTAL mod=$((7 % JETJOB_SHARD_TOTAL))"))
	stdout, _ := e.succeeded(6)
	if !slices.Contains(stdout, "info shard=0/1 mod=0") {
		t.Errorf("output %q, want shard=0/1 mod=0", stdout)
	}
}

// JSON params run a command directly: no shell expansion, with dir; bad
// JSON params fail the run with a clear message.
func TestShellJSONParams(t *testing.T) {
	base := t.TempDir()
	if err := os.Mkdir(filepath.Join(base, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := shellEnv(t, builtin.ShellConfig{Dir: base})
	e.Publish(trigger(1, "shell", `  {"command": "echo", "args": ["a  b", "$HOME", "*"]}`))
	e.Publish(trigger(2, "shell", `{"command": "pwd", "dir": "sub"}`))
	e.Publish(trigger(3, "shell", "pwd"))
	bad := map[int64]struct{ params, want string }{
		4:  {`{"command": "echo", "args": [1]}`, "not a valid JSON object"},
		5:  {`{"command": "echo"`, "not a valid JSON object"},
		6:  {`{"cmd": "echo"}`, `unknown field "cmd"`},
		7:  {`{"args": ["x"]}`, `"command" is required`},
		8:  {`{"command": "echo"} trailing`, "data after the object"},
		9:  {"   ", "params are empty"},
		10: {`{"command": "/nonexistent/binary"}`, "start /nonexistent/binary"},
	}
	for id, b := range bad {
		e.Publish(trigger(id, "shell", b.params))
	}
	for id, want := range map[int64]string{1: "info a  b $HOME *", 2: "info " + filepath.Join(base, "sub"), 3: "info " + base} {
		if f := e.finished(id); f.Status != wire.StatusSucceeded {
			t.Errorf("run %d finished %+v", id, f)
		}
		if stdout, _ := output(e.logLines(id)); !slices.Equal(stdout, []string{want}) {
			t.Errorf("run %d output %q, want %q", id, stdout, want)
		}
	}
	for id, b := range bad {
		if f := e.finished(id); f.Status != wire.StatusFailed || !strings.Contains(f.Message, b.want) {
			t.Errorf("params %q: finished %+v, want FAILED containing %q", b.params, f, b.want)
		}
	}
}

// At the run's timeout the whole process group goes, including a
// grandchild that ignores SIGTERM: it is SIGKILLed after the grace.
func TestShellTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile, shFile := filepath.Join(dir, "grandchild"), filepath.Join(dir, "sh")
	e := shellEnv(t, builtin.ShellConfig{Env: []string{"PIDFILE=" + pidFile, "SHFILE=" + shFile}})
	tr := trigger(1, "shell", `( trap '' TERM; exec sleep 60 ) & echo $! > "$PIDFILE"; echo $$ > "$SHFILE"; wait`)
	tr.TimeoutMS = 2000
	e.Publish(tr)
	pid, shPID := readPID(t, pidFile), readPID(t, shFile)
	killAtEnd(t, pid)
	if gone(pid) || gone(shPID) {
		t.Fatalf("script processes gone before the timeout (grandchild %d, sh %d)", pid, shPID)
	}
	if f := e.finished(1); f.Status != wire.StatusTimedOut {
		t.Fatalf("finished %+v, want TIMED_OUT", f)
	}
	testwait.Eventually(t, waitLimit, "the grandchild to be gone", func() bool { return gone(pid) })
	if !gone(shPID) {
		t.Errorf("the shell %d survived the timeout", shPID)
	}
	var sigkill bool
	for _, l := range e.logLines(1) {
		sigkill = sigkill || strings.Contains(l.Msg, "SIGKILL")
	}
	if !sigkill {
		t.Error("no SIGKILL escalation in the run log, though the grandchild ignored SIGTERM")
	}
}

// A cancelled run: the handler returns the context's error, after the
// command was reaped, and nothing of the group survives.
func TestShellCancelStopsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile, shFile := filepath.Join(dir, "grandchild"), filepath.Join(dir, "sh")
	h := builtin.Shell(builtin.ShellConfig{Env: []string{"PIDFILE=" + pidFile, "SHFILE=" + shFile}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- h(ctx, directJob(zaptest.NewLogger(t), `sleep 60 & echo $! > "$PIDFILE"; echo $$ > "$SHFILE"; wait`))
	}()
	pid, shPID := readPID(t, pidFile), readPID(t, shFile)
	killAtEnd(t, pid)
	if gone(pid) || gone(shPID) {
		t.Fatal("script processes gone before the cancellation")
	}
	select {
	case err := <-done:
		t.Fatalf("handler returned before the cancellation: %v", err)
	default:
	}
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(waitLimit):
		t.Fatal("handler did not return after the cancellation")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("handler returned %v, want context.Canceled", err)
	}
	// The shell is the handler's child: reaped before the handler
	// returned, it no longer exists at all (not even as a zombie).
	if err := syscall.Kill(shPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("shell %d still exists after the handler returned: kill 0 = %v", shPID, err)
	}
	testwait.Eventually(t, waitLimit, "the grandchild to be gone", func() bool { return gone(pid) })
}

// A background process the command leaves behind ends with the run, and
// does not hold the run open.
func TestShellBackgroundProcessEndsWithRun(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg")
	h := builtin.Shell(builtin.ShellConfig{Env: []string{"PIDFILE=" + pidFile}})
	core, logs := observer.New(zapcore.DebugLevel)
	err := h(context.Background(), directJob(zap.New(core), `sleep 60 & echo $! > "$PIDFILE"; echo started`))
	pid := readPID(t, pidFile)
	killAtEnd(t, pid)
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	testwait.Eventually(t, waitLimit, "the background process to be gone", func() bool { return gone(pid) })
	if logs.FilterMessage("started").Len() != 1 {
		t.Errorf("output line missing: %v", logs.All())
	}
}

// A process that escaped the group (setsid) and keeps the output open
// cannot hold the handler: the output is abandoned after a bound.
func TestShellEscapedProcessDoesNotHang(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "escaped")
	h := builtin.Shell(builtin.ShellConfig{Env: []string{"PIDFILE=" + pidFile}, KillGrace: 100 * time.Millisecond})
	core, logs := observer.New(zapcore.DebugLevel)
	done := make(chan error, 1)
	go func() {
		done <- h(context.Background(), directJob(zap.New(core),
			`setsid sh -c 'echo $$ > "$PIDFILE"; exec sleep 60' & while [ ! -s "$PIDFILE" ]; do sleep 0.01; done`))
	}()
	pid := readPID(t, pidFile)
	killAtEnd(t, pid)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("handler: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("handler held by a process outside its group")
	}
	if logs.FilterMessageSnippet("no longer read").Len() != 1 {
		t.Errorf("abandoned output not logged: %v", logs.All())
	}
}

// A command writes its run's output, one JSON value, to the file named in
// $JETJOB_OUTPUT: it travels in the finished event. An empty file sets
// none; what is not JSON fails the run, saying so.
func TestShellOutputFile(t *testing.T) {
	e := shellEnv(t, builtin.ShellConfig{})
	e.Publish(trigger(1, "shell", `printf '{"rows": 42}\n' > "$JETJOB_OUTPUT"`))
	e.Publish(trigger(2, "shell", `true`))
	e.Publish(trigger(3, "shell", `echo 'not json' > "$JETJOB_OUTPUT"`))
	if f := e.finished(1); f.Status != wire.StatusSucceeded || string(f.Output) != `{"rows":42}` {
		t.Errorf("finished %+v (output %s), want SUCCEEDED with {\"rows\":42}", f, f.Output)
	}
	if f := e.finished(2); f.Status != wire.StatusSucceeded || f.Output != nil {
		t.Errorf("finished %+v (output %s), want SUCCEEDED with no output", f, f.Output)
	}
	if f := e.finished(3); f.Status != wire.StatusFailed || !strings.Contains(f.Message, "JETJOB_OUTPUT") {
		t.Errorf("finished %+v, want FAILED naming JETJOB_OUTPUT", f)
	}
}
