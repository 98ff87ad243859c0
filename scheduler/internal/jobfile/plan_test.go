package jobfile

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

func planText(t *testing.T, p *Plan) string {
	t.Helper()
	var b strings.Builder
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The plan creates what the cluster lacks, shows each changed field of an
// update with its old and new value, leaves alone what matches (defaults
// written or not), and with prune deletes only in the file's groups.
func TestPlanDiffsAndPruneScope(t *testing.T) {
	groups := []apiv1.Group{{Name: "billing"}, {Name: "ops"}}
	current := []apiv1.Job{
		served(1, "billing", "nightly", func(j *apiv1.Job) { j.Version = 4 }),
		served(2, "billing", "same", nil),
		served(3, "billing", "old", nil),
		served(4, "ops", "untouched", nil),
	}
	f := mustParse(t, header+`jobs:
  - group: billing
    name: nightly
    handler: shell
    schedule_type: cron
    schedule_expr: 0 30 2 * * *
    enabled: false
    children: [billing/new]
  - group: billing
    name: same
    handler: shell
    schedule_type: cron
    schedule_expr: 0 0 2 * * *
    misfire_policy: fire_once
  - group: billing
    name: new
    handler: shell
`)
	p, err := MakePlan("jobs.yaml", f, groups, current, true)
	if err != nil {
		t.Fatal(err)
	}
	want := `+ billing/new
~ billing/nightly  schedule_expr: "0 0 2 * * *" → "0 30 2 * * *"
~ billing/nightly  enabled: true → false
~ billing/nightly  children: [] → ["billing/new"]
- billing/old
Plan: 1 to create, 1 to update, 1 to delete, 1 unchanged.
`
	if got := planText(t, p); got != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", got, want)
	}
	for _, c := range p.Changes {
		if c.Key.Name == "nightly" && (c.ID != 1 || c.Version != 4) {
			t.Fatalf("the update is not based on the version read: %+v", c)
		}
	}

	// Without prune nothing is deleted.
	p, err = MakePlan("jobs.yaml", f, groups, current, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Count(Delete) != 0 {
		t.Fatalf("deletes without prune:\n%s", planText(t, p))
	}
}

// A file in sync says so.
func TestPlanNoChanges(t *testing.T) {
	f := mustParse(t, header+"jobs:\n  - group: g\n    name: a\n    handler: shell\n    schedule_type: cron\n    schedule_expr: 0 0 2 * * *\n")
	p, err := MakePlan("jobs.yaml", f, []apiv1.Group{{Name: "g"}}, []apiv1.Job{served(1, "g", "a", nil)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := planText(t, p); got != "No changes: the cluster matches the file (1 jobs).\n" {
		t.Fatalf("plan:\n%s", got)
	}
}

// A child that exists nowhere and a group that exists nowhere are errors
// naming the line; a declared group the cluster lacks is to be created.
func TestPlanRefusesDanglingReferences(t *testing.T) {
	f := mustParse(t, header+`groups:
  - name: fresh
jobs:
  - group: missing
    name: a
    handler: shell
    children: [fresh/nowhere]
  - group: fresh
    name: b
    handler: shell
`)
	_, err := MakePlan("jobs.yaml", f, nil, nil, false)
	if err == nil {
		t.Fatal("a plan with dangling references was made")
	}
	for _, w := range []string{
		`jobs.yaml:6: jobs[0].group: group "missing" does not exist`,
		"jobs.yaml:9: jobs[0].children: job fresh/nowhere exists neither in the file nor in the cluster",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\ndoes not say %q", err, w)
		}
	}

	f = mustParse(t, header+"groups:\n  - name: fresh\njobs:\n  - group: fresh\n    name: b\n    handler: shell\n")
	p, err := MakePlan("jobs.yaml", f, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := planText(t, p); !strings.HasPrefix(got, "+ group fresh\n+ fresh/b\n") {
		t.Fatalf("plan:\n%s", got)
	}
}
