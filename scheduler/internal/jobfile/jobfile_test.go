package jobfile

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// served is a job the way the API returns it: every default filled in.
func served(id int64, group, name string, edit func(*apiv1.Job)) apiv1.Job {
	j := apiv1.Job{ID: id, JobSpec: apiv1.JobSpec{
		Group: group, Name: name, Handler: "shell", ScheduleType: "cron", ScheduleExpr: "0 0 2 * * *",
		Timezone: "UTC", MisfirePolicy: "fire_once", RouteStrategy: "any", BlockStrategy: "serial",
		RetryBackoff: "exponential", RetryInitial: apiv1.Duration(time.Second), RetryMax: apiv1.Duration(5 * time.Minute),
	}, Enabled: true, Version: 1}
	if edit != nil {
		edit(&j)
	}
	return j
}

func mustParse(t *testing.T, doc string) *File {
	t.Helper()
	f, err := Parse("jobs.yaml", []byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, doc)
	}
	return f
}

func encode(t *testing.T, f *File) string {
	t.Helper()
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An export leaves defaults out, names children by group/name, writes
// multi-line params as a block scalar and keeps strings that look like
// numbers, booleans or times strings; reading it back and writing it again
// gives the same bytes, whatever order the jobs came in.
func TestExportIsShortStableAndRoundTrips(t *testing.T) {
	jobs := []apiv1.Job{
		served(7, "billing", "nightly", func(j *apiv1.Job) {
			j.Params = "#!/bin/sh\nmake invoices\n"
			j.Timezone = "Europe/Paris"
			j.MaxRetries = 3
			j.RetryInitial = apiv1.Duration(10 * time.Minute) // retry_max's default follows it
			j.RetryMax = apiv1.Duration(10 * time.Minute)
			j.ChildJobIDs = []int64{9, 3}
			j.AlarmEmails = []string{"ops@example.com"}
		}),
		served(3, "billing", "007", func(j *apiv1.Job) {
			j.Params = "yes"
			j.ScheduleType, j.ScheduleExpr = "once", "2030-01-01T00:00:00Z"
			j.Enabled = false
		}),
		served(9, "ops", "cleanup", func(j *apiv1.Job) { j.ScheduleType, j.ScheduleExpr = "fix_rate", "30s" }),
	}
	names := map[int64]Key{7: {"billing", "nightly"}, 3: {"billing", "007"}, 9: {"ops", "cleanup"}}
	groups := []apiv1.Group{{Name: "ops"}, {Name: "billing", Title: "Billing", CreatedAt: time.Now()}}
	f, err := Export(groups, jobs, names)
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: jetjob/v1
kind: Jobs
groups:
  - name: billing
    title: Billing
  - name: ops
jobs:
  - group: billing
    name: "007"
    handler: shell
    params: yes
    schedule_type: once
    schedule_expr: "2030-01-01T00:00:00Z"
    enabled: false
  - group: billing
    name: nightly
    handler: shell
    params: |
      #!/bin/sh
      make invoices
    schedule_type: cron
    schedule_expr: 0 0 2 * * *
    timezone: Europe/Paris
    max_retries: 3
    retry_initial: 10m0s
    alarm_emails:
      - ops@example.com
    children:
      - billing/007
      - ops/cleanup
  - group: ops
    name: cleanup
    handler: shell
    schedule_type: fix_rate
    schedule_expr: 30s
`
	got := encode(t, f)
	if got != want {
		t.Fatalf("export:\n%s\nwant:\n%s", got, want)
	}
	back := mustParse(t, got)
	if again := encode(t, back); again != got {
		t.Fatalf("parse + encode changed the file:\n%s\nwas:\n%s", again, got)
	}
	if p := back.Jobs[1].Spec.Params; p != "#!/bin/sh\nmake invoices\n" {
		t.Fatalf("params read back as %q", p)
	}
	if n := back.Jobs[0].Spec.Name; n != "007" {
		t.Fatalf("name read back as %q", n)
	}
	reversed := []apiv1.Job{jobs[2], jobs[1], jobs[0]}
	f2, err := Export([]apiv1.Group{groups[1], groups[0]}, reversed, names)
	if err != nil {
		t.Fatal(err)
	}
	if again := encode(t, f2); again != got {
		t.Fatalf("export depends on the order jobs are listed in:\n%s", again)
	}

	// The file matches the cluster it came from: planning it changes nothing.
	mustBeInSync(t, "a fresh export", back, groups, jobs)
}

// mustBeInSync fails t unless planning f (what, an export) against the
// cluster it came from changes nothing.
func mustBeInSync(t *testing.T, what string, f *File, groups []apiv1.Group, jobs []apiv1.Job) {
	t.Helper()
	p, err := MakePlan("jobs.yaml", f, groups, jobs, true)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Empty() {
		var b strings.Builder
		_ = p.Write(&b)
		t.Fatalf("%s is not in sync with its cluster:\n%s", what, b.String())
	}
}

// A child the export cannot name (not readable by the exporter, or
// deleted) is counted, never named nor written as an id; planning the
// file back keeps it: no difference, and the update sends it back.
func TestExportCountsUnnamedChild(t *testing.T) {
	jobs := []apiv1.Job{
		served(1, "g", "a", func(j *apiv1.Job) { j.ChildJobIDs = []int64{42, 2, 43} }),
		served(2, "g", "b", nil),
	}
	names := map[int64]Key{1: {"g", "a"}, 2: {"g", "b"}}
	f, err := Export(nil, jobs, names)
	if err != nil {
		t.Fatalf("Export with unnamed children: %v", err)
	}
	doc := encode(t, f)
	if !strings.Contains(doc, "name: a # 2 more child jobs not listed") || strings.Contains(doc, "42") || strings.Contains(doc, "43") {
		t.Fatalf("export:\n%s", doc)
	}
	back := mustParse(t, doc)
	if back.Jobs[0].Hidden != 0 || len(back.Jobs[0].Children) != 1 {
		t.Fatalf("read back: %+v", back.Jobs[0])
	}
	groups := []apiv1.Group{{Name: "g"}}
	p, err := MakePlan("jobs.yaml", back, groups, jobs, false)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Empty() || len(p.Changes[0].Keep) != 2 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "g/a: 2 child job(s)") {
		t.Fatalf("plan of the export: %+v", p)
	}
	// An edit sends the kept children along (the apply command adds them).
	back.Jobs[0].Spec.Description = "edited"
	if p, err = MakePlan("jobs.yaml", back, groups, jobs, false); err != nil {
		t.Fatal(err)
	}
	if c := p.Changes[0]; c.Action != Update || len(c.Diffs) != 1 || c.Diffs[0].Field != "description" || len(c.Keep) != 2 {
		t.Fatalf("plan of an edit: %+v", c)
	}
}
