package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/secrets"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

const secretValue = "s3cr3t-VALUE-42"

// noHandlers gives the worker of a test that runs nothing a handler: a
// worker refuses to run without any.
func noHandlers(w *worker.Worker) {
	w.Handle("noop", func(context.Context, *worker.Job) error { return nil })
}

// withKeyring gives the system's scheduler a fresh secrets keyring (one
// key, k1): without one it refuses to store secrets.
func withKeyring(t *testing.T) func(*systemConfig) {
	t.Helper()
	kr, err := secrets.ParseKeyring("k1:" + secrets.GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	return func(c *systemConfig) { c.Secrets = kr }
}

// runLogText is the first 100 lines of run id's log, their messages one
// a line.
func runLogText(t *testing.T, sys *system, id int64) string {
	t.Helper()
	logs, err := sys.api.RunLogs(t.Context(), id, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	lines := make([]string, len(logs.Lines))
	for i, l := range logs.Lines {
		lines[i] = l.Msg
	}
	return strings.Join(lines, "\n")
}

// get reads path of the system's API as the bootstrap admin and returns
// the raw answer, failing the test unless it is 200.
func (s *system) get(t *testing.T, path string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, body, err)
	}
	return string(body)
}

// A shell job given a secret in its environment and in its params runs
// with the value, and the value appears nowhere anyone reads afterwards:
// not in any API answer (the secret, the job, the run with its params,
// the run's log, the audit log), not in the run's log lines (****), not
// in any audit row, not in any line the scheduler or the worker logs; the run's params still hold the placeholder. Each use
// is audited with the run's id.
func TestSecretsReachAShellJobAndNothingShowsThem(t *testing.T) {
	t.Parallel()
	// Every line the scheduler and the worker log (DEBUG up), kept to be
	// searched for the value at the end.
	obs, logged := observer.New(zapcore.DebugLevel)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("shell", builtin.Shell(builtin.ShellConfig{}))
	}, withKeyring(t), func(c *systemConfig) {
		c.Logger = zap.New(zapcore.NewTee(c.Logger.Core(), obs))
	})
	ctx := t.Context()
	sec, err := sys.api.CreateSecret(ctx, "g", "db-password", secretValue)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Version != 1 || sec.KeyID != "k1" {
		t.Errorf("created %+v, want version 1 under key k1", sec)
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "uses-secret", Handler: "shell", ScheduleType: "none",
		Params:    `echo "env=$DB_PW"; echo "param=${secret:db-password}"; echo "$DB_PW" >&2; exit 3`,
		SecretEnv: map[string]string{"DB_PW": "db-password"}})
	run := trigger(t, sys.api, job.ID, nil)
	ended := waitStatus(t, sys.api, run.ID, "FAILED", 30*time.Second)
	if ended.Message != "exit status 3: ****" {
		t.Errorf("run message %q, want the stderr line masked: %q", ended.Message, "exit status 3: ****")
	}
	runLog := runLogText(t, sys, run.ID)
	for _, want := range []string{"env=****", "param=****"} {
		if !strings.Contains(runLog, want) {
			t.Errorf("run log %q lacks %q: the command did not get the secret, or it was not masked", runLog, want)
		}
	}

	answers := map[string]string{}
	for _, p := range []string{"/api/v1/secrets", fmt.Sprintf("/api/v1/secrets/%d", sec.ID), "/api/v1/secrets?group=g",
		fmt.Sprintf("/api/v1/jobs/%d", job.ID), fmt.Sprintf("/api/v1/runs/%d", run.ID), fmt.Sprintf("/api/v1/runs/%d/logs", run.ID),
		fmt.Sprintf("/api/v1/jobs/%d/runs", job.ID), "/api/v1/audit"} {
		answers[p] = sys.get(t, p)
	}
	for p, body := range answers {
		if strings.Contains(body, secretValue) {
			t.Errorf("GET %s answers the secret's value: %s", p, body)
		}
	}
	if j := answers[fmt.Sprintf("/api/v1/jobs/%d", job.ID)]; !strings.Contains(j, "${secret:db-password}") {
		t.Errorf("the job's params lost their placeholder: %s", j)
	}

	// A trigger with params of its own gets the environment, but its
	// placeholders are not resolved (such params were not authorized as
	// references); the run shows them as given.
	own := `echo "env=$DB_PW"; echo 'own=${secret:db-password}'`
	other := waitStatus(t, sys.api, trigger(t, sys.api, job.ID, &own).ID, "SUCCEEDED", 30*time.Second)
	if other.Params != own {
		t.Errorf("run params %q, want %q as given", other.Params, own)
	}
	runLog = runLogText(t, sys, other.ID)
	for _, want := range []string{"env=****", "own=${secret:db-password}"} {
		if !strings.Contains(runLog, want) {
			t.Errorf("run with its own params: log %q lacks %q", runLog, want)
		}
	}
	if got, err := sys.api.GetSecret(ctx, sec.ID); err != nil || len(got.Jobs) != 1 || got.Jobs[0] != job.ID {
		t.Errorf("secret %+v, %v: want it to name job %d, which uses it", got, err, job.ID)
	}

	var leaks, uses int
	if err := sys.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE concat(before::text, after::text, target, actor) LIKE '%' || $1 || '%'),
		count(*) FILTER (WHERE action = 'secret.use' AND target = $2) FROM audit_log`, secretValue, fmt.Sprintf("run:%d", run.ID)).Scan(&leaks, &uses); err != nil {
		t.Fatal(err)
	}
	if leaks != 0 || uses != 1 {
		t.Errorf("audit rows: %d hold the value (want 0), %d secret.use of run %d (want 1)", leaks, uses, run.ID)
	}
	for _, e := range logged.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += fmt.Sprintf(" %s=%v", k, v)
		}
		if strings.Contains(line, secretValue) {
			t.Errorf("a log line holds the secret's value: %s", line)
		}
	}
	if logged.Len() == 0 {
		t.Error("nothing was logged: the check of the logs checked nothing")
	}
	var stored []byte
	if err := sys.pool.QueryRow(ctx, `SELECT ciphertext FROM secrets WHERE id = $1`, sec.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stored), secretValue) {
		t.Error("the secret is stored in clear")
	}
}

// A job may reference only its own group's secrets, and only an existing
// one: the write is refused saying so, whoever writes it.
func TestSecretsOfAnotherGroupCannotBeReferenced(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noHandlers, withKeyring(t))
	ctx := t.Context()
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.CreateSecret(ctx, "b", "b-token", secretValue); err != nil {
		t.Fatal(err)
	}
	for name, spec := range map[string]apiv1.JobSpec{
		"env":         {SecretEnv: map[string]string{"TOKEN": "b-token"}},
		"placeholder": {Params: `{"command": "curl", "args": ["-H", "Authorization: ${secret:b-token}"]}`},
	} {
		spec.Group, spec.Name, spec.Handler, spec.ScheduleType = "g", "steals-"+name, "shell", "none"
		_, err := sys.api.CreateJob(ctx, spec)
		if !isAPIError(err, http.StatusBadRequest) || !strings.Contains(err.Error(), refs.ErrNoSecret.Error()) {
			t.Errorf("%s: a job of g naming b's secret: %v, want 400 %q", name, err, refs.ErrNoSecret)
		}
	}
}

// Without a keyring the secrets endpoints answer 503 saying how to
// configure one, and a run of a job with a secret (stored under a key
// this scheduler lacks) fails saying so: it never runs without it.
func TestSecretsWithoutAKeySayHowToConfigureOne(t *testing.T) {
	t.Parallel()
	ran := make(chan struct{}, 1)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("h", func(context.Context, *worker.Job) error { ran <- struct{}{}; return nil })
	})
	ctx := t.Context()
	_, err := sys.api.CreateSecret(ctx, "g", "x", "v")
	if !isAPIError(err, http.StatusServiceUnavailable) || !strings.Contains(err.Error(), "JETJOB_SECRETS_KEY") {
		t.Errorf("create without a key: %v, want 503 naming JETJOB_SECRETS_KEY", err)
	}
	if _, err := sys.pool.Exec(ctx, `INSERT INTO secrets (group_name, name, key_id, nonce, ciphertext) VALUES ('g', 'x', 'k9', '\x00', '\x00')`); err != nil {
		t.Fatal(err)
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "needs-x", Handler: "h", ScheduleType: "none",
		SecretEnv: map[string]string{"X": "x"}})
	run := waitStatus(t, sys.api, trigger(t, sys.api, job.ID, nil).ID, "FAILED", 30*time.Second)
	if !strings.Contains(run.Message, "secrets could not be had") || !strings.Contains(run.Message, "JETJOB_SECRETS_KEY") {
		t.Errorf("run message %q: want it to say the secrets could not be had, and how to configure a key", run.Message)
	}
	select {
	case <-ran:
		t.Error("the handler ran without its secrets")
	default:
	}
}

// A scheduled fire (planned, not triggered by hand) of a job with a
// secret carries the secrets flag too: its command gets the value, in its
// environment and in its params alike.
func TestSecretsReachAScheduledFire(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("shell", builtin.Shell(builtin.ShellConfig{}))
	}, withKeyring(t))
	ctx := t.Context()
	if _, err := sys.api.CreateSecret(ctx, "g", "token", secretValue); err != nil {
		t.Fatal(err)
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "every-second", Handler: "shell", ScheduleType: "cron",
		ScheduleExpr: "@every 1s", Params: `test "$TOKEN" = "${secret:token}" && echo "got $TOKEN"`,
		SecretEnv: map[string]string{"TOKEN": "token"}})
	var ran *apiv1.Run
	testwait.Eventually(t, 30*time.Second, "a scheduled run ended", func() bool {
		list, err := sys.api.ListRuns(ctx, job.ID, client.ListRunsOptions{Limit: 5})
		if err != nil {
			return false
		}
		for i, r := range list.Runs {
			if r.TriggerType != "manual" && (r.Status == "SUCCEEDED" || r.Status == "FAILED") {
				ran = &list.Runs[i]
				return true
			}
		}
		return false
	})
	if ran.Status != "SUCCEEDED" {
		t.Fatalf("scheduled run %+v: want SUCCEEDED (the command got the secret)", ran)
	}
	logs, err := sys.api.RunLogs(ctx, ran.ID, 0, 10)
	if err != nil || !slices.ContainsFunc(logs.Lines, func(l apiv1.LogLine) bool { return strings.HasPrefix(l.Msg, "got **** ") }) {
		t.Errorf("run log %+v, %v: want a line %q", logs, err, "got ****")
	}
}
