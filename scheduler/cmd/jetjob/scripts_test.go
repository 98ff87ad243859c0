package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A script job made from a file is edited in $EDITOR with a remark and
// from a file, its versions listed, two compared and one rolled back to;
// export and apply carry its current source (not its history).
func TestScriptsCommands(t *testing.T) {
	r := isolatedAPI(t, "ops")
	dir := t.TempDir()
	first := filepath.Join(dir, "first.sh")
	if err := os.WriteFile(first, []byte("#!/bin/bash\necho one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	job := adminJSON[apiv1.Job](t, r, "jobs", "create", "--group", "ops", "--name", "cleanup", "--handler", "script",
		"--script-language", "bash", "--script-file", first)
	if job.ScriptVersion != 1 || job.Script == nil || *job.Script != "#!/bin/bash\necho one\n" {
		t.Fatalf("created %+v", job)
	}
	id := fmt.Sprint(job.ID)

	// The editor: a command that changes the file it is given.
	t.Setenv("VISUAL", "")
	t.Setenv("EDITOR", "sed -i s/one/two/")
	res := must(t, r.as(t, bootstrapToken, "", "scripts", "edit", id, "--remark", "say two"), "scripts edit")
	if !strings.Contains(res.stdout, "Saved version 2") {
		t.Fatalf("scripts edit printed %q", res.stdout)
	}
	// An editor that changes nothing saves nothing.
	t.Setenv("EDITOR", "true")
	if res := must(t, r.as(t, bootstrapToken, "", "scripts", "edit", id), "unchanged edit"); !strings.Contains(res.stderr, "nothing saved") {
		t.Fatalf("an unchanged edit printed %q / %q", res.stdout, res.stderr)
	}
	must(t, r.as(t, bootstrapToken, "#!/bin/bash\necho three\n", "scripts", "edit", id, "--file", "-", "--remark", "three from stdin"), "edit --file -")

	res = must(t, r.as(t, bootstrapToken, "", "scripts", "versions", id), "scripts versions")
	for _, want := range []string{"3 (current)", "three from stdin", "say two", "created"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("versions lack %q:\n%s", want, res.stdout)
		}
	}
	res = must(t, r.as(t, bootstrapToken, "", "scripts", "diff", id, "1", "2"), "scripts diff")
	if want := "--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n #!/bin/bash\n-echo one\n+echo two\n"; res.stdout != want {
		t.Fatalf("diff printed\n%s\nwant\n%s", res.stdout, want)
	}
	if res := r.as(t, bootstrapToken, "", "scripts", "diff", id, "1", "x"); res.code != exitUsage {
		t.Fatalf("diff with a bad version: exit %d", res.code)
	}
	res = must(t, r.as(t, bootstrapToken, "", "scripts", "rollback", id, "1"), "scripts rollback")
	if !strings.Contains(res.stdout, "rollback to v1") {
		t.Fatalf("rollback printed %q", res.stdout)
	}
	if res := must(t, r.as(t, bootstrapToken, "", "scripts", "show", id), "scripts show"); res.stdout != "#!/bin/bash\necho one\n" {
		t.Fatalf("after the rollback the script is %q", res.stdout)
	}

	// Export carries the current source; applying it elsewhere makes the
	// job with that source as its first version; an edited source in the
	// file is a new version.
	exported := r.admin(t, "", "export")
	if !strings.Contains(exported, "script_language: bash") || !strings.Contains(exported, "echo one") || strings.Contains(exported, "echo three") {
		t.Fatalf("export:\n%s", exported)
	}
	dst := newRealAPI(t)
	must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply")
	got := jobsByKey(t, dst.apiClient(t))["ops/cleanup"]
	if got.ScriptVersion != 1 || got.Script == nil || *got.Script != "#!/bin/bash\necho one\n" || got.ScriptLanguage != "bash" {
		t.Fatalf("applied job: %+v", got)
	}
	if res := must(t, dst.as(t, bootstrapToken, exported, "apply", "-f", "-"), "apply again"); !strings.Contains(res.stdout, "No changes") {
		t.Fatalf("a second apply printed\n%s", res.stdout)
	}
	edited := strings.Replace(exported, "echo one", "echo four", 1)
	must(t, dst.as(t, bootstrapToken, edited, "apply", "-f", "-"), "apply an edited script")
	got = jobsByKey(t, dst.apiClient(t))["ops/cleanup"]
	if got.ScriptVersion != 2 || *got.Script != "#!/bin/bash\necho four\n" {
		t.Fatalf("after applying an edited script: version %d, %q", got.ScriptVersion, *got.Script)
	}
}
