package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testpki"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/shared/wire"
)

// These tests run the real binary, built once, as a separate process.

const waitLimit = jstest.WaitLimit

var binary string // built by TestMain

// The build the test binary reports, set as the Makefile sets it.
const (
	testVersion = "v0.0.0-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2026-01-02T03:04:05Z"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jetjob-worker-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "jetjob-worker")
	const pkg = "github.com/jetjob/jetjob/internal/version."
	build := exec.Command("go", "build", "-o", binary, "-ldflags",
		"-X "+pkg+"version="+testVersion+" -X "+pkg+"commit="+testCommit+" -X "+pkg+"date="+testDate, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // the binary must be static
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building jetjob-worker with CGO_ENABLED=0: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running jetjob-worker.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	out    *syncBuffer // stdout and stderr
	exited chan struct{}
	err    error // set before exited is closed
}

// start runs the binary with args and only the given JETJOB_* variables
// (the test's own environment, if it has any, is not passed on), and the
// public key of the triggers jstest publishes unless env names
// JETJOB_TRIGGER_PUBLIC_KEYS itself.
func start(t *testing.T, env map[string]string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "JETJOB_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if _, ok := env["JETJOB_METRICS_LISTEN"]; !ok && !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--metrics-listen")
	}) {
		// Not the default :9091: tests (and other processes on the host)
		// must not compete for one port.
		cmd.Env = append(cmd.Env, "JETJOB_METRICS_LISTEN=127.0.0.1:0")
	}
	if _, ok := env["JETJOB_TRIGGER_PUBLIC_KEYS"]; !ok {
		cmd.Env = append(cmd.Env, "JETJOB_TRIGGER_PUBLIC_KEYS="+jstest.PublicKey())
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &proc{t: t, cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("jetjob-worker output:\n%s", p.out.String())
		}
	})
	return p
}

// wait returns the exit status, failing the test if the process does not
// exit within waitLimit.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(waitLimit):
		p.t.Fatalf("jetjob-worker did not exit within %s; output:\n%s", waitLimit, p.out.String())
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	p.t.Fatal(p.err)
	return -1
}

// term sends SIGTERM, which asks for a graceful stop.
func (p *proc) term() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
}

// stopsCleanly sends SIGTERM and requires exit status 0 (start's cleanup
// shows the output when it is not).
func (p *proc) stopsCleanly() {
	p.t.Helper()
	p.term()
	if code := p.wait(); code != 0 {
		p.t.Fatalf("exit status %d after SIGTERM, want 0", code)
	}
}

// waitOutput polls until the process's output contains s (start's
// cleanup shows the output if it never does).
func (p *proc) waitOutput(s string) {
	p.t.Helper()
	testwait.Eventually(p.t, waitLimit, fmt.Sprintf("jetjob-worker to write %q", s), func() bool {
		if strings.Contains(p.out.String(), s) {
			return true
		}
		select {
		case <-p.exited:
			p.t.Fatalf("jetjob-worker exited (%v) before writing %q; output:\n%s", p.err, s, p.out.String())
		default:
		}
		return false
	})
}

// natsEnv is the test's side of an embedded server.
type natsEnv struct{ *jstest.Env }

// startNATS starts an embedded server (on port, or a free one if 0), with
// jetjob's streams provisioned, and returns its URL.
func startNATS(t *testing.T, port int) (*natsEnv, string) {
	t.Helper()
	return startNATSWith(t, natsembed.Options{StoreDir: t.TempDir(), Port: port})
}

// startNATSWith is startNATS with the server's options and the test
// client's (for a server requiring TLS and credentials).
func startNATSWith(t *testing.T, so natsembed.Options, co ...nats.Option) (*natsEnv, string) {
	t.Helper()
	e := &natsEnv{jstest.Start(t, so, co...)}
	return e, e.URL()
}

// publish publishes a shell trigger of group; job id is 100+run id.
func (e *natsEnv) publish(group string, runID int64, params string) {
	e.T.Helper()
	e.Publish(&wire.Trigger{
		RunID: runID, JobID: 100 + runID, Group: group, Handler: "shell", Params: params,
		TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC(),
	})
}

