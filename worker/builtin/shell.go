//go:build unix

package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/worker"
)

// Defaults of ShellConfig.
const (
	DefaultShell     = "/bin/sh"
	DefaultKillGrace = 2 * time.Second
)

// maxOutputLine is where a longer output line is split into several log
// lines (the run log cuts lines at 16 KiB anyway).
const maxOutputLine = 8 << 10

// outputDrainWait bounds how long the output is read after the process
// group ended, at least.
const outputDrainWait = 5 * time.Second

// maxStderrInError bounds the stderr line quoted in a failed run's message.
const maxStderrInError = 1 << 10

// ShellConfig configures Shell. Zero values mean the defaults.
type ShellConfig struct {
	// Shell runs params given as a plain string, as Shell -c <params>;
	// default /bin/sh.
	Shell string
	// Dir is the working directory of commands (default the worker's); a
	// relative "dir" in the params is taken relative to it.
	Dir string
	// Env is added ("K=V") to the environment of commands (see Shell for
	// what else they get).
	Env []string
	// PassEnv names variables of the worker's environment that commands
	// get besides BaseEnv (the credentials a backup job needs, say).
	// JETJOB_* names are never passed: they are the worker's own settings.
	PassEnv []string
	// KillGrace is how long a cancelled command's process group has between
	// SIGTERM and SIGKILL; default 2s.
	KillGrace time.Duration
}

// shellParams is the JSON form of Shell's params.
type shellParams struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Dir     string            `json:"dir"`
}

// Shell returns a handler that runs a command per run. Its params are
// either a command line, run as `sh -c <params>`, or a JSON object (params
// starting with "{"):
//
//	{"command": "/usr/bin/backup", "args": ["--full"], "env": {"K": "V"}, "dir": "/srv"}
//
// which runs command directly with args, without a shell (command is looked
// up in PATH when it has no slash).
//
// The command gets a minimal environment, not the worker's (which may hold
// credentials: NATS's, a tracing backend's, a cloud's): of the worker's
// variables only those BaseEnv names (PATH, HOME, the locale, the time
// zone, ...) and those ShellConfig.PassEnv names, never a JETJOB_* one;
// then ShellConfig.Env, the params' env, and the run's JETJOB_RUN_ID,
// JETJOB_JOB_ID, JETJOB_GROUP, JETJOB_SCHEDULED_AT (RFC 3339, milliseconds),
// JETJOB_ATTEMPT, JETJOB_DELIVERY, JETJOB_SHARD_INDEX, JETJOB_SHARD_TOTAL
// (0 and 1 outside a sharding broadcast, as in xxl-job),
// JETJOB_TRIGGER_TYPE, JETJOB_PARAMS and JETJOB_OUTPUT: a file, empty at
// start, where the command may write one JSON value (at most 64 KiB), the
// run's output (worker.Job.SetOutput). A map/reduce root run also gets
// JETJOB_MAP, a part JETJOB_ITEM, a reduce run (ShellReduce)
// JETJOB_OUTPUTS: see "Map/reduce for commands" in mapreduce.go. Its
// stdin is /dev/null. Every line it writes goes to job.Logger, and so to
// the run log: stdout at info, stderr at warn, each with a field "stream".
//
// Exit status 0 is success; any other fails the run with
// "exit status N: <last stderr line>".
//
// The command runs in its own process group, and nothing of it outlives its
// run: when the run is cancelled (timeout, kill, shutdown) the group gets
// SIGTERM, then SIGKILL after KillGrace; when the command exits, whatever it
// left running in its group (background jobs) is stopped the same way. Only
// a process that moved to another group or session (setsid) escapes. The
// handler returns after the command has been reaped.
func Shell(cfg ShellConfig) worker.HandlerFunc {
	run := shellRunner(cfg)
	return func(ctx context.Context, job *worker.Job) error { return run(ctx, job, false, nil) }
}

