package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// A script job's source is stored with versions: a save with a remark is
// a new version, the diff between two is a unified diff, a rollback is a
// new version with an old source, only the last 30 are kept, and every
// change is in the audit log.
func TestScriptVersions(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()

	spec := apiv1.JobSpec{Group: "g", Name: "nightly", Handler: "script", ScheduleType: "none",
		ScriptLanguage: "bash", Script: ptr("#!/bin/bash\necho one\n")}
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.ScriptVersion != 1 || j.Script == nil || *j.Script != "#!/bin/bash\necho one\n" || j.ScriptLanguage != "bash" {
		t.Fatalf("created job: version %d, language %q, script %v", j.ScriptVersion, j.ScriptLanguage, j.Script)
	}

	v2, err := c.SaveScript(ctx, j.ID, apiv1.ScriptSave{Source: "#!/bin/bash\necho two\n", Remark: "say two"})
	if err != nil {
		t.Fatal(err)
	}
	if v2.Version != 2 || v2.Remark != "say two" || !v2.Current {
		t.Fatalf("saved: %+v", v2)
	}
	d, err := c.DiffScript(ctx, j.ID, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := "--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n #!/bin/bash\n-echo one\n+echo two\n"; d.Diff != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", d.Diff, want)
	}
	rb, err := c.RollbackScript(ctx, j.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rb.Version != 3 || rb.Source != "#!/bin/bash\necho one\n" || rb.Remark != "rollback to v1" {
		t.Fatalf("rollback: %+v", rb)
	}
	got, err := c.GetJob(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ScriptVersion != 3 || *got.Script != "#!/bin/bash\necho one\n" {
		t.Fatalf("job after the rollback: version %d, script %q", got.ScriptVersion, *got.Script)
	}

	// An edit of the job that leaves the script out keeps it; one that
	// changes it makes a version with its remark.
	spec.Script, spec.Description, spec.Version = nil, "edited", got.Version
	if got, err = c.UpdateJob(ctx, j.ID, spec); err != nil || got.ScriptVersion != 3 {
		t.Fatalf("edit without the script: %v, version %d", err, got.ScriptVersion)
	}
	spec.Script, spec.ScriptRemark, spec.Version = ptr("echo four\n"), "from the job", got.Version
	if got, err = c.UpdateJob(ctx, j.ID, spec); err != nil || got.ScriptVersion != 4 {
		t.Fatalf("edit with a script: %v, version %d", err, got.ScriptVersion)
	}

	// 30 versions are kept: after 32 saves in all, 1 and 2 are gone.
	for i := 5; i <= 32; i++ {
		if _, err := c.SaveScript(ctx, j.ID, apiv1.ScriptSave{Source: strings.Repeat("echo\n", i)}); err != nil {
			t.Fatal(err)
		}
	}
	vs, err := c.ScriptVersions(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs.Versions) != store.DefaultScriptVersions || vs.Current != 32 || vs.Versions[0].Version != 32 || vs.Versions[29].Version != 3 {
		t.Fatalf("%d versions kept, current %d, newest %d, oldest %d", len(vs.Versions), vs.Current,
			vs.Versions[0].Version, vs.Versions[len(vs.Versions)-1].Version)
	}
	if vs.Versions[28].Remark != "from the job" || vs.Versions[29].Remark != "rollback to v1" {
		t.Fatalf("remarks of versions 4 and 3: %q, %q", vs.Versions[28].Remark, vs.Versions[29].Remark)
	}
	if _, err := c.RollbackScript(ctx, j.ID, 1); !isStatus(err, 404) {
		t.Fatalf("rollback to a pruned version: %v, want 404", err)
	}

	// Bad input is refused, naming the field.
	for _, bad := range []struct {
		edit func(*apiv1.JobSpec)
		want string
	}{
		{func(s *apiv1.JobSpec) { s.ScriptLanguage = "ruby" }, "script_language"},
		{func(s *apiv1.JobSpec) { s.Handler = "shell" }, "script_language, script and script_remark are for handler"},
		{func(s *apiv1.JobSpec) { s.Script = ptr("a\x00b") }, "NUL"},
	} {
		s := spec
		s.Name = "bad"
		bad.edit(&s)
		if _, err := c.CreateJob(ctx, s); !isStatus(err, 400) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("create %+v: %v, want 400 naming %s", s, err, bad.want)
		}
	}
	plain, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "plain", Handler: "h", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetScript(ctx, plain.ID); !isStatus(err, 400) {
		t.Fatalf("script of a job of handler h: %v, want 400", err)
	}
	if _, err := c.SaveScript(ctx, plain.ID, apiv1.ScriptSave{Source: "echo\n"}); !isStatus(err, 400) {
		t.Fatalf("save a script on a job of handler h: %v, want 400", err)
	}
	if _, err := c.ImportScript(ctx, plain.ID, apiv1.ScriptImport{}); !isStatus(err, 400) {
		t.Fatalf("import scripts on a job of handler h: %v, want 400", err)
	}

	// Every save and the rollback are audited with their sources.
	actions := map[string]int{}
	for _, action := range []string{"script.save", "script.rollback"} {
		a, err := c.Audit(ctx, client.AuditOptions{Target: fmt.Sprintf("job:%d", j.ID), Action: action, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		actions[action] = len(a.Entries)
	}
	if actions["script.save"] != 29 || actions["script.rollback"] != 1 {
		t.Fatalf("audit entries: %v, want 29 saves and 1 rollback", actions)
	}
}

func isStatus(err error, code int) bool {
	ae, ok := err.(*client.APIError)
	return ok && ae.StatusCode == code
}