// logMsgs returns a run's log lines as "level message".
func (e *natsEnv) logMsgs(group string, runID int64) []string {
	e.T.Helper()
	var out []string
	for _, l := range e.LogLines(group, runID) {
		out = append(out, l.Level+" "+l.Msg)
	}
	return out
}

// waitHeartbeat waits for the worker's registry entry.
func (e *natsEnv) waitHeartbeat(group, id string) *wire.WorkerInfo {
	e.T.Helper()
	var hb *wire.WorkerInfo
	testwait.Eventually(e.T, waitLimit, "the registry entry of worker "+id, func() bool {
		hb = e.heartbeat(group, id)
		return hb != nil
	})
	return hb
}

// heartbeat returns the worker's registry entry, nil if it has none.
func (e *natsEnv) heartbeat(group, id string) *wire.WorkerInfo {
	e.T.Helper()
	kv, err := stream.Workers(jstest.Ctx(e.T), e.JS, stream.Config{})
	if err != nil {
		e.T.Fatal(err)
	}
	entry, err := kv.Get(jstest.Ctx(e.T), stream.WorkerKey(group, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		e.T.Fatal(err)
	}
	info, err := wire.DecodeWorkerInfo(entry.Value())
	if err != nil {
		e.T.Fatal(err)
	}
	return info
}

// Configured by the environment alone, the binary runs shell triggers,
// registers itself, and stops gracefully on SIGTERM: a running run
// finishes, the exit status is 0 and the registry entry is gone.
func TestBinaryRunsShellJobs(t *testing.T) {
	e, url := startNATS(t, 0)
	proceed := filepath.Join(t.TempDir(), "proceed")
	p := start(t, map[string]string{
		"JETJOB_NATS_URL": url, "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell", "JETJOB_WORKER_ID": "bin1",
		"JETJOB_CONCURRENCY": "3", "JETJOB_LOG_FORMAT": "console",
		"PROCEED": proceed, "JETJOB_SHELL_PASS_ENV": "PROCEED", // passed on to commands
	})

	e.publish("ops", 1, "echo hello from $JETJOB_RUN_ID; echo careful >&2")
	if f := e.Event(1, wire.EventFinished); f.Status != wire.StatusSucceeded || f.WorkerID != "bin1" {
		t.Fatalf("finished %+v", f)
	}
	msgs := e.logMsgs("ops", 1)
	for _, want := range []string{`info hello from 1 {"stream":"stdout"}`, `warn careful {"stream":"stderr"}`} {
		if !slices.Contains(msgs, want) {
			t.Errorf("%q missing from the run log %q", want, msgs)
		}
	}
	e.publish("ops", 2, "exit 7")
	if f := e.Event(2, wire.EventFinished); f.Status != wire.StatusFailed || f.Message != "exit status 7" {
		t.Errorf("finished %+v", f)
	}

	hb := e.waitHeartbeat("ops", "bin1")
	if !slices.Equal(hb.Handlers, []string{"shell"}) || hb.Capacity != 3 || hb.PID != p.cmd.Process.Pid {
		t.Errorf("heartbeat %+v", hb)
	}
	if hb.Version != testVersion {
		t.Errorf("registry version %q, want the build's %q", hb.Version, testVersion)
	}

	// SIGTERM while a run is going: it finishes within the shutdown grace.
	e.publish("ops", 3, `echo begin; while [ ! -e "$PROCEED" ]; do sleep 0.02; done; echo end`)
	e.Event(3, wire.EventStarted)
	p.term()
	p.waitOutput("worker stopping")
	if err := os.WriteFile(proceed, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if f := e.Event(3, wire.EventFinished); f.Status != wire.StatusSucceeded {
		t.Errorf("run during the stop finished %+v", f)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM, want 0; output:\n%s", code, p.out.String())
	}
	if hb := e.heartbeat("ops", "bin1"); hb != nil {
		t.Errorf("registry entry left after a graceful stop: %+v", hb)
	}
	if msgs := e.logMsgs("ops", 3); !slices.Contains(msgs, `info end {"stream":"stdout"}`) {
		t.Errorf("run 3 log %q", msgs)
	}
}

// startWithoutNATS starts the binary on a port where no NATS listens yet
// and returns once it says it is waiting for one.
func startWithoutNATS(t *testing.T) (*proc, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p := start(t, map[string]string{
		"JETJOB_NATS_URL": fmt.Sprintf("nats://127.0.0.1:%d", port), "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell",
	})
	p.waitOutput("waiting for NATS JetStream")
	return p, port
}

// NATS down at start is waited out; the worker runs once it is up.
func TestBinaryWaitsForNATS(t *testing.T) {
	p, port := startWithoutNATS(t)

	e, _ := startNATS(t, port)
	e.publish("ops", 1, "echo late but fine")
	if f := e.Event(1, wire.EventFinished); f.Status != wire.StatusSucceeded {
		t.Fatalf("finished %+v", f)
	}
	p.stopsCleanly()
}

// SIGTERM while NATS is still unreachable ends the wait with status 0.
func TestBinaryStopsWhileWaitingForNATS(t *testing.T) {
	p, _ := startWithoutNATS(t)
	p.stopsCleanly()
}

// Every bad setting exits with status 2 and a message naming it; nothing
// is connected to (the NATS URL points nowhere).
func TestBinaryBadConfig(t *testing.T) {
	base := map[string]string{"JETJOB_NATS_URL": "nats://127.0.0.1:1", "JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"no group", with("JETJOB_GROUP", ""), nil, []string{"--group / JETJOB_GROUP: required"}},
		{"bad group", with("JETJOB_GROUP", "a.b"), nil, []string{`--group / JETJOB_GROUP: "a.b"`}},
		{"no handlers", with("JETJOB_HANDLERS", ""), nil, []string{"--handlers / JETJOB_HANDLERS: no handler enabled"}},
		{"unknown handler", with("JETJOB_HANDLERS", "shell,ftp"), nil, []string{`unknown handler "ftp"`}},
		{"bad env number", with("JETJOB_CONCURRENCY", "lots"), nil, []string{`JETJOB_CONCURRENCY="lots": want an integer`}},
		{"bad env duration", with("JETJOB_ACK_WAIT", "30"), nil, []string{`JETJOB_ACK_WAIT="30": want a duration`}},
		{"bad flag", base, []string{"--max-deliver", "0"}, []string{"--max-deliver / JETJOB_MAX_DELIVER: 0: want at least 1"}},
		{"unparsable flag", base, []string{"--concurrency=x"}, []string{`invalid argument "x" for "--concurrency"`}},
		{"http without hosts", with("JETJOB_HANDLERS", "http"), nil, []string{"--http-allow-hosts / JETJOB_HTTP_ALLOW_HOSTS: empty"}},
		{"bad allow host", with("JETJOB_HANDLERS", "http", "JETJOB_HTTP_ALLOW_HOSTS", "https://x.com"), nil, []string{"want a host name, not a URL"}},
		{"missing shell", with("JETJOB_SHELL", "/nonexistent/sh"), nil, []string{"--shell / JETJOB_SHELL"}},
		{"bad replicas", with("JETJOB_STREAM_REPLICAS", "7"), nil, []string{"--stream-replicas / JETJOB_STREAM_REPLICAS: 7"}},
		{"bad log level", with("JETJOB_LOG_LEVEL", "loud"), nil, []string{"--log-level / JETJOB_LOG_LEVEL"}},
		{"bad nats url", with("JETJOB_NATS_URL", "http://u:hunter2@x"), nil, []string{"--nats-url / JETJOB_NATS_URL", "u:xxxxx@x"}},
		{"user without password", with("JETJOB_NATS_USER", "u"), nil, []string{"--nats-user / JETJOB_NATS_USER: give both"}},
		{"missing creds file", with("JETJOB_NATS_CREDS", "/nonexistent.creds"), nil, []string{"--nats-creds / JETJOB_NATS_CREDS"}},
		{"cert without key", with("JETJOB_NATS_TLS_CERT", "/x.pem"), nil, []string{"--nats-tls-cert / JETJOB_NATS_TLS_CERT"}},
		{"bad metrics listen", with("JETJOB_METRICS_LISTEN", "9091"), nil, []string{`--metrics-listen / JETJOB_METRICS_LISTEN: "9091": want host:port`}},
		{"bad metrics port", base, []string{"--metrics-listen", ":http"}, []string{`--metrics-listen / JETJOB_METRICS_LISTEN: ":http": port "http"`}},
		{"argument", base, []string{"extra"}, []string{`unexpected argument "extra"`}},
		{"bad egress allow", with("JETJOB_EGRESS_ALLOW", "*.svc.cluster.local"), nil, []string{"--egress-allow / JETJOB_EGRESS_ALLOW", "wildcards are not allowed"}},
		{"bad pass env", with("JETJOB_SHELL_PASS_ENV", "HOME,JETJOB_NATS_PASSWORD"), nil, []string{"--shell-pass-env / JETJOB_SHELL_PASS_ENV: JETJOB_NATS_PASSWORD"}},
		{"no trigger key", with("JETJOB_TRIGGER_PUBLIC_KEYS", "-"), nil, []string{"no trigger public key",
			"--insecure-accept-unsigned-triggers / JETJOB_INSECURE_ACCEPT_UNSIGNED_TRIGGERS"}},
		{"bad trigger key", with("JETJOB_TRIGGER_PUBLIC_KEYS", "c2hvcnQ="), nil, []string{"--trigger-public-keys / JETJOB_TRIGGER_PUBLIC_KEYS: key 1 of the list"}},
		{"missing trigger key file", with("JETJOB_TRIGGER_PUBLIC_KEY_FILES", "/nonexistent.pub"), nil, []string{"--trigger-public-key-files / JETJOB_TRIGGER_PUBLIC_KEY_FILES"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env["JETJOB_TRIGGER_PUBLIC_KEYS"] == "-" {
				c.env["JETJOB_TRIGGER_PUBLIC_KEYS"] = "" // set, and empty: no key
			}
			p := start(t, c.env, c.args...)
			if code := p.wait(); code != 2 {
				t.Fatalf("exit status %d, want 2; output:\n%s", code, p.out.String())
			}
			out := p.out.String()
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output %q does not contain %q", out, w)
				}
			}
			if strings.Contains(out, "hunter2") {
				t.Errorf("password printed: %q", out)
			}
		})
	}
	// The flag wins over its variable.
	p := start(t, with("JETJOB_CONCURRENCY", "lots"), "--concurrency", "0")
	if code := p.wait(); code != 2 || !strings.Contains(p.out.String(), "--concurrency / JETJOB_CONCURRENCY: 0") ||
		strings.Contains(p.out.String(), "lots") {
		t.Errorf("exit %d, output %q: want the flag's value judged, not the variable's", code, p.out.String())
	}
}

