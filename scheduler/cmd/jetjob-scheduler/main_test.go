package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/configtest"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testpki"
	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/version"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// execute runs the command line in-process and returns its output and
// error.
func execute(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	root := rootCmd()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// secrets are environment values that must never be printed.
var secrets = map[string]string{
	"JETJOB_DATABASE_URL":   "postgres://u:hunter1@db:5432/jetjob",
	"JETJOB_NATS_URL":       "nats://u:hunter2@nats:4222",
	"JETJOB_NATS_PASSWORD":  "hunter3",
	"JETJOB_NATS_TOKEN":     "hunter4",
	"JETJOB_API_TOKEN":      "hunter5",
	"JETJOB_SMTP_PASSWORD":  "hunter6",
	"JETJOB_WEBHOOK_SECRET": "hunter7",
}

// Help shows the variables' names and the built-in defaults, never what
// the environment holds.
func TestHelpShowsNoSecret(t *testing.T) {
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	for _, cmd := range []string{"serve", "migrate", "dev"} {
		out, err := execute(context.Background(), cmd, "--help")
		if err != nil {
			t.Fatalf("%s --help: %v", cmd, err)
		}
		for _, v := range secrets {
			for _, part := range []string{v, "hunter"} {
				if strings.Contains(out, part) {
					t.Errorf("%s --help shows %q:\n%s", cmd, part, out)
				}
			}
		}
		if !strings.Contains(out, "(JETJOB_DATABASE_URL)") && cmd != "dev" {
			t.Errorf("%s --help does not name JETJOB_DATABASE_URL:\n%s", cmd, out)
		}
	}
}

// Bad values are refused together, naming each variable, without quoting a
// secret.
func TestBadEnvironment(t *testing.T) {
	t.Setenv("JETJOB_DATABASE_URL", secrets["JETJOB_DATABASE_URL"])
	t.Setenv("JETJOB_MIGRATE", "yes")
	t.Setenv("JETJOB_SMTP_STARTTLS", "on")
	t.Setenv("JETJOB_LEASE_TTL", "10")
	_, err := execute(context.Background(), "serve")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("error %v, want a usage error", err)
	}
	configtest.WantErr(t, err, `JETJOB_MIGRATE="yes": want true or false`, `JETJOB_SMTP_STARTTLS="on": want true or false`, `JETJOB_LEASE_TTL="10": want a duration`)
	if strings.Contains(err.Error(), "hunter") {
		t.Errorf("error shows a secret: %v", err)
	}
}

// Booleans from the environment mean what strconv.ParseBool says, 1 and 0
// included.
func TestBooleansFromEnvironment(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "T": true, "0": false, "false": false, "F": false} {
		t.Setenv("JETJOB_SMTP_STARTTLS", v)
		o := serveOptions(t)
		if got := o.schedulerConfig("").Alarm.SMTP.StartTLS; got != want {
			t.Errorf("JETJOB_SMTP_STARTTLS=%s: StartTLS %v, want %v", v, got, want)
		}
	}
}

// --trigger-batch reaches the planner; a value no worker accepts is
// refused by name before anything starts.
func TestTriggerBatchSetting(t *testing.T) {
	t.Setenv("JETJOB_TRIGGER_BATCH", "8")
	o := serveOptions(t)
	if got := o.schedulerConfig("").Planner.TriggerBatch; got != 8 {
		t.Errorf("JETJOB_TRIGGER_BATCH=8: Planner.TriggerBatch %d", got)
	}

	t.Setenv("JETJOB_DATABASE_URL", "postgres://u@127.0.0.1:1/none")
	for _, bad := range []string{"-1", "257"} {
		t.Setenv("JETJOB_TRIGGER_BATCH", bad)
		_, err := execute(context.Background(), "serve")
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "JETJOB_TRIGGER_BATCH") || !strings.Contains(err.Error(), "want 1 to 256") {
			t.Errorf("JETJOB_TRIGGER_BATCH=%s: error %v, want a usage error naming it", bad, err)
		}
	}
}

// The alert engine's settings reach its config.
func TestAlertSettings(t *testing.T) {
	t.Setenv("JETJOB_ALERT_INTERVAL", "250ms")
	t.Setenv("JETJOB_ALERT_ATTEMPTS", "9")
	t.Setenv("JETJOB_ALERT_RETRY_BACKOFF", "30s")
	t.Setenv("JETJOB_ALERT_PARALLEL", "2")
	got := serveOptions(t).schedulerConfig("").Alerts
	if got.Interval != 250*time.Millisecond || got.Attempts != 9 || got.Backoff != 30*time.Second || got.Parallel != 2 {
		t.Errorf("alert settings from the environment: %+v", got)
	}
}

// serveOptions are serve's options as the environment sets them.
func serveOptions(t *testing.T) *options {
	t.Helper()
	var o options
	s := config.New(pflag.NewFlagSet("serve", pflag.ContinueOnError))
	o.register(s, ":8080", "json")
	if err := s.Load(os.LookupEnv); err != nil {
		t.Fatal(err)
	}
	return &o
}