// ShellReduce returns the reduce (worker.WithReduce) of a Shell handler
// of the same cfg: a map/reduce fire's reduce run runs the job's command
// once more, with JETJOB_OUTPUTS, a file holding its parts' outputs as one
// JSON array in part index order (null for a part that set none). Its
// JETJOB_OUTPUT is the fire's result.
//
// A reduce is registered per handler, so with it every shell job that
// maps gets a reduce run: its command must tell the reduce run apart (by
// JETJOB_OUTPUTS being set: JETJOB_TRIGGER_TYPE is reduce, but retry on
// its retries) and do nothing there when it has nothing to reduce.
func ShellReduce(cfg ShellConfig) worker.ReduceFunc {
	run := shellRunner(cfg)
	return func(ctx context.Context, job *worker.Job, outputs []json.RawMessage) error {
		return run(ctx, job, true, outputs)
	}
}

// shellRunner runs a Shell handler's command for a run of job, its
// reduce's when reduce is set.
func shellRunner(cfg ShellConfig) func(ctx context.Context, job *worker.Job, reduce bool, outputs []json.RawMessage) error {
	if cfg.Shell == "" {
		cfg.Shell = DefaultShell
	}
	if cfg.KillGrace <= 0 {
		cfg.KillGrace = DefaultKillGrace
	}
	cfg.Env = slices.Clone(cfg.Env)
	pass := append(slices.Clone(BaseEnv), cfg.PassEnv...)
	return func(ctx context.Context, job *worker.Job, reduce bool, outputs []json.RawMessage) error {
		c, err := parseShellParams(cfg, job.Params)
		if err != nil {
			return err
		}
		c.env = shellEnv(pass, cfg.Env, c.env, job)
		dir, err := os.MkdirTemp("", "jetjob-shell-*")
		if err != nil {
			return fmt.Errorf("shell: create the run's directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		path := filepath.Join(dir, "output.json")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			return fmt.Errorf("shell: create the output file: %w", err)
		}
		mio, err := prepareMapIO(job, dir, reduce, outputs)
		if err != nil {
			return fmt.Errorf("shell: %w", err)
		}
		c.env = append(append(c.env, "JETJOB_OUTPUT="+path), mio.env...)
		if err := c.run(ctx, jobLogger(job), cfg.KillGrace); err != nil {
			return err
		}
		if err := mio.mapFrom(job); err != nil {
			return fmt.Errorf("shell: %w", err)
		}
		return setOutputFrom(job, path)
	}
}

// setOutputFrom sets the run's output from the file the command was given
// in JETJOB_OUTPUT: JSON of at most worker.MaxOutputBytes, or nothing (an
// empty file sets no output). What is not JSON fails the run, naming why:
// the nodes after it in a workflow would otherwise read nothing.
func setOutputFrom(job *worker.Job, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("shell: JETJOB_OUTPUT: %w", err)
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, worker.MaxOutputBytes+1))
	if err != nil {
		return fmt.Errorf("shell: JETJOB_OUTPUT: %w", err)
	}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0:
		return nil
	case len(b) > worker.MaxOutputBytes:
		return fmt.Errorf("shell: JETJOB_OUTPUT: more than %d bytes", worker.MaxOutputBytes)
	case !json.Valid(b):
		return fmt.Errorf("shell: JETJOB_OUTPUT: the file does not hold one JSON value")
	}
	return job.SetOutput(json.RawMessage(b))
}

// command is one parsed invocation.
type command struct {
	path string
	args []string
	env  []string // from the params, "K=V"
	dir  string
	name string // for messages
}

// CheckShellParams reports why the shell handler would refuse params, with
// the handler's own decoder, so that a client (or a test of the examples
// in jetjob's help) can find a mistake before a run fails on it.
func CheckShellParams(params string) error {
	_, err := parseShellParams(ShellConfig{Shell: DefaultShell}, params)
	return err
}