// --version prints the build's version, commit and date and exits 0, with
// no other setting given.
func TestBinaryVersion(t *testing.T) {
	p := start(t, nil, "--version")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; output:\n%s", code, p.out.String())
	}
	if want := "jetjob-worker " + testVersion + " (commit 0123456789ab, " + testDate + ")\n"; p.out.String() != want {
		t.Errorf("--version printed %q, want %q", p.out.String(), want)
	}
}

// Settings from a config file, the environment and flags, in that order of
// strength, reach a NATS that requires TLS with client certificates and a
// password; the password (a secret) is never printed.
func TestBinaryConfigFileAndTLS(t *testing.T) {
	dir := t.TempDir()
	pki, err := testpki.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, url := startNATSWith(t, natsembed.Options{StoreDir: t.TempDir(), TLS: pki.ServerTLS(), User: "jj", Password: "hunter2"},
		nats.UserInfo("jj", "hunter2"), nats.RootCAs(pki.CAFile), nats.ClientCert(pki.ClientCert, pki.ClientKey))
	file := filepath.Join(dir, "worker.yaml")
	body := "# kept in git: no secret here\n" +
		"nats-url: " + url + "\n" +
		"nats-user: jj\n" +
		"nats-tls-ca: " + pki.CAFile + "\n" +
		"nats-tls-cert: " + pki.ClientCert + "\n" +
		"nats-tls-key: " + pki.ClientKey + "\n" +
		"group: ops\n" +
		"handlers: [shell]\n" +
		"concurrency: 2\n" + // the environment wins
		"id: from-file\n" + // the flag wins
		"log-format: console\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, map[string]string{"JETJOB_NATS_PASSWORD": "hunter2", "JETJOB_CONCURRENCY": "5", "JETJOB_WORKER_ID": "from-env"},
		"--config", file, "--id", "tls1")
	hb := e.waitHeartbeat("ops", "tls1")
	if hb.Capacity != 5 {
		t.Errorf("capacity %d, want 5 from JETJOB_CONCURRENCY over the file's 2", hb.Capacity)
	}
	e.publish("ops", 1, "echo over tls")
	if f := e.Event(1, wire.EventFinished); f.Status != wire.StatusSucceeded || f.WorkerID != "tls1" {
		t.Errorf("finished %+v", f)
	}
	p.stopsCleanly()
	if strings.Contains(p.out.String(), "hunter2") {
		t.Errorf("the password was printed:\n%s", p.out.String())
	}

	// A key that is no flag is refused, naming it.
	if err := os.WriteFile(file, []byte(body+"concurency: 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p = start(t, nil, "--config", file)
	if code := p.wait(); code != 2 || !strings.Contains(p.out.String(), `unknown key "concurency"`) {
		t.Errorf("exit status %d, output %q: want 2 and the unknown key named", code, p.out.String())
	}
}

// Help shows defaults and variable names, never values the environment
// holds.
func TestBinaryHelpShowsNoSecret(t *testing.T) {
	p := start(t, map[string]string{"JETJOB_NATS_URL": "nats://u:hunter2@nats:4222", "JETJOB_NATS_PASSWORD": "hunter3",
		"JETJOB_NATS_TOKEN": "hunter4", "JETJOB_GROUP": "ops"}, "--help")
	if code := p.wait(); code != 0 {
		t.Fatalf("exit status %d; output:\n%s", code, p.out.String())
	}
	out := p.out.String()
	for _, s := range []string{"hunter2", "hunter3", "hunter4"} {
		if strings.Contains(out, s) {
			t.Errorf("help shows %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, `(JETJOB_NATS_URL) (default "nats://127.0.0.1:4222")`) {
		t.Errorf("help lacks --nats-url's variable and default:\n%s", out)
	}
}

// With the NATS users deploy/nats/permissions.conf ships (group shell,
// workers worker-1 and worker-2), the binary runs its group's jobs under the
// group's user without one permission violation: it connects with the
// group's inbox prefix and leaves the streams to the scheduler's user. An
// id the group's user does not list cannot start: its directed consumer is
// refused.
func TestBinaryUnderGroupCredential(t *testing.T) {
	t.Setenv("JETJOB_NATS_PASSWORD_SCHEDULER", "scheduler-pw") // read by the server, not the binary
	t.Setenv("JETJOB_NATS_PASSWORD_SHELL", "shell-pw")
	e, url := startNATSWith(t, natsembed.Options{StoreDir: t.TempDir(), ConfigFile: "../../../deploy/nats/permissions.conf"},
		nats.UserInfo("jetjob-scheduler", "scheduler-pw"))
	env := map[string]string{
		"JETJOB_NATS_URL": url, "JETJOB_NATS_USER": "jetjob-worker-shell", "JETJOB_NATS_PASSWORD": "shell-pw",
		"JETJOB_GROUP": "shell", "JETJOB_HANDLERS": "shell", "JETJOB_WORKER_ID": "worker-1", "JETJOB_LOG_FORMAT": "console",
	}
	p := start(t, env)
	e.publish("shell", 1, "echo least privilege")
	if f := e.Event(1, wire.EventFinished); f.Status != wire.StatusSucceeded || f.WorkerID != "worker-1" {
		t.Fatalf("finished %+v", f)
	}
	if msgs := e.logMsgs("shell", 1); !slices.Contains(msgs, `info least privilege {"stream":"stdout"}`) {
		t.Errorf("run log %q", msgs)
	}
	e.waitHeartbeat("shell", "worker-1")
	p.stopsCleanly()
	if out := p.out.String(); strings.Contains(out, "Permissions Violation") {
		t.Errorf("the group's user was refused something its worker needs:\n%s", out)
	}

	env["JETJOB_WORKER_ID"] = "worker-9"
	p = start(t, env)
	if code := p.wait(); code == 0 || !strings.Contains(p.out.String(), "Permissions Violation for Publish to") ||
		!strings.Contains(p.out.String(), "$JS.API.CONSUMER.CREATE.JETJOB_TRIGGERS.worker-shell-worker-9.") {
		t.Errorf("an unlisted id: exit status %d, want a failure naming the refused consumer; output:\n%s", code, p.out.String())
	}
}
