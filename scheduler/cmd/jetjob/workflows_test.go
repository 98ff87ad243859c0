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
	ctx := context.Background()
	sc := src.apiClient(t)
	// Calendars travel with the jobs: a global one and the group's.
	for _, cal := range []apiv1.Calendar{{Name: "cn-holidays", Description: "Golden week", Ranges: []apiv1.CalendarRange{{From: "2026-10-01", To: "2026-10-07"}}},
		{Name: "billing-makeup", Group: "billing", Dates: []string{"2026-10-10"}}} {
		if _, err := sc.PutCalendar(ctx, cal.Name, cal); err != nil {
			t.Fatal(err)
		}
	}
	// A secret never does: the job names it, the file holds the name.
	const secretValue = "s3cr3t-never-exported"
	if _, err := sc.CreateSecret(ctx, "billing", "db-pass", secretValue); err != nil {
		t.Fatal(err)
	}
	nightly := jobsByKey(t, sc)["billing/nightly"]
	nightly.SecretEnv, nightly.JobSpec.Version = map[string]string{"DB_PASS": "db-pass"}, nightly.Version
	if _, err := sc.UpdateJob(ctx, nightly.ID, nightly.JobSpec); err != nil {
		t.Fatal(err)
	}
	params := `{"day": "{{ .params.day }}"}`
	wf, err := sc.CreateWorkflow(ctx, apiv1.WorkflowSpec{Group: "billing", Name: "flow",
		ScheduleType: "cron", ScheduleExpr: "0 0 3 * * *", Overlap: "cover_early", Params: `{"day": "today"}`,
		ExcludeCalendars: []string{"cn-holidays"}, IncludeCalendars: []string{"billing-makeup"},
		Labels: map[string]string{"team": "billing", "tier": "gold"}, Owner: "ana@example.com",
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
		"---\napiVersion: jetjob/v1\nkind: Calendar\nname: billing-makeup\ngroup: billing\ndates:\n  - \"2026-10-10\"\n",
		"kind: Calendar\nname: cn-holidays\ndescription: Golden week\nranges:\n  - from: \"2026-10-01\"\n    to: \"2026-10-07\"\n",
		"exclude_calendars:\n  - cn-holidays\ninclude_calendars:\n  - billing-makeup\nlabels:\n  team: billing\n  tier: gold\nowner: ana@example.com\n",
		"DB_PASS: db-pass",
		"  - name: notify\n    inline:\n      group: ops\n      handler: notify\n      params: '{\"to\": \"billing\"}'\n      timeout: 30s\n      max_retries: 2\n"} {
		if !strings.Contains(exported, w) {
			t.Fatalf("export\n%s\nlacks %q", exported, w)
		}
	}
	if strings.Contains(exported, secretValue) {
		t.Fatalf("export holds a secret's value:\n%s", exported)
	}
	dst := newRealAPI(t)
	// The secret is created in the target cluster by hand, under its name
	// (the group first: apply would create it, but after the secret).
	dc := dst.apiClient(t)
	if _, err := dc.CreateGroup(ctx, apiv1.Group{Name: "billing", Title: "Billing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.CreateSecret(ctx, "billing", "db-pass", "another value"); err != nil {
		t.Fatal(err)
	}
	res := must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply into an empty cluster")
	printed(t, "apply", res.stdout, "+ calendar cn-holidays\n", "+ calendar billing-makeup\n", "created calendar cn-holidays",
		"+ workflow billing/flow\n", "created workflow billing/flow")
	if got := dst.admin(t, "", "export"); got != exported {
		t.Fatalf("the applied cluster exports differently:\n%s\n---\nwant:\n%s", got, exported)
	}
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "second apply")
	if strings.Contains(res.stdout, "workflow") || strings.Contains(res.stdout, "calendar") || strings.Contains(res.stdout, "Applied") {
		t.Fatalf("second apply printed\n%s", res.stdout)
	}
	// The workflows commands read it back.
	list := dst.admin(t, "", "workflows", "list")
	if !strings.Contains(list, "flow") || !strings.Contains(list, "cover_early") {
		t.Errorf("workflows list:\n%s", list)
	}
	// By label: the selector picks it, another leaves it out.
	if list := dst.admin(t, "", "workflows", "list", "-l", "team=billing,tier=gold"); !strings.Contains(list, "flow") {
		t.Errorf("workflows list -l team=billing,tier=gold:\n%s", list)
	}
	if list := dst.admin(t, "", "workflows", "list", "-l", "team=ops"); strings.Contains(list, "flow") {
		t.Errorf("workflows list -l team=ops lists flow:\n%s", list)
	}
	res = dst.as(t, bootstrapToken, "", "workflows", "list", "-l", "team")
	if res.code == exitOK || !strings.Contains(res.stderr, "key=value") {
		t.Errorf("workflows list -l team: exit %d, stderr %q; want the selector refused", res.code, res.stderr)
	}
	printed(t, "bulk", dst.admin(t, "", "workflows", "bulk", "disable", "-l", "tier=gold", "--note", "freeze"), "1 of 1 done")
	got, err := dc.ListWorkflows(ctx, "billing", 0, 0)
	if err != nil || len(got.Workflows) != 1 {
		t.Fatalf("workflows of billing: %v, %v", got, err)
	}
	if got.Workflows[0].Enabled {
		t.Error("workflows bulk disable -l tier=gold left the workflow enabled")
	}
	printed(t, "get", dst.admin(t, "", "workflows", "get", strconv.FormatInt(got.Workflows[0].ID, 10)),
		"Labels", "team=billing,tier=gold", "Owner", "ana@example.com", "cn-holidays (calendars)")
}