func parseShellParams(cfg ShellConfig, params string) (*command, error) {
	trimmed := strings.TrimSpace(params)
	if trimmed == "" {
		return nil, errors.New(`shell: params are empty: want a command line, or a JSON object {"command": ..., "args": [...]}`)
	}
	if !strings.HasPrefix(trimmed, "{") {
		return &command{path: cfg.Shell, args: []string{"-c", params}, dir: cfg.Dir, name: cfg.Shell}, nil
	}
	var p shellParams
	if err := decodeParams(trimmed, &p); err != nil {
		return nil, fmt.Errorf(`shell: params start with "{" but are not a valid JSON object `+
			`{"command": ..., "args": [...], "env": {...}, "dir": ...}: %v`, err)
	}
	var errs []string
	if p.Command == "" {
		errs = append(errs, `"command" is required`)
	}
	if strings.ContainsRune(p.Command, 0) || slices.ContainsFunc(p.Args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
		errs = append(errs, "command and args must not contain NUL bytes")
	}
	keys := make([]string, 0, len(p.Env))
	for k, v := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			errs = append(errs, fmt.Sprintf("env %q: names must be non-empty without '=' or NUL, values without NUL", k))
			continue
		}
		keys = append(keys, k)
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, fmt.Errorf("shell: invalid params: %s", strings.Join(errs, "; "))
	}
	slices.Sort(keys)
	c := &command{path: p.Command, args: p.Args, dir: cfg.Dir, name: p.Command}
	for _, k := range keys {
		c.env = append(c.env, k+"="+p.Env[k])
	}
	if p.Dir != "" {
		c.dir = p.Dir
		if !filepath.IsAbs(p.Dir) && cfg.Dir != "" {
			c.dir = filepath.Join(cfg.Dir, p.Dir)
		}
	}
	return c, nil
}

// BaseEnv are the variables of the worker's environment every command
// gets: what a command line needs to find programs, a home and the
// locale. A name ending in "*" stands for every name it begins (LC_*).
var BaseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "HOSTNAME", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_*"}

// CheckPassEnv reports why names cannot be passed to commands
// (ShellConfig.PassEnv): each must be a variable name, not a JETJOB_* one.
func CheckPassEnv(names []string) error {
	for _, n := range names {
		switch {
		case n == "" || strings.ContainsAny(n, "=\x00"):
			return fmt.Errorf("%q is not a variable name", n)
		case strings.HasPrefix(n, "JETJOB_"):
			return fmt.Errorf("%s: the worker's own JETJOB_* settings are never passed to commands", n)
		}
	}
	return nil
}

// passed reports whether the worker's variable name goes to commands.
func passed(pass []string, name string) bool {
	if strings.HasPrefix(name, "JETJOB_") {
		return false
	}
	for _, p := range pass {
		if prefix, ok := strings.CutSuffix(p, "*"); ok && strings.HasPrefix(name, prefix) || p == name {
			return true
		}
	}
	return false
}

// shellEnv is the command's environment; later entries win (os/exec keeps
// the last value of a name).
func shellEnv(pass, cfgEnv, paramsEnv []string, job *worker.Job) []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); passed(pass, name) {
			env = append(env, kv)
		}
	}
	env = append(env, cfgEnv...)
	env = append(env, paramsEnv...)
	// The job's secrets (secret_env): after the params' env, which cannot
	// override them; before JETJOB_*, which they cannot override.
	env = append(env, job.SecretEnv...)
	return append(env,
		"JETJOB_RUN_ID="+strconv.FormatInt(job.RunID, 10),
		"JETJOB_JOB_ID="+strconv.FormatInt(job.JobID, 10),
		"JETJOB_GROUP="+job.Group,
		"JETJOB_SCHEDULED_AT="+job.ScheduledAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
		"JETJOB_ATTEMPT="+strconv.Itoa(job.Attempt),
		"JETJOB_DELIVERY="+strconv.Itoa(job.Delivery),
		"JETJOB_SHARD_INDEX="+strconv.Itoa(job.ShardIndex),
		"JETJOB_SHARD_TOTAL="+strconv.Itoa(job.ShardTotal),
		"JETJOB_TRIGGER_TYPE="+string(job.TriggerType),
		"JETJOB_PARAMS="+job.Params,
	)
}

