package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
)

// runs delete deletes one ended run (DELETE /runs/{id}) or several (the
// bulk endpoint, one row per run), and fails, naming why, when a run is
// refused: not ended yet, or already gone.
func TestRunsDelete(t *testing.T) {
	isolate(t)
	js := apitest.JetStream(t)
	r := newRealAPIWith(t, func(c *api.Config) { c.Logs = runlog.New(js) })
	r.admin(t, "", "groups", "create", "demo")
	job := adminJSON[apiv1.Job](t, r, "jobs", "create", "--group", "demo", "--name", "once", "--handler", "h")
	ended := func() string {
		t.Helper()
		run := adminJSON[apiv1.Run](t, r, "jobs", "trigger", fmt.Sprint(job.ID))
		r.admin(t, "", "runs", "kill", fmt.Sprint(run.ID)) // not published: CANCELLED at once
		return fmt.Sprint(run.ID)
	}
	one := ended()
	if out := r.admin(t, "", "runs", "delete", one); !strings.Contains(out, "run "+one+" deleted") {
		t.Errorf("runs delete %s printed %q", one, out)
	}
	if res := r.as(t, bootstrapToken, "", "runs", "get", one); res.code != exitError {
		t.Errorf("runs get of deleted run %s: exit %d", one, res.code)
	}
	a, b := ended(), ended()
	live := adminJSON[apiv1.Run](t, r, "jobs", "trigger", fmt.Sprint(job.ID))
	res := r.as(t, bootstrapToken, "", "runs", "delete", a, fmt.Sprint(live.ID), b, one)
	if res.code != exitError || !strings.Contains(res.stderr, "2 of 4 runs not deleted") {
		t.Errorf("runs delete of 2 ended, 1 scheduled and 1 deleted run: exit %d, stderr %q; want exit 1, 2 of 4 not deleted", res.code, res.stderr)
	}
	printed(t, "runs delete (bulk)", res.stdout, a+"    deleted", "kill it first", b+"    deleted", "run "+one+" not found", "2 of 4 deleted")
	for _, bad := range [][]string{{"runs", "delete"}, {"runs", "delete", "x"}} {
		if res := r.as(t, bootstrapToken, "", bad...); res.code != exitUsage {
			t.Errorf("%v: exit %d, want a usage error", bad, res.code)
		}
	}
}
