package builtin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/worker/builtin"
)

// A command gets a minimal environment, not the worker's: PATH, HOME, the
// locale and the time zone, and only those other variables it is told to
// pass. Whatever else the worker's environment holds — a cloud credential,
// a tracing backend's token — a job cannot print.
func TestShellGetsAMinimalEnvironment(t *testing.T) {
	t.Setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LC_TIME", "C")
	t.Setenv("CLOUD_SECRET_ACCESS_KEY", "hunter-cloud")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer hunter-otel")
	t.Setenv("BACKUP_BUCKET", "s3://backups")
	e := shellEnv(t, builtin.ShellConfig{PassEnv: []string{"BACKUP_BUCKET"}})
	e.Publish(trigger(1, "shell", `{"command": "env"}`))
	stdout, _ := e.succeeded(1)
	for _, want := range []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_TIME=C", "BACKUP_BUCKET=s3://backups", "JETJOB_RUN_ID=1"} {
		if !slices.Contains(stdout, "info "+want) {
			t.Errorf("%s missing from the environment %q", want, stdout)
		}
	}
	for _, l := range stdout {
		if strings.Contains(l, "hunter") {
			t.Errorf("the worker's environment reached the command: %s", l)
		}
	}
	for _, bad := range [][]string{{"JETJOB_NATS_PASSWORD"}, {"A=B"}, {""}} {
		if err := builtin.CheckPassEnv(bad); err == nil {
			t.Errorf("CheckPassEnv(%q) accepted", bad)
		}
	}
}
