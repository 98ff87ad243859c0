package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// A bulk action picks by label selector among the jobs the caller may
// read, changes each job the caller may operate (one audit entry per
// job), reports the others refused, and refuses the whole request when
// the selector picks more jobs than max. The listing filters by the same
// selector, and a job's labels and owner come back as written.
func TestBulkBySelector(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	label := func(j store.Job, l map[string]string) store.Job {
		j.Labels, j.Owner = l, "team-x@example.com"
		out, err := e.st.UpdateJob(ctx, store.System, j)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	prodX := map[string]string{"env": "prod", "team": "x"}
	a1, a2 := label(e.job("a", "echo"), prodX), label(e.job("a", "echo"), prodX)
	label(e.job("a", "echo"), map[string]string{"env": "dev", "team": "x"})
	b1 := label(e.job("b", "echo"), prodX)

	code, body := e.do("viewerA", "GET", "/api/v1/jobs?labels=env=prod,team=x", nil)
	var list apiv1.JobList
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].ID != a1.ID || list.Jobs[0].Owner != "team-x@example.com" || list.Jobs[0].Labels["team"] != "x" {
		t.Errorf("viewer of a listed %+v, want jobs %d and %d with their labels and owner", list.Jobs, a1.ID, a2.ID)
	}

	bulk := func(who string, req apiv1.BulkRequest) (int, apiv1.BulkResult, string) {
		code, body := e.do(who, "POST", "/api/v1/jobs/bulk", req)
		var res apiv1.BulkResult
		_ = json.Unmarshal(body, &res)
		return code, res, string(body)
	}
	disable := apiv1.BulkRequest{Selector: "env=prod,team=x", Action: "disable", Note: "freeze"}
	if code, res, body := bulk("viewerA", disable); code != 200 || res.Matched != 2 || res.Done != 0 ||
		!strings.Contains(res.Items[0].Error, "operator") {
		t.Errorf("viewer's bulk disable: %d %s, want 2 picked, both refused for want of operator", code, body)
	}
	if code, res, body := bulk("operator", disable); code != 200 || res.Matched != 2 || res.Done != 2 {
		t.Errorf("operator of a's bulk disable: %d %s, want a's 2 jobs done (b's never picked)", code, body)
	}
	for _, id := range []int64{a1.ID, a2.ID} {
		j, _ := e.st.GetJob(ctx, id)
		if j.Enabled || j.PausedNote != "freeze" {
			t.Errorf("job %d after the bulk disable: enabled %t note %q", id, j.Enabled, j.PausedNote)
		}
	}
	if j, _ := e.st.GetJob(ctx, b1.ID); !j.Enabled {
		t.Errorf("group b's job %d was disabled by an operator of a", b1.ID)
	}
	var audits int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'job.disable' AND actor = 'operator'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 2 {
		t.Errorf("%d job.disable audit entries, want one per job (2)", audits)
	}
	if code, res, body := bulk("admin", apiv1.BulkRequest{Selector: "team=x", Action: "trigger"}); code != 200 || res.Done != 4 || res.Items[0].RunID == 0 {
		t.Errorf("admin's bulk trigger: %d %s, want 4 runs", code, body)
	}
	for _, bad := range []apiv1.BulkRequest{
		{Selector: "team=x", Action: "trigger", Max: 3},
		{Selector: "", Action: "enable"},
		{Selector: "team=x", Action: "delete"},
		{Selector: "team", Action: "enable"},
	} {
		if code, _, body := bulk("admin", bad); code != 400 {
			t.Errorf("bulk %+v: %d %s, want 400", bad, code, body)
		}
	}
}