// run starts the command, streams its output to log, and stops its process
// group as described on Shell.
func (c *command) run(ctx context.Context, log *zap.Logger, grace time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cmd := exec.Command(c.path, c.args...)
	cmd.Dir = c.dir
	cmd.Env = c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Our own pipes, not cmd.StdoutPipe: exec.Cmd would wait for its copy
	// goroutines, so a background process holding the output open would
	// hold the run. Here the readers are bounded separately.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("shell: %w", err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return fmt.Errorf("shell: %w", err)
	}
	defer errR.Close()
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		return fmt.Errorf("shell: start %s: %w", c.name, err)
	}
	pgid := cmd.Process.Pid
	began := time.Now()
	log.Info("command started", zap.String("command", c.name), zap.Int("pid", pgid))

	var lastStderr string // written by the stderr reader, read after readers is closed
	readers := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		readLines(outR, func(line string) { log.Info(line, zap.String("stream", "stdout")) })
	}()
	go func() {
		defer wg.Done()
		readLines(errR, func(line string) {
			log.Warn(line, zap.String("stream", "stderr"))
			if s := strings.TrimSpace(line); s != "" {
				lastStderr = s
			}
		})
	}()
	go func() { wg.Wait(); close(readers) }()

	exited, reap := watchExit(cmd)
	cancelled := false
	select {
	case <-exited:
	case <-ctx.Done():
		cancelled = true
		log.Warn("run cancelled: SIGTERM to the command's process group",
			zap.NamedError("cause", context.Cause(ctx)), zap.Int("pgid", pgid))
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	if !cancelled && !closed(readers) {
		// The command exited but its output is still open: the readers
		// are finishing, or something it started in the background holds
		// it. Such a process belongs to the run's group and goes with it.
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
	}
	if cancelled || !closed(readers) {
		// Until the output closes (every process that shares it has
		// ended) or the grace is over.
		if !waitBoth(exited, readers, grace) {
			log.Warn("process group still running after SIGTERM and the grace: SIGKILL",
				zap.Duration("grace", grace), zap.Int("pgid", pgid))
		}
	}
	// The leader is alive, or exited but not reaped yet (on Linux), so its
	// pid, the group's id, cannot have been reused: the group is still ours
	// to kill. Whatever is left of it goes now.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-exited
	waitErr := reap()

	t := time.NewTimer(max(grace, outputDrainWait))
	select {
	case <-readers:
	case <-t.C:
		log.Warn("command output still open after its process group ended (a process left the group): no longer read")
		outR.Close()
		errR.Close()
		<-readers
	}
	t.Stop()

	took := time.Since(began).Round(time.Millisecond)
	if cancelled {
		log.Warn("command stopped", zap.String("state", state(waitErr)), zap.Duration("took", took))
		return fmt.Errorf("shell: %s stopped (%s): %w", c.name, state(waitErr), ctx.Err())
	}
	if waitErr == nil {
		log.Info("command exited", zap.Int("exit_code", 0), zap.Duration("took", took))
		return nil
	}
	log.Warn("command failed", zap.String("state", state(waitErr)), zap.Duration("took", took))
	msg := state(waitErr)
	if lastStderr != "" {
		if len(lastStderr) > maxStderrInError {
			lastStderr = lastStderr[:maxStderrInError] + " …[truncated]"
		}
		msg += ": " + lastStderr
	}
	return errors.New(msg)
}

// state describes how a process ended: "exit status N", "signal: killed".
func state(waitErr error) string {
	if waitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return ee.ProcessState.String()
	}
	return waitErr.Error()
}

// waitBoth waits until a and b are both closed, at most d; it reports
// whether they were.
func waitBoth(a, b <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for a != nil || b != nil {
		select {
		case <-a:
			a = nil
		case <-b:
			b = nil
		case <-t.C:
			return false
		}
	}
	return true
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// readLines calls emit for every line of r, without its line ending. A line
// longer than maxOutputLine is emitted in pieces.
func readLines(r io.Reader, emit func(string)) {
	br := bufio.NewReaderSize(r, maxOutputLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if err == nil {
				line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			}
			emit(string(line))
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
