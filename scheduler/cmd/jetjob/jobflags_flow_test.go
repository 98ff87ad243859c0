package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The flow flags set a job's flow controls on create and update (an
// update changes only those named), are checked before any request, and
// jobs trigger --priority gives a run its own priority.
func TestJobsFlowFlags(t *testing.T) {
	r := isolatedAPI(t, "demo")
	created := adminJSON[apiv1.Job](t, r, "jobs", "create",
		"--group", "demo", "--name", "per-tenant", "--handler", "hello", "--params", `{"tenant":"acme"}`,
		"--priority", "20", "--concurrency-key", "params.tenant", "--key-cap", "2", "--rate-limit", "100/60s", "--key-rate-limit", "5/1s")
	if created.Priority != 20 || created.ConcurrencyKey != "params.tenant" || created.KeyCap != 2 ||
		created.RateLimit != "100/1m" || created.KeyRateLimit != "5/1s" {
		t.Fatalf("created %+v, want the flow fields given", created.JobSpec)
	}
	id := fmt.Sprint(created.ID)
	upd := adminJSON[apiv1.Job](t, r, "jobs", "update", id, "--priority", "-3", "--rate-limit", "")
	if upd.Priority != -3 || upd.RateLimit != "" || upd.ConcurrencyKey != "params.tenant" || upd.KeyCap != 2 || upd.KeyRateLimit != "5/1s" {
		t.Fatalf("after --priority -3 --rate-limit '': %+v", upd.JobSpec)
	}

	before := r.reqs.Load()
	for _, b := range []struct {
		args []string
		want string
	}{
		{[]string{"jobs", "update", id, "--priority", "101"}, "--priority 101: want -100 to 100"},
		{[]string{"jobs", "update", id, "--key-cap", "-1"}, "--key-cap -1"},
		{[]string{"jobs", "update", id, "--rate-limit", "lots"}, "--rate-limit: rate \"lots\": want COUNT/PERIOD"},
		{[]string{"jobs", "update", id, "--key-rate-limit", "5/0s"}, "--key-rate-limit: rate \"5/0s\""},
		{[]string{"jobs", "trigger", id, "--priority", "-101"}, "--priority -101"},
	} {
		res := r.as(t, bootstrapToken, "", b.args...)
		if res.code != exitUsage || !strings.Contains(res.stderr, b.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", b.args, res.code, res.stderr, b.want)
		}
	}
	if n := r.reqs.Load() - before; n != 0 {
		t.Errorf("refused commands sent %d requests", n)
	}
	// The server names what only it can check.
	if res := r.as(t, bootstrapToken, "", "jobs", "update", id, "--concurrency-key", "tenant"); res.code != exitError ||
		!strings.Contains(res.stderr, "concurrency_key") {
		t.Errorf("--concurrency-key tenant: exit %d, stderr %q; want the server's error naming concurrency_key", res.code, res.stderr)
	}

	res := must(t, r.as(t, bootstrapToken, "", "jobs", "get", id), "jobs get")
	printed(t, "get", res.stdout, "Priority:        -3\n", "Concurrency key: params.tenant (at most 2 at once per key)\n", "Rate per key:    5/1s\n")

	run := adminJSON[apiv1.Run](t, r, "jobs", "trigger", id, "--priority", "50")
	if run.Priority == nil || *run.Priority != 50 {
		t.Fatalf("run triggered with --priority 50 answers priority %v", run.Priority)
	}
}
