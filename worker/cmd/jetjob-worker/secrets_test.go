package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/shared/wire"
)

// dumpParent is a shell job that prints what a job could learn of the
// worker that runs it: its parent's initial environment and command line
// (/proc/$PPID, readable by the same user), then its own environment.
const dumpParent = `echo "ppid=$PPID"; tr '\0' '\n' </proc/$PPID/environ; echo "--- cmdline"; tr '\0' ' ' </proc/$PPID/cmdline; echo; echo "--- env"; env`

// The worker's secrets never reach its jobs: whether the NATS password
// comes from the environment, a flag or the URL, a shell job that dumps
// its parent's (the worker's) /proc environ and cmdline and its own
// environment finds it nowhere — nor the OpenTelemetry exporter's token —
// and neither does the test reading /proc/<worker pid> itself; the worker
// did authenticate with it (its runs succeed).
func TestJobsCannotReadTheWorkersSecrets(t *testing.T) {
	const pw, otel = "hunter-nats-pw", "hunter-otel-token"
	e, url := startNATSWith(t, natsembed.Options{StoreDir: t.TempDir(), User: "jj", Password: pw}, nats.UserInfo("jj", pw))
	withPW := strings.Replace(url, "nats://", "nats://jj:"+pw+"@", 1)
	for i, c := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"environment", map[string]string{"JETJOB_NATS_URL": url, "JETJOB_NATS_USER": "jj", "JETJOB_NATS_PASSWORD": pw}, nil},
		{"flag", map[string]string{"JETJOB_NATS_URL": url, "JETJOB_NATS_USER": "jj"}, []string{"--nats-password", pw}},
		{"url", map[string]string{}, []string{"--nats-url=" + withPW}},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := "secrets-" + c.name
			env := map[string]string{"JETJOB_GROUP": "ops", "JETJOB_HANDLERS": "shell", "JETJOB_WORKER_ID": id,
				"JETJOB_LOG_FORMAT": "console", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer " + otel}
			for k, v := range c.env {
				env[k] = v
			}
			p := start(t, env, c.args...)
			run := int64(i + 1)
			e.publish("ops", run, dumpParent)
			if f := e.Event(run, wire.EventFinished); f.Status != wire.StatusSucceeded || f.WorkerID != id {
				t.Fatalf("finished %+v", f)
			}
			msgs := e.logMsgs("ops", run)
			dump := strings.Join(msgs, "\n")
			if want := fmt.Sprintf("info ppid=%d ", p.cmd.Process.Pid); !strings.Contains(dump, want) || !strings.Contains(dump, "info PATH=") {
				t.Fatalf("the job did not read its parent, the worker (pid %d): %s", p.cmd.Process.Pid, dump)
			}
			for _, secret := range []string{pw, otel} {
				if strings.Contains(dump, secret) {
					t.Errorf("the job read a secret of the worker's:\n%s", dump)
				}
			}
			for _, f := range []string{"environ", "cmdline"} {
				b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", p.cmd.Process.Pid, f))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), pw) || strings.Contains(string(b), otel) {
					t.Errorf("/proc/%d/%s holds a secret: %q", p.cmd.Process.Pid, f, b)
				}
			}
			p.stopsCleanly()
			if strings.Contains(p.out.String(), pw) {
				t.Errorf("the worker printed its password:\n%s", p.out.String())
			}
		})
	}
}