func TestVersion(t *testing.T) {
	out, err := execute(context.Background(), "--version")
	if err != nil {
		t.Fatal(err)
	}
	if want := "jetjob-scheduler " + version.Get().String() + "\n"; out != want {
		t.Errorf("--version printed %q, want %q", out, want)
	}
}

// One config file serves every command: a key of another command is
// ignored, a key of none is refused by name.
func TestConfigFileKeys(t *testing.T) {
	file := filepath.Join(t.TempDir(), "scheduler.yaml")
	if err := os.WriteFile(file, []byte("log-format: json\ndata-dir: /tmp/x\nshard-count: 8\nlisten_addr: :9090\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := execute(context.Background(), "migrate", "--config", file)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `unknown key "listen_addr"`) ||
		strings.Contains(err.Error(), "data-dir") || strings.Contains(err.Error(), "shard-count") {
		t.Errorf("error %v: want a usage error naming listen_addr alone", err)
	}
}

// serve reaches a NATS that requires TLS with a client certificate and a
// password (settings from a config file, the password from the
// environment), migrates an empty database because JETJOB_MIGRATE=1, and
// becomes ready; /healthz reports the build.
func TestServeOverTLS(t *testing.T) {
	testtier.Needs(t, testtier.NATS)
	dir := t.TempDir()
	pki, err := testpki.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), TLS: pki.ServerTLS(), User: "sched", Password: "hunter3"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := fmt.Sprintf("serve_tls_%d", os.Getpid())
	if err := pgtest.Server(t).CreateDatabase(ctx, db, ""); err != nil { // empty: not migrated
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	file := filepath.Join(dir, "scheduler.yaml")
	body := fmt.Sprintf("nats-url: %s\nnats-user: sched\nnats-tls-ca: %s\nnats-tls-cert: %s\nnats-tls-key: %s\nlisten: %s\nlog-level: warn\nshard-count: 4\n",
		ns.ClientURL(), pki.CAFile, pki.ClientCert, pki.ClientKey, addr)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETJOB_DATABASE_URL", pgtest.Server(t).URL(db))
	t.Setenv("JETJOB_NATS_PASSWORD", "hunter3")
	t.Setenv("JETJOB_API_TOKEN", "tok")
	t.Setenv("JETJOB_MIGRATE", "1")
	t.Setenv("JETJOB_TRIGGER_SIGNING_KEY_FILE", newKeyFile(t))

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := execute(runCtx, "serve", "--config", file)
		done <- err
	}()
	defer func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}()

	var last string
	for {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve exited: %v", err)
		case <-ctx.Done():
			t.Fatalf("not ready within a minute; last /readyz: %s", last)
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			last = err.Error()
			continue
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		last = fmt.Sprintf("%d %s", resp.StatusCode, b.String())
		if resp.StatusCode == http.StatusOK {
			break
		}
	}

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Status, Version string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Status != "ok" || h.Version != version.Get().Version {
		t.Errorf("/healthz %+v (%v), want ok and version %q", h, err, version.Get().Version)
	}
}

// --sso-config is read at start: a wrong file is a usage error naming the
// setting and the wrong key, never the secret the environment holds.
func TestSSOConfigSetting(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "sso.yaml")
	if err := os.WriteFile(bad, []byte("public_url: https://jetjob.example.com\noidc:\n  - id: corp\n    issuer: https://idp.example.com\n    client_id: jetjob\n    client_secert_file: /x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETJOB_DATABASE_URL", "postgres://u@127.0.0.1:1/none")
	t.Setenv("JETJOB_SSO_CORP_CLIENT_SECRET", "hunter8")
	t.Setenv("JETJOB_INSECURE_UNSIGNED_TRIGGERS", "true")
	t.Setenv("JETJOB_SSO_CONFIG", bad)
	_, err := execute(context.Background(), "serve")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "JETJOB_SSO_CONFIG") || !strings.Contains(err.Error(), "client_secert_file") {
		t.Fatalf("a misspelt key: %v, want a usage error naming the setting and the key", err)
	}
	if strings.Contains(err.Error(), "hunter") {
		t.Errorf("error shows a secret: %v", err)
	}

	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("public_url: https://jetjob.example.com\noidc:\n  - id: corp\n    issuer: https://idp.example.com\n    client_id: jetjob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JETJOB_SSO_CONFIG", good)
	o := serveOptions(t)
	ps, err := o.ssoProviders()
	if err != nil || len(ps.List()) != 1 || ps.CallbackURL("corp") != "https://jetjob.example.com/login/sso/corp/callback" {
		t.Fatalf("providers of a good file: %v", err)
	}
}

// Every command that works on the database refuses to start without one,
// as a usage error saying how to give it.
func TestDatabaseCommandsNeedADatabase(t *testing.T) {
	t.Setenv("JETJOB_DATABASE_URL", "")
	for _, args := range [][]string{{"serve"}, {"migrate"}, {"users", "create-admin", "ada"}, {"secrets", "rotate-key"}} {
		_, err := execute(context.Background(), args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no database: set --database-url or JETJOB_DATABASE_URL") {
			t.Errorf("%v without a database: %v, want the usage error naming --database-url", args, err)
		}
	}
}
