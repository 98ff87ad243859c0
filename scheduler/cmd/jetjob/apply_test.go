package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/jobfile"
)

// apiClient is a Go client of the real API as the bootstrap admin, to
// arrange and inspect a cluster without going through the commands tested.
func (r *realAPI) apiClient(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(r.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// jobsByKey lists the cluster's jobs by group/name.
func jobsByKey(t *testing.T, c *client.Client) map[string]apiv1.Job {
	t.Helper()
	jobs, err := allJobs(context.Background(), c, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]apiv1.Job{}
	for _, j := range jobs {
		out[j.Group+"/"+j.Name] = j
	}
	return out
}

// seedCluster creates two groups and three jobs with most fields set, the
// nightly job having the other two as children. A job created and deleted
// first makes the ids differ from those of a fresh cluster.
func seedCluster(t *testing.T, r *realAPI) {
	t.Helper()
	ctx := context.Background()
	c := r.apiClient(t)
	for _, g := range []apiv1.Group{{Name: "billing", Title: "Billing"}, {Name: "ops"}} {
		if _, err := c.CreateGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	gone, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "ops", Name: "gone", Handler: "shell", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteJob(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	off := false
	report, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "billing", Name: "send report", Handler: "http",
		Params: `{"url":"https://example.com/hook"}`, ScheduleType: "none", Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	cleanup, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "ops", Name: "cleanup", Handler: "shell",
		Params: "find /tmp -mtime +7 -delete", ScheduleType: "fix_rate", ScheduleExpr: "1h", RouteStrategy: "round"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "billing", Name: "nightly", Handler: "shell",
		Description: "invoices", Params: "#!/bin/sh\nset -e\nmake invoices\n",
		ScheduleType: "cron", ScheduleExpr: "0 0 2 * * *", Timezone: "Europe/Paris", MisfirePolicy: "skip",
		Timeout: apiv1.Duration(5 * time.Minute), MaxRetries: 2, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(30 * time.Second),
		ChildJobIDs: []int64{report.ID, cleanup.ID}, AlarmWebhook: "https://example.com/alarm", AlarmEmails: []string{"ops@example.com"},
		Priority: 10, ConcurrencyKey: "params", KeyCap: 1, RateLimit: "10/3600s", KeyRateLimit: "2/1m",
	}); err != nil {
		t.Fatal(err)
	}
}

// writeFile writes a jobs file for -f.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An export applied to an empty cluster reproduces the jobs, children
// linked by name though the ids differ; applying again changes nothing;
// editing one field shows exactly that diff, --dry-run leaves the cluster
// as it is, and the apply then changes that field.
func TestExportApplyRoundTrip(t *testing.T) {
	src := isolatedAPI(t)
	seedCluster(t, src)
	exported := src.admin(t, "", "export")
	if again := src.admin(t, "", "export"); again != exported {
		t.Fatalf("two exports differ:\n%s\n---\n%s", exported, again)
	}
	for _, w := range []string{"    children:\n      - billing/send report\n      - ops/cleanup\n", "    params: |\n      #!/bin/sh\n",
		"    priority: 10\n", "    concurrency_key: params\n", "    key_cap: 1\n", "    rate_limit: 10/1h\n", "    key_rate_limit: 2/1m\n"} {
		if !strings.Contains(exported, w) {
			t.Fatalf("export\n%s\nlacks %q", exported, w)
		}
	}

	dst := newRealAPI(t)
	res := must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply into an empty cluster")
	printed(t, "apply", res.stdout, "+ group billing\n", "+ group ops\n", "+ billing/nightly\n", "Plan: 3 to create, 0 to update, 0 to delete, 0 unchanged; 2 group(s) to create.\n",
		"linked billing/nightly to 2 child job(s)\n", "Applied: 3 created, 0 updated, 0 deleted.\n")
	if got := dst.admin(t, "", "export"); got != exported {
		t.Fatalf("the applied cluster exports differently:\n%s\n---\nwant:\n%s", got, exported)
	}
	c := dst.apiClient(t)
	jobs := jobsByKey(t, c)
	nightly := jobs["billing/nightly"]
	if want := []int64{jobs["billing/send report"].ID, jobs["ops/cleanup"].ID}; len(nightly.ChildJobIDs) != 2 ||
		!(nightly.ChildJobIDs[0] == want[0] && nightly.ChildJobIDs[1] == want[1] || nightly.ChildJobIDs[0] == want[1] && nightly.ChildJobIDs[1] == want[0]) {
		t.Fatalf("nightly's children are %v, want the ids of its children here %v", nightly.ChildJobIDs, want)
	}
	if srcJobs := jobsByKey(t, src.apiClient(t)); srcJobs["billing/nightly"].ID == nightly.ID {
		t.Fatalf("the clusters' ids are the same (%d): the test would not show children are linked by name", nightly.ID)
	}

	// A second apply changes nothing.
	before := dst.reqs.Load()
	res = must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "second apply")
	if !strings.Contains(res.stdout, "No changes: the cluster matches the file (3 jobs).") || strings.Contains(res.stdout, "Applied") {
		t.Fatalf("second apply printed\n%s", res.stdout)
	}
	for k, j := range jobsByKey(t, c) {
		if j.Version != jobs[k].Version {
			t.Fatalf("second apply changed %s (version %d → %d)", k, jobs[k].Version, j.Version)
		}
	}
	if n := dst.reqs.Load() - before; n > 3 {
		t.Fatalf("second apply sent %d requests, want only the reads (groups, jobs)", n)
	}

	// One field edited: the plan shows exactly that; --dry-run writes nothing.
	edited := strings.Replace(exported, "schedule_expr: 0 0 2 * * *", "schedule_expr: 0 30 2 * * *", 1)
	if edited == exported {
		t.Fatalf("the export has no nightly schedule to edit:\n%s", exported)
	}
	path := writeFile(t, edited)
	res = must(t, dst.as(t, bootstrapToken, "", "apply", "-f", path, "--dry-run"), "apply --dry-run")
	wantPlan := "~ billing/nightly  schedule_expr: \"0 0 2 * * *\" → \"0 30 2 * * *\"\nPlan: 0 to create, 1 to update, 0 to delete, 2 unchanged.\n"
	if res.stdout != wantPlan {
		t.Fatalf("dry run printed\n%s\nwant\n%s", res.stdout, wantPlan)
	}
	if j := jobsByKey(t, c)["billing/nightly"]; j.Version != nightly.Version || j.ScheduleExpr != "0 0 2 * * *" {
		t.Fatalf("--dry-run changed the job: %+v", j)
	}
	res = must(t, dst.as(t, bootstrapToken, "", "apply", "-f", path), "apply the edit")
	if !strings.HasPrefix(res.stdout, wantPlan) || !strings.Contains(res.stdout, "Applied: 0 created, 1 updated, 0 deleted.") {
		t.Fatalf("apply printed\n%s", res.stdout)
	}
	after := jobsByKey(t, c)["billing/nightly"]
	if after.ScheduleExpr != "0 30 2 * * *" || after.Version != nightly.Version+1 || len(after.ChildJobIDs) != 2 || after.Timezone != "Europe/Paris" {
		t.Fatalf("after the edit: %+v", after)
	}
	if got := dst.admin(t, "", "export"); got != edited {
		t.Fatalf("after the edit the cluster exports\n%s\nwant\n%s", got, edited)
	}
}

// --prune deletes the jobs of the file's groups that the file does not
// name, and nothing in other groups.
func TestApplyPruneStaysInTheFilesGroups(t *testing.T) {
	r := isolatedAPI(t)
	seedCluster(t, r)
	billing := r.admin(t, "", "export", "--group", "billing")
	if strings.Contains(billing, "ops/cleanup\n") == false || strings.Contains(billing, "group: ops") {
		t.Fatalf("export --group billing:\n%s", billing)
	}
	c := r.apiClient(t)
	ctx := context.Background()
	for _, k := range [][2]string{{"billing", "stray"}, {"ops", "keep"}} {
		if _, err := c.CreateJob(ctx, apiv1.JobSpec{Group: k[0], Name: k[1], Handler: "shell", ScheduleType: "none"}); err != nil {
			t.Fatal(err)
		}
	}
	res := must(t, r.as(t, bootstrapToken, billing, "apply", "-f", "-"), "apply without --prune")
	if !strings.Contains(res.stdout, "No changes") {
		t.Fatalf("without --prune the plan is\n%s", res.stdout)
	}
	res = must(t, r.as(t, bootstrapToken, billing, "apply", "-f", "-", "--prune"), "apply --prune")
	if want := "- billing/stray\nPlan: 0 to create, 0 to update, 1 to delete, 2 unchanged.\n"; !strings.HasPrefix(res.stdout, want) {
		t.Fatalf("prune plan\n%s\nwant it to start with\n%s", res.stdout, want)
	}
	jobs := jobsByKey(t, c)
	if _, ok := jobs["billing/stray"]; ok {
		t.Fatal("billing/stray survived --prune")
	}
	for _, k := range []string{"ops/keep", "ops/cleanup", "billing/nightly", "billing/send report"} {
		if _, ok := jobs[k]; !ok {
			t.Fatalf("--prune of a billing file deleted %s", k)
		}
	}
}

// A job changed by someone else between the plan and the apply is not
// overwritten: the apply reports the conflict and fails; the other change
// stays, and a new plan shows the difference again.
func TestApplyRefusesConcurrentEdit(t *testing.T) {
	r := isolatedAPI(t)
	seedCluster(t, r)
	ctx := context.Background()
	c := r.apiClient(t)
	exported := r.admin(t, "", "export")
	edited := strings.Replace(exported, "description: invoices", "description: invoices, later", 1)
	f, err := jobfile.Parse("jobs.yaml", []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planApply(ctx, c, "jobs.yaml", f, false)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Count(jobfile.Update) != 1 {
		t.Fatalf("plan has %d updates, want 1", plan.Count(jobfile.Update))
	}

	// Someone edits the job after the plan was made.
	cur := jobsByKey(t, c)["billing/nightly"]
	theirs := cur.JobSpec
	theirs.MaxRetries, theirs.Version = 9, cur.Version
	if _, err := c.UpdateJob(ctx, cur.ID, theirs); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, output: outputTable}
	err = a.executePlan(ctx, c, plan)
	if !errors.Is(err, errConflicts) {
		t.Fatalf("apply over a concurrent edit: %v (stdout %q)", err, out.String())
	}
	wantMsg := "conflict: billing/nightly was changed by someone else since the plan (version 1, now 2): not updated"
	if !strings.Contains(errb.String(), wantMsg) {
		t.Fatalf("stderr %q does not say %q", errb.String(), wantMsg)
	}
	j := jobsByKey(t, c)["billing/nightly"]
	if j.MaxRetries != 9 || j.Description != "invoices" || j.Version != 2 {
		t.Fatalf("the concurrent edit was overwritten: %+v", j)
	}
	// Through the command, a new plan shows both differences and applies.
	res := must(t, r.as(t, bootstrapToken, edited, "apply", "-f", "-"), "apply after the conflict")
	printed(t, "apply", res.stdout, `~ billing/nightly  description: "invoices" → "invoices, later"`, "~ billing/nightly  max_retries: 9 → 2")
}

// An invalid file is refused before anything is written, naming the line
// and field, with exit status 1; a misused command line exits 2.
func TestApplyRefusesInvalidFiles(t *testing.T) {
	r := isolatedAPI(t, "billing")
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown field", "apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: billing\n    name: a\n    handler: shell\n    schedul_type: cron\n",
			"<stdin>:7: jobs[0].schedul_type: unknown field"},
		{"wrong type", "apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: billing\n    name: a\n    handler: shell\n    max_retries: [1]\n",
			"<stdin>:7: jobs[0].max_retries: want a whole number"},
		{"dangling child", "apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: billing\n    name: a\n    handler: shell\n    children: [billing/nowhere]\n",
			"<stdin>:7: jobs[0].children: job billing/nowhere exists neither in the file nor in the cluster"},
		{"undeclared group", "apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: nowhere\n    name: a\n    handler: shell\n",
			`<stdin>:4: jobs[0].group: group "nowhere" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := r.as(t, bootstrapToken, tc.doc, "apply", "-f", "-")
			if res.code != exitError || !strings.Contains(res.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", res.code, res.stderr, exitError, tc.want)
			}
		})
	}
	if jobs := jobsByKey(t, r.apiClient(t)); len(jobs) != 0 {
		t.Fatalf("invalid files created jobs: %v", jobs)
	}
	res := r.as(t, bootstrapToken, "", "apply")
	if res.code != exitUsage || !strings.Contains(res.stderr, "missing required flag -f") {
		t.Fatalf("apply without -f: exit %d, stderr %q", res.code, res.stderr)
	}
}
