package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// An operator deletes an ended run from its page: the button (with its
// confirmation) shows only to operators and only on an ended run; the
// deletion goes to /runs with a notice, the run and its log gone; a run
// still going is refused with the API's words on its page.
func TestRunPageDelete(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	ended, running := e.run(j), e.run(j)
	e.setRun(ended, "status = 'FAILED', finished_at = now()")
	e.setRun(running, "status = 'RUNNING', started_at = scheduled_at, worker_id = 'wa-1'")
	e.logLines("a", j.ID, ended, "info", "one line")

	v := e.browser().login("viewer")
	mustLack(t, v.get("/runs/"+itoa(ended)), `id="delete-form"`)
	if p := v.post("/runs/"+itoa(ended)+"/delete", nil); p.Code != http.StatusForbidden {
		t.Fatalf("viewer's forged delete: %d, want 403", p.Code)
	}
	if p := e.browser().login("viewerB").post("/runs/"+itoa(ended)+"/delete", nil); p.Code != http.StatusNotFound {
		t.Fatalf("viewerB's forged delete: %d, want 404", p.Code)
	}

	op := e.browser().login("operator")
	mustLack(t, op.get("/runs/"+itoa(running)), `id="delete-form"`)
	mustContain(t, op.get("/runs/"+itoa(ended)), `<form method="post" action="/runs/`+itoa(ended)+`/delete" id="delete-form" data-confirm="Delete run `+itoa(ended))
	p := op.post("/runs/"+itoa(ended)+"/delete", nil)
	if p.Code != http.StatusSeeOther || p.Location != "/runs?notice=run-deleted" {
		t.Fatalf("operator's delete: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	mustContain(t, op.get(p.Location), "Run deleted, with its log.")
	if p := op.get("/runs/" + itoa(ended)); p.Code != http.StatusNotFound {
		t.Errorf("page of deleted run %d: %d, want 404", ended, p.Code)
	}

	p = op.post("/runs/"+itoa(running)+"/delete", nil)
	if p.Code != http.StatusConflict {
		t.Fatalf("delete of a running run: %d, want 409\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="page-error"`, "Not deleted:", "kill it first", `id="run-status"`)
}

// The runs page's bulk bar deletes: the confirmation says how many, the
// ended runs go, a run still going is listed refused with why, and each
// deletion is audited.
func TestBulkDeleteRunsMatching(t *testing.T) {
	e := newEnv(t)
	ja := e.job("a", "echo")
	runs := e.finishedRuns(ja, "FAILED", "SUCCEEDED", "FAILED", "RUNNING")
	op := e.browser().login("operator")
	mustContain(t, op.open("/runs"), `id="bulk-delete"`)
	p := op.post("/runs/bulk", url.Values{"action": {"delete"}, "scope": {"matching"}, "status": {"FAILED"}, "job": {strconv.FormatInt(ja.ID, 10)}})
	mustContain(t, p, `id="bulk-confirm"`, "Delete 2 runs?", "deleted with their log lines")
	p = op.post("/runs/bulk", url.Values{"action": {"delete"}, "confirm": {"yes"},
		"id": {strconv.FormatInt(runs[0], 10), strconv.FormatInt(runs[2], 10), strconv.FormatInt(runs[3], 10)}})
	mustContain(t, p, `id="bulk-done">2<`, `id="bulk-failed">1<`, fmt.Sprintf(`<a href="/runs/%d">%d</a></td><td>409`, runs[3], runs[3]), "kill it first")
	var left, audited int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM job_runs WHERE job_id = $1`, ja.ID).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 2 {
		t.Errorf("%d runs of the job left, want 2 (the SUCCEEDED and the RUNNING one)", left)
	}
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log WHERE action = 'run.delete' AND actor = 'operator'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 2 {
		t.Errorf("%d run.delete audit rows, want 2", audited)
	}
}
