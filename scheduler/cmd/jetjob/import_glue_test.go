package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob/localmaria"
)

// A GLUE(Shell) job of a real MariaDB imports as a script job: its
// glue_source is the current version with its glue_remark and
// glue_updatetime (read in the checked zone), and its xxl_job_logglue rows
// are the older versions, in order; the history of a job not imported is
// not. A re-import adds no version.
func TestImportXXLJobGlueVersions(t *testing.T) {
	isolate(t)
	dsn := localmaria.StartTestDB(t, "xxl_job", "../../internal/xxljob/testdata/gen34.sql",
		"../../internal/xxljob/testdata/jobs.sql", "../../internal/xxljob/testdata/glue_history.sql").DSN("xxl_job")
	api := newRealAPI(t)
	c, err := client.New(api.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	imp := func() importReport {
		t.Helper()
		return decodeJSON[importReport](t, must(t, api.as(t, bootstrapToken, "", "import", "xxl-job", "--mysql-url", dsn,
			"--tz", "Asia/Shanghai", "-o", "json"), "import"))
	}
	rep := imp()
	var id int64
	for _, r := range rep.Jobs {
		if r.OldID == 39 {
			id = r.NewID
			if !strings.Contains(strings.Join(r.Mapped, ";"), "2 older versions of the script") {
				t.Errorf("job 39's row does not say its history came: %q", r.Mapped)
			}
		}
	}
	if id == 0 {
		t.Fatalf("job 39 was not imported: %+v", rep.Jobs)
	}
	ctx := context.Background()
	vs, err := c.ScriptVersions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	shanghai, _ := time.LoadLocation("Asia/Shanghai")
	want := []struct {
		version int
		remark  string
		at      time.Time
	}{
		{3, "GLUE代码初始化", time.Date(2024, 5, 1, 10, 0, 0, 0, shanghai)},
		{2, "keep 14 days", time.Date(2024, 4, 1, 9, 0, 0, 0, shanghai)},
		{1, "first cut", time.Date(2024, 3, 1, 9, 0, 0, 0, shanghai)},
	}
	if vs.Current != 3 || len(vs.Versions) != len(want) {
		t.Fatalf("versions %+v", vs)
	}
	for i, w := range want {
		if v := vs.Versions[i]; v.Version != w.version || v.Remark != w.remark || !v.CreatedAt.Equal(w.at) || v.Language != "bash" {
			t.Errorf("version %d: %+v, want %d %q at %s", i, v, w.version, w.remark, w.at)
		}
	}
	d, err := c.DiffScript(ctx, id, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.Diff, `-echo "rotating v2, keep $1 days"`) || !strings.Contains(d.Diff, "+find /var/log/app") {
		t.Errorf("diff v2 → v3:\n%s", d.Diff)
	}

	again := imp()
	for _, r := range again.Jobs {
		if r.OldID == 39 && r.Action != actUnchanged {
			t.Errorf("re-import: job 39 %s %v", r.Action, r.Updated)
		}
	}
	if vs2, err := c.ScriptVersions(ctx, id); err != nil || len(vs2.Versions) != 3 {
		t.Fatalf("after a re-import: %v, %+v", err, vs2)
	}
}
