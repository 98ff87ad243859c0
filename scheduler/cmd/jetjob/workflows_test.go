package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Workflows travel with the jobs: export writes each as a document of
// its own, nodes naming jobs by group/name or carrying their own (inline,
// not among the exported jobs); apply creates them in another cluster
// after the jobs, and a second apply changes nothing.
func TestExportApplyWorkflows(t *testing.T) {
	src := isolatedAPI(t)
	seedCluster(t, src)
	params := `{"day": "{{ .params.day }}"}`
	wf, err := src.apiClient(t).CreateWorkflow(context.Background(), apiv1.WorkflowSpec{Group: "billing", Name: "flow",
		ScheduleType: "cron", ScheduleExpr: "0 0 3 * * *", Overlap: "cover_early", Params: `{"day": "today"}`,
		Nodes: []apiv1.WorkflowNode{{Name: "nightly", Job: "billing/nightly"}, {Name: "clean", Job: "ops/cleanup", Params: &params},
			{Name: "notify", Inline: &apiv1.InlineJob{Group: "ops", Handler: "notify", Params: `{"to": "billing"}`,
				Timeout: apiv1.Duration(30 * time.Second), MaxRetries: 2}}},
		Edges: []apiv1.WorkflowEdge{{From: "nightly", To: "clean", On: "always"}, {From: "clean", To: "notify"}}})
	if err != nil {
		t.Fatal(err)
	}
	printed(t, "get", src.admin(t, "", "workflows", "get", strconv.FormatInt(wf.ID, 10)), "inline job, handler notify in group ops")
	exported := src.admin(t, "", "export")
	for _, w := range []string{"---\napiVersion: jetjob/v1\nkind: Workflow\ngroup: billing\nname: flow\n", "job: ops/cleanup",
		"overlap: cover_early", `"on": always`,
		"  - name: notify\n    inline:\n      group: ops\n      handler: notify\n      params: '{\"to\": \"billing\"}'\n      timeout: 30s\n      max_retries: 2\n"} {
		if !strings.Contains(exported, w) {
			t.Fatalf("export\n%s\nlacks %q", exported, w)
		}
	}
	dst := newRealAPI(t)
	res := must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply into an empty cluster")
	printed(t, "apply", res.stdout, "+ workflow billing/flow\n", "created workflow billing/flow")
	if got := dst.admin(t, "", "export"); got != exported {
		t.Fatalf("the applied cluster exports differently:\n%s\n---\nwant:\n%s", got, exported)
	}
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "second apply")
	if strings.Contains(res.stdout, "workflow") || strings.Contains(res.stdout, "Applied") {
		t.Fatalf("second apply printed\n%s", res.stdout)
	}
	// The workflows commands read it back.
	list := dst.admin(t, "", "workflows", "list")
	if !strings.Contains(list, "flow") || !strings.Contains(list, "cover_early") {
		t.Errorf("workflows list:\n%s", list)
	}
}
