package main

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob/localmaria"
)

// xxlFixture is the xxl-job database of scheduler/internal/xxljob's tests: 5
// executor groups, 55 jobs.
var xxlFixture = []string{"../../internal/xxljob/testdata/schema.sql", "../../internal/xxljob/testdata/jobs.sql"}

// xxlUnmappable are the fixture's jobs that cannot be imported: an invalid
// Quartz hour, GLUE(Java), unknown route, block and misfire strategies,
// FIX_DELAY, a bad FIX_RATE, a BEAN job without handler, an unknown glue,
// and the jobs of an invalid and of a missing group.
var xxlUnmappable = []int64{19, 23, 28, 29, 30, 31, 32, 33, 34, 54, 55}

// startXXLJob starts a MariaDB holding the fixture and returns its DSN.
func startXXLJob(t *testing.T) (dsn string, db *sql.DB) {
	t.Helper()
	srv := localmaria.StartTestDB(t, "xxl_job", xxlFixture...)
	db, err := sql.Open("mysql", srv.DSN("xxl_job"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return srv.DSN("xxl_job"), db
}

// jetjobState is every job of the imported groups, by name.
func jetjobState(t *testing.T, c *client.Client, groups ...string) map[string]apiv1.Job {
	t.Helper()
	out := map[string]apiv1.Job{}
	gl, err := c.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gl.Groups {
		if !slices.Contains(groups, g.Name) {
			t.Errorf("unexpected group %q", g.Name)
		}
		jobs, err := listGroupJobs(context.Background(), c, g.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			out[j.Name] = j
		}
	}
	return out
}

// rowOf returns the table line of the job with the old id.
func rowOf(t *testing.T, table string, oldID string) string {
	t.Helper()
	_, jobs, _ := strings.Cut(table, "\nOLD ID")
	for _, line := range strings.Split(jobs, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == oldID {
			return line
		}
	}
	t.Fatalf("no row for xxl-job job %s in\n%s", oldID, table)
	return ""
}

func TestImportXXLJob(t *testing.T) {
	isolate(t)
	dsn, xdb := startXXLJob(t)
	api := newRealAPI(t)
	c, err := client.New(api.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	groups := []string{"xxl-xxl-job-executor-sample", "xxl-billing-executor", "xxl-ops-scripts", "xxl-report-service"}
	imp := func(extra ...string) string {
		t.Helper()
		return api.admin(t, "", append([]string{"import", "xxl-job", "--mysql-url", dsn, "--group-prefix", "xxl-", "--tz", "Asia/Shanghai"}, extra...)...)
	}

	// A dry run reports everything it would create and creates nothing.
	out := imp("--dry-run")
	if !strings.Contains(out, "jobs: 44 would be created, 0 would be updated, 0 unchanged, 11 not imported") ||
		!strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("dry run printed\n%s", out)
	}
	printed(t, "the dry run", out, "xxl-job database xxl_job, schema generation 2.3–2.4")
	if st := jetjobState(t, c); len(st) != 0 {
		t.Fatalf("the dry run created %d jobs", len(st))
	}

	// The import.
	out = imp()
	if !strings.Contains(out, "jobs: 44 created, 0 updated, 0 unchanged, 11 not imported (Quartz expressions fire in Asia/Shanghai)") {
		t.Fatalf("import printed\n%s", out)
	}
	for _, id := range xxlUnmappable {
		if row := rowOf(t, out, strconv.FormatInt(id, 10)); !strings.Contains(row, "not imported") || !strings.Contains(row, "NOT MAPPED: ") {
			t.Errorf("job %d row does not say it is not imported: %q", id, row)
		}
	}
	if row := rowOf(t, out, "23"); !strings.Contains(row, "GLUE(Java)") {
		t.Errorf("the Groovy job's row does not say why: %q", row)
	}
	if !strings.Contains(out, `manual address list "http://10.0.0.5:9999/,http://10.0.0.6:9999/" not used`) ||
		!strings.Contains(out, "5 bad app!") {
		t.Errorf("group notes missing:\n%s", out)
	}
	st := jetjobState(t, c, groups...)
	if len(st) != 44 {
		t.Fatalf("%d jobs in jetjob, want 44", len(st))
	}

	// Fields mapped.
	j := st["nightly-cleanup-3"]
	if j.Group != "xxl-xxl-job-executor-sample" || j.ScheduleType != "quartz" || j.ScheduleExpr != "0 0 2 * * ?" ||
		j.Timezone != "Asia/Shanghai" || j.RouteStrategy != "round" || j.BlockStrategy != "discard_later" ||
		j.MisfirePolicy != "skip" || time.Duration(j.Timeout) != 10*time.Minute || j.MaxRetries != 3 ||
		j.Handler != "cleanupHandler" || j.Params != "days=7" || j.Enabled ||
		!slices.Equal(j.AlarmEmails, []string{"ops@example.com", "dba@example.com"}) ||
		j.Description != "Nightly cleanup (imported from xxl-job job 3, author alice)" {
		t.Errorf("nightly-cleanup-3 = %+v", j)
	}
	if j := st["job-1"]; j.ScheduleExpr != "0 0 0 * * ? *" || j.RouteStrategy != "first" || j.Handler != "demoJobHandler" {
		t.Errorf("xxl-job's sample job = %+v", j)
	}
	if j := st["sharding-demo-2"]; j.RouteStrategy != "sharding_broadcast" || j.MisfirePolicy != "fire_once" {
		t.Errorf("sharding-demo-2 = %+v", j)
	}
	if j := st["rotate-logs-39"]; j.Group != "xxl-ops-scripts" || j.Handler != "script" || j.ScheduleType != "fix_rate" || j.ScheduleExpr != "86400s" {
		t.Errorf("rotate-logs-39 = %+v", j)
	} else if j.ScriptLanguage != "bash" || j.Script == nil || !strings.Contains(*j.Script, "find /var/log/app") || j.Params != "14" {
		t.Errorf("rotate-logs-39: language %q, params %q, script %v", j.ScriptLanguage, j.Params, j.Script)
	}
	for _, name := range []string{"new-year-2030-9", "third-friday-report-6", "last-weekday-of-the-month-16"} {
		if st[name].ScheduleType != "quartz" {
			t.Errorf("%s not imported as quartz: %+v", name, st[name])
		}
	}

	// Child links by the new ids: the chain 10 → 11 → 12 → 13, the fan-out,
	// the cross-group link, and no link to what was not imported.
	link := func(parent string, children ...string) {
		t.Helper()
		var want []int64
		for _, c := range children {
			want = append(want, st[c].ID)
		}
		got := slices.Clone(st[parent].ChildJobIDs)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s children %v, want %v (%v)", parent, got, want, children)
		}
	}
	link("extract-orders-10", "transform-orders-11")
	link("transform-orders-11", "load-orders-12")
	link("load-orders-12", "notify-order-load-13")
	link("fan-out-20", "fan-child-one-21", "fan-child-two-22")
	link("ledger-export-49", "nightly-cleanup-3")
	link("parent-of-groovy-24")
	link("self-link-27")
	if n := len(st["cycle-a-25"].ChildJobIDs) + len(st["cycle-b-26"].ChildJobIDs); n != 1 {
		t.Errorf("cycle 25 ↔ 26 kept %d links, want 1", n)
	}

	// A second import changes nothing and says so.
	out = imp()
	if !strings.Contains(out, "jobs: 0 created, 0 updated, 44 unchanged, 11 not imported") ||
		!strings.Contains(out, "nothing changed: jetjob already matches the xxl-job database") {
		t.Fatalf("second import printed\n%s", out)
	}
	if again := jetjobState(t, c, groups...); !sameVersions(st, again) {
		t.Fatal("the second import changed jobs")
	}

	// A change in xxl-job: the dry run names it and changes nothing, the
	// import updates only that job.
	if _, err := xdb.Exec("UPDATE xxl_job_info SET executor_param = 'days=30' WHERE id = 3"); err != nil {
		t.Fatal(err)
	}
	out = imp("--dry-run")
	if row := rowOf(t, out, "3"); !strings.Contains(row, "would be updated (params)") {
		t.Errorf("dry run row for job 3: %q", row)
	}
	if again := jetjobState(t, c, groups...); !sameVersions(st, again) {
		t.Fatal("the dry run changed jobs")
	}
	out = imp()
	if !strings.Contains(out, "jobs: 0 created, 1 updated, 43 unchanged") || !strings.Contains(rowOf(t, out, "3"), "updated (params)") {
		t.Fatalf("import after the change printed\n%s", out)
	}
	again := jetjobState(t, c, groups...)
	if again["nightly-cleanup-3"].Params != "days=30" || again["nightly-cleanup-3"].ID != st["nightly-cleanup-3"].ID {
		t.Errorf("job 3 after the update: %+v", again["nightly-cleanup-3"])
	}

	// --enable: the jobs xxl-job runs are enabled, the stopped ones not.
	imp("--enable")
	again = jetjobState(t, c, groups...)
	if !again["nightly-cleanup-3"].Enabled || !again["rotate-logs-39"].Enabled || again["load-orders-12"].Enabled || again["job-1"].Enabled {
		t.Errorf("after --enable: 3 %v, 39 %v, 12 %v, 1 %v; want true, true, false, false",
			again["nightly-cleanup-3"].Enabled, again["rotate-logs-39"].Enabled, again["load-orders-12"].Enabled, again["job-1"].Enabled)
	}
}

// sameVersions reports whether every job of a is in b at the same version.
func sameVersions(a, b map[string]apiv1.Job) bool {
	if len(a) != len(b) {
		return false
	}
	for name, j := range a {
		if b[name].ID != j.ID || b[name].Version != j.Version {
			return false
		}
	}
	return true
}

// Bad flags are usage errors, naming the flag, before anything is read or
// sent.
func TestImportXXLJobFlags(t *testing.T) {
	api := isolatedAPI(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "missing required flag --mysql-url"},
		{[]string{"--mysql-url", "root:hunter2@bogus"}, "--mysql-url: not a valid DSN"},
		{[]string{"--mysql-url", "root@tcp(127.0.0.1:1)/x", "--group-prefix", "a b"}, "--group-prefix"},
		{[]string{"--mysql-url", "root@tcp(127.0.0.1:1)/x", "--tz", "Mars/Olympus"}, `--tz "Mars/Olympus"`},
	} {
		res := api.as(t, bootstrapToken, "", append([]string{"import", "xxl-job"}, c.args...)...)
		if res.code != exitUsage || !strings.Contains(res.stderr, c.want) || strings.Contains(res.stderr, "hunter2") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, res.code, res.stderr, c.want)
		}
	}
	if n := api.reqs.Load(); n != 0 {
		t.Errorf("bad flags sent %d requests", n)
	}
}
