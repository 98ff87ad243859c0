package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A job of demo has a child in a group its operator cannot read (linked by
// an admin). The operator's export must neither fail nor name that child,
// applying the export back changes nothing, and applying an edit of the
// parent keeps the link it cannot name (issue #26, finding 1).
func TestExportApplyWithUnreadableChild(t *testing.T) {
	r := isolatedAPI(t)
	dir := t.TempDir()
	setup := filepath.Join(dir, "setup.yaml")
	if err := os.WriteFile(setup, []byte(`apiVersion: jetjob/v1
kind: Jobs
groups:
  - name: demo
  - name: other
jobs:
  - group: other
    name: secret
    handler: hello
  - group: demo
    name: kid
    handler: hello
  - group: demo
    name: parent
    handler: hello
    children: [other/secret, demo/kid]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r.admin(t, "", "apply", "-f", setup)
	r.admin(t, "op-password-12\n", "users", "create", "op", "--role", "operator", "--group", "demo", "--password-stdin")
	key := decodeJSON[apiv1.CreatedKey](t, r.as(t, bootstrapToken, "", "keys", "create", "--user", "op", "-o", "json"))
	op := func(args ...string) result {
		t.Helper()
		return r.as(t, key.Secret, "", args...)
	}

	exported := must(t, op("export"), "operator: export").stdout
	if strings.Contains(exported, "other") || strings.Contains(exported, "secret") {
		t.Fatalf("the operator's export names the unreadable child or its group:\n%s", exported)
	}
	printed(t, "export", exported, "1 more child job not listed", "- demo/kid")
	file := filepath.Join(dir, "demo.yaml")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	res := must(t, op("apply", "-f", file), "operator: apply the export")
	printed(t, "apply of an unchanged export", res.stdout, "No changes", "demo/parent: 1 child job(s) you cannot read")

	// An edit of the parent keeps the link the file cannot name.
	edited := strings.Replace(exported, "    name: parent", "    name: parent\n    description: edited", 1)
	if edited == exported {
		t.Fatalf("no parent line in\n%s", exported)
	}
	if err := os.WriteFile(file, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	res = must(t, op("apply", "-f", file), "operator: apply an edit")
	printed(t, "apply of an edit", res.stdout, "~ demo/parent  description", "updated demo/parent")
	jobs := decodeJSON[apiv1.JobList](t, r.as(t, bootstrapToken, "", "-o", "json", "jobs", "list"))
	ids := map[string]int64{}
	var parent apiv1.Job
	for _, j := range jobs.Jobs {
		ids[j.Group+"/"+j.Name] = j.ID
		if j.Name == "parent" {
			parent = j
		}
	}
	got := slices.Clone(parent.ChildJobIDs)
	slices.Sort(got)
	want := []int64{ids["other/secret"], ids["demo/kid"]}
	slices.Sort(want)
	if parent.Description != "edited" || !slices.Equal(got, want) {
		t.Fatalf("parent after the operator's apply: description %q, children %v; want edited, children %v", parent.Description, got, want)
	}
}
