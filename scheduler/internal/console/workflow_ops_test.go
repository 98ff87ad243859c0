package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
)

// The run page's Re-run button is shown to operators of a started run's
// group, and posts to the API, which writes a new run of the workflow:
// the browser lands on the new run's page. A viewer sees no button.
func TestWorkflowRunRerunButton(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	x, y := e.job("a", "noop"), e.job("a", "noop")
	op := e.browser().login("operator")
	p := op.post("/workflows", url.Values{"yaml": {wfYAML("wf", x.Name, y.Name, "")}, "op": {"save"}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Code, p.Body)
	}
	ws, err := e.st.ListWorkflows(ctx, "a", nil, 0, 10)
	if err != nil || len(ws) != 1 {
		t.Fatalf("workflows: %v %v", ws, err)
	}
	// A run the engine started (this test has no scheduler), then
	// cancelled.
	first, err := e.st.InsertManualRun(ctx, store.System, ws[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wfengine.Start(ctx, e.pool, "test", &first, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.OperateWorkflowRun(ctx, store.System, first.RunID, store.WorkflowOp{Op: "cancel", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	runPage := fmt.Sprintf("/workflow-runs/%d", first.RunID)
	mustContain(t, op.open(runPage), `id="rerun-form"`, `id="rerun-submit"`)
	mustLack(t, e.browser().login("viewer").open(runPage), `id="rerun-form"`)

	p = op.post(runPage+"/rerun", url.Values{})
	var fired int64
	select {
	case r := <-e.fired:
		fired = r.RunID
	default:
		t.Fatalf("the re-run fired nothing: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	if want := fmt.Sprintf("/workflow-runs/%d?notice=workflow-rerun", fired); p.Code != http.StatusSeeOther || p.Location != want || fired == first.RunID {
		t.Fatalf("re-run: %d → %q, want %q", p.Code, p.Location, want)
	}
	run, err := e.st.GetRun(ctx, fired)
	if err != nil || run.JobID != ws[0].ID || run.Message != fmt.Sprintf("re-run of workflow run %d", first.RunID) {
		t.Fatalf("the new run: %+v %v", run, err)
	}
}
