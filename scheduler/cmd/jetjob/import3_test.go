package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob"
	"github.com/jetjob/jetjob/scheduler/internal/xxljob/localmaria"
)

// startXXLJob3 starts a MariaDB holding the xxl-job 3.x test database
// (scheduler/internal/xxljob/testdata/gen3.sql) and returns its DSN.
func startXXLJob3(t *testing.T) string {
	t.Helper()
	return startXXLJobGen(t, "gen3.sql")
}

// startXXLJobGen starts a MariaDB holding one of the generation test
// databases of scheduler/internal/xxljob/testdata and returns its DSN.
func startXXLJobGen(t *testing.T, file string) string {
	t.Helper()
	return localmaria.StartTestDB(t, "xxl_job", "../../internal/xxljob/testdata/"+file).DSN("xxl_job")
}

// An xxl-job 3.x database imports: its generation and zone are found and
// said, every row is in the report (the JSON document and the Markdown
// file) as mapped, changed or not imported with why, the rows that cannot
// be imported stop nothing, and a re-import with another group prefix
// moves the jobs instead of making them again.
func TestImportXXLJob3(t *testing.T) {
	isolate(t)
	dsn := startXXLJob3(t)
	api := newRealAPI(t)
	c, err := client.New(api.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	imp := func(extra ...string) result {
		t.Helper()
		return api.as(t, bootstrapToken, "", append([]string{"import", "xxl-job", "--mysql-url", dsn}, extra...)...)
	}

	// The default zone, UTC, contradicts the next fire xxl-job stored for
	// job 2 (computed in Asia/Shanghai): refused before anything is sent.
	before := api.reqs.Load()
	res := imp("--dry-run")
	if res.code == exitOK || !strings.Contains(res.stderr, "the default zone, UTC, does not fit") ||
		!strings.Contains(res.stderr, "Asia/Shanghai") || !strings.Contains(res.stderr, "3.x schema") {
		t.Fatalf("default zone: exit %d, stderr %q", res.code, res.stderr)
	}
	if n := api.reqs.Load() - before; n != 0 {
		t.Errorf("a refused zone still sent %d requests", n)
	}

	// --tz auto picks Asia/Shanghai; -o json and --report say everything.
	report := filepath.Join(t.TempDir(), "import.md")
	res = must(t, imp("--tz", "auto", "--group-prefix", "x3-", "--users", "--report", report, "-o", "json"), "import")
	rep := decodeJSON[importReport](t, res)
	if rep.Generation != "3.x" || rep.Database != "xxl_job" || rep.Timezone != "Asia/Shanghai" || rep.Zone.Evidence != 1 {
		t.Errorf("report head: generation %q database %q zone %q (%+v)", rep.Generation, rep.Database, rep.Timezone, rep.Zone)
	}
	if len(rep.Jobs) != 8 {
		t.Fatalf("%d job rows, want all 8 of xxl_job_info", len(rep.Jobs))
	}
	rows := map[int64]importJobRow{}
	for _, r := range rep.Jobs {
		rows[r.OldID] = r
		if r.Action == "" {
			t.Errorf("job %d not accounted for: %+v", r.OldID, r)
		}
	}
	for id, why := range map[int64]string{5: "at most 366 days", 6: "Support for specifying both", 7: "never fires again"} {
		if r := rows[id]; r.Action != actNotImported || !strings.Contains(strings.Join(r.Problems, ";"), why) {
			t.Errorf("job %d: %s %q, want not imported saying %q", id, r.Action, r.Problems, why)
		}
	}
	for _, id := range []int64{1, 2, 3, 4, 8} {
		if r := rows[id]; r.Action != actCreated || r.NewID == 0 || r.Source != "xxl-job xxl_job#"+strconv.FormatInt(id, 10) {
			t.Errorf("job %d: %+v, want created with its source", id, r)
		}
	}
	if rep.Counts[actCreated] != 5 || rep.Counts[actNotImported] != 3 {
		t.Errorf("counts %v", rep.Counts)
	}
	if notes := strings.Join(rows[8].Changed, ";"); !strings.Contains(notes, "trimmed") || !strings.Contains(notes, "child job 5") {
		t.Errorf("job 8 changed %q: want the handler trim and the dropped link to 5", notes)
	}

	jobs, err := c.ListAllJobs(context.Background(), client.ListJobsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byOld := map[int64]apiv1.Job{}
	for _, j := range jobs {
		for id, r := range rows {
			if r.NewID == j.ID {
				byOld[id] = j
			}
		}
	}
	for id, lang := range map[int64]string{2: "python3", 3: "python2", 4: "powershell"} {
		if j := byOld[id]; j.Handler != "script" || j.ScriptLanguage != lang || j.Script == nil || j.ScriptVersion != 1 {
			t.Errorf("job %d: handler %q language %q version %d, want a script job in %s", id, j.Handler, j.ScriptLanguage, j.ScriptVersion, lang)
		}
	}
	if j := byOld[8]; j.Handler != "marketOpenHandler" || j.Timezone != "America/New_York" || !slices.Equal(j.ChildJobIDs, []int64{byOld[1].ID}) {
		t.Errorf("job 8 = %+v", j)
	}
	if j := byOld[2]; j.Timezone != "Asia/Shanghai" || j.Group != "x3-ops-scripts" {
		t.Errorf("job 2 = %+v", j)
	}

	// Users: ops operates both imported groups, without a password, and
	// the report gives a one-time link to choose one: it works once.
	var ops *importUserRow
	for i := range rep.Users {
		if rep.Users[i].User == "ops" {
			ops = &rep.Users[i]
		}
	}
	if ops == nil || ops.Action != actCreated || !strings.HasPrefix(ops.SetPasswordLink, api.URL+"/set-password?token=") ||
		!strings.Contains(strings.Join(ops.Notes, ";"), ops.SetPasswordLink) || ops.LinkExpiresAt == nil ||
		time.Until(*ops.LinkExpiresAt) < 71*time.Hour {
		t.Fatalf("user ops: %+v (users %+v)", ops, rep.Users)
	}
	token := ops.SetPasswordLink[strings.Index(ops.SetPasswordLink, "token=")+len("token="):]
	anon, err := client.New(api.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := anon.UsePasswordLink(context.Background(), token, "ops chose this password"); err != nil {
		t.Fatalf("the imported user's link: %v", err)
	}
	if _, _, err := anon.Login(context.Background(), "ops", "ops chose this password"); err != nil {
		t.Fatalf("ops signs in with the password chosen: %v", err)
	}
	if err := anon.UsePasswordLink(context.Background(), token, "someone else's password"); err == nil {
		t.Fatal("the link worked twice")
	}
	// An admin issues another.
	res = must(t, api.as(t, bootstrapToken, "", "users", "reset-link", "ops", "--ttl", "1h"), "users reset-link")
	if !strings.HasPrefix(res.stdout, api.URL+"/set-password?token=") || !strings.Contains(res.stdout, "One-time link for ops") {
		t.Fatalf("reset-link printed %q", res.stdout)
	}
	u, err := c.GetUser(context.Background(), "ops")
	if err != nil || u.Admin || len(u.Grants) != 2 || u.Grants[0].Role != apiv1.RoleOperator {
		t.Errorf("user ops = %+v, %v", u, err)
	}

	md, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	printed(t, "the Markdown report", string(md), "# xxl-job import: xxl_job", "Schema generation: 3.x", "Asia/Shanghai",
		"## Not imported (3)", "at most 366 days", "never fires again", "## Imported with a changed meaning",
		"## Imported as they were", "## Users")

	// Another group prefix: the jobs are found by their source and moved,
	// not made again.
	res = must(t, imp("--tz", "Asia/Shanghai", "--group-prefix", "y3-", "-o", "json"), "re-import")
	rep2 := decodeJSON[importReport](t, res)
	if rep2.Counts[actUpdated] != 5 || rep2.Counts[actCreated] != 0 {
		t.Errorf("re-import with another prefix: counts %v, want 5 updated, none created", rep2.Counts)
	}
	after, err := c.ListAllJobs(context.Background(), client.ListJobsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 5 {
		t.Errorf("%d jobs after the re-import, want the same 5", len(after))
	}
	for _, j := range after {
		if !strings.HasPrefix(j.Group, "y3-") {
			t.Errorf("job %d still in group %s", j.ID, j.Group)
		}
	}

	// --enable, then a re-import without it: the enabled job stays enabled
	// and its row says so instead of a bare "unchanged".
	must(t, imp("--tz", "Asia/Shanghai", "--group-prefix", "y3-", "--enable"), "--enable")
	rep3 := decodeJSON[importReport](t, must(t, imp("--tz", "Asia/Shanghai", "--group-prefix", "y3-", "-o", "json"), "again"))
	for _, r := range rep3.Jobs {
		if r.OldID == 2 && !strings.Contains(strings.Join(r.Changed, ";"), "enabled in jetjob and left so") {
			t.Errorf("job 2 after --enable, re-imported without: %+v", r)
		}
	}
}

// The older generations import too: 2.0–2.2 (job_cron) and 2.3–2.4, each
// with the sample rows its release ships, the zone picked from the next
// fire xxl-job stored.
func TestImportXXLJobOlderGenerations(t *testing.T) {
	for file, gen := range map[string]string{"gen20.sql": "2.0–2.2", "gen23.sql": "2.3–2.4"} {
		t.Run(gen, func(t *testing.T) {
			isolate(t)
			dsn := startXXLJobGen(t, file)
			api := newRealAPI(t)
			rep := decodeJSON[importReport](t, must(t, api.as(t, bootstrapToken, "", "import", "xxl-job", "--mysql-url", dsn,
				"--tz", "auto", "--users", "-o", "json"), "import"))
			if rep.Generation != gen || rep.Timezone != "Asia/Shanghai" || len(rep.Jobs) != 3 || rep.Counts[actCreated] != 3 {
				t.Fatalf("generation %q zone %q counts %v jobs %+v", rep.Generation, rep.Timezone, rep.Counts, rep.Jobs)
			}
			for _, r := range rep.Jobs {
				if r.OldID == 1 && (r.Name != "job-1" || !strings.Contains(strings.Join(r.Mapped, ";"), "CRON 0 0 0 * * ? * → quartz (Asia/Shanghai)")) {
					t.Errorf("the sample job: %+v", r)
				}
			}
			if len(rep.Users) != 2 || rep.Users[1].Action != actCreated {
				t.Errorf("users %+v", rep.Users)
			}
		})
	}
}

// With the API unreachable the import says so, and nothing else: no empty
// table, no "nothing changed".
func TestImportXXLJobAPIUnreachable(t *testing.T) {
	isolate(t)
	dsn := startXXLJob3(t)
	res := runCLI(t, "", "--api", "http://127.0.0.1:1", "--token", bootstrapToken,
		"import", "xxl-job", "--mysql-url", dsn, "--tz", "Asia/Shanghai")
	if res.code == exitOK || !strings.Contains(res.stderr, "list jetjob groups") ||
		strings.Contains(res.stdout, "nothing changed") || strings.Contains(res.stdout, "OLD ID") {
		t.Errorf("unreachable API: exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

// A job the API refuses is reported on its row and the import goes on:
// an operator without the scripts permission imports, so the GLUE jobs
// (shell) are refused with 403 and the BEAN jobs are created.
func TestImportXXLJobRefusedRowsDoNotStop(t *testing.T) {
	isolate(t)
	dsn := startXXLJob3(t)
	api := newRealAPI(t)
	api.admin(t, "", "groups", "create", "xxl-job-executor-sample")
	api.admin(t, "", "groups", "create", "ops-scripts")
	api.admin(t, "op-password-12\n", "users", "create", "op", "--role", "operator", "--group", "xxl-job-executor-sample", "--group", "ops-scripts", "--password-stdin")
	key := decodeJSON[apiv1.CreatedKey](t, must(t, api.as(t, bootstrapToken, "", "keys", "create", "--user", "op", "-o", "json"), "key"))
	res := api.as(t, key.Secret, "", "import", "xxl-job", "--mysql-url", dsn, "--tz", "Asia/Shanghai", "-o", "json")
	if res.code != exitOK {
		t.Fatalf("import as an operator: exit %d, stderr %q", res.code, res.stderr)
	}
	rep := decodeJSON[importReport](t, res)
	for _, r := range rep.Jobs {
		switch r.OldID {
		case 2, 3, 4: // GLUE scripts: the shell handler needs the scripts permission
			if r.Action != actNotImported || !strings.Contains(strings.Join(r.Problems, ";"), "jetjob refused it: api: 403") {
				t.Errorf("job %d: %s %q, want refused by the API on its row", r.OldID, r.Action, r.Problems)
			}
		case 1, 8:
			if r.Action != actCreated {
				t.Errorf("job %d: %s %q, want created after the refused ones", r.OldID, r.Action, r.Problems)
			}
		}
	}
	if rep.Error != "" || rep.Counts[actCreated] != 2 || rep.Counts[actNotImported] != 6 {
		t.Errorf("error %q, counts %v", rep.Error, rep.Counts)
	}
}

// xxl-job 3.x as its published DDL has it (job_desc and group title kept,
// the user's SSO token added: testdata/gen34.sql), loaded with 55 realistic
// jobs in 5 groups, imports: the generation is found by the user token, and
// every row of xxl_job_info is accounted for in the report, created or not
// imported with why.
func TestImportXXLJob3Published(t *testing.T) {
	isolate(t)
	dsn := localmaria.StartTestDB(t, "xxl_job", "../../internal/xxljob/testdata/gen34.sql",
		"../../internal/xxljob/testdata/jobs.sql").DSN("xxl_job")
	api := newRealAPI(t)
	rep := decodeJSON[importReport](t, must(t, api.as(t, bootstrapToken, "", "import", "xxl-job", "--mysql-url", dsn,
		"--tz", "Asia/Shanghai", "--users", "-o", "json"), "import"))
	if rep.Generation != "3.x" || len(rep.Jobs) != 55 {
		t.Fatalf("generation %q, %d job rows: want 3.x and all 55", rep.Generation, len(rep.Jobs))
	}
	for _, r := range rep.Jobs {
		switch {
		case r.Action == actCreated && r.NewID != 0:
		case r.Action == actNotImported && len(r.Problems) > 0 && slices.Contains(xxlUnmappable, r.OldID):
		default:
			t.Errorf("job %d not accounted for: %+v", r.OldID, r)
		}
	}
	if rep.Counts[actCreated] != 44 || rep.Counts[actNotImported] != 11 {
		t.Errorf("counts %v, want 44 created and 11 not imported", rep.Counts)
	}
	if len(rep.Users) != 2 || rep.Users[1].Role != apiv1.RoleOperator || rep.Users[1].Action != actCreated ||
		!strings.Contains(strings.Join(rep.Users[1].Notes, ";"), "operator of billing-executor, report-service") {
		t.Errorf("users %+v", rep.Users)
	}
}

// --history brings xxl_job_log's rows of the last days over as finished
// runs of the imported jobs, marked import, their times read in the
// checked zone: results by handle code, a failed trigger, broadcast parts;
// rows without a result, never triggered, of jobs not imported or older
// than the days asked are counted, not imported. Importing again adds
// nothing, and the daily statistics count the runs.
func TestImportXXLJobHistory(t *testing.T) {
	isolate(t)
	dsn := localmaria.StartTestDB(t, "xxl_job", "../../internal/xxljob/testdata/gen34.sql",
		"../../internal/xxljob/testdata/jobs.sql", "../../internal/xxljob/testdata/history.sql").DSN("xxl_job")
	api := newRealAPI(t)
	c, err := client.New(api.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	imp := func(extra ...string) importReport {
		t.Helper()
		return decodeJSON[importReport](t, must(t, api.as(t, bootstrapToken, "", append([]string{"import", "xxl-job",
			"--mysql-url", dsn, "--tz", "Asia/Shanghai", "--history", "30", "-o", "json"}, extra...)...), "import"))
	}
	dry := imp("--dry-run")
	if h := dry.History; h == nil || h.Read != 8 || h.Imported != 5 {
		t.Fatalf("dry run history: %+v, want 8 rows read and 5 that would be imported", h)
	}
	rep := imp()
	h := rep.History
	if h == nil || h.Read != 8 || h.Imported != 5 || h.Existing != 0 ||
		h.Skipped[skipJobNotImported] != 1 || h.Skipped[xxljob.SkipRunning] != 1 || h.Skipped[xxljob.SkipNotTriggered] != 1 {
		t.Fatalf("history: %+v", h)
	}
	newID := map[int64]int64{}
	for _, r := range rep.Jobs {
		newID[r.OldID] = r.NewID
	}
	runs, err := c.SearchRuns(context.Background(), client.SearchRunsOptions{TriggerTypes: []string{"import"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	byMsg := map[string]apiv1.Run{}
	for _, r := range runs.Runs {
		byMsg[strings.SplitN(r.Message, ":", 2)[0]] = r
	}
	for log, want := range map[string]struct {
		job, shard     int64
		status, detail string
	}{
		"xxl-job log 101":                {1, 0, "SUCCEEDED", "done: 12 rows"},
		"xxl-job log 102 (param x=1)":    {1, 0, "FAILED", "NullPointerException at com.example.Demo.run"},
		"xxl-job log 103":                {2, 0, "SUCCEEDED", ""},
		"xxl-job log 104":                {2, 1, "TIMED_OUT", "job execute timeout"},
		"xxl-job log 105 (param days=7)": {3, 0, "FAILED", "the trigger failed (code 500): 调度失败 msg：address is empty"},
	} {
		r, ok := byMsg[log]
		switch {
		case !ok:
			t.Errorf("%s not imported (runs %+v)", log, runs.Runs)
		case r.JobID != newID[want.job] || r.Status != want.status || int64(r.ShardIndex) != want.shard ||
			!strings.Contains(r.Message, want.detail) || r.FinishedAt == nil || r.FinishedAt.Before(r.ScheduledAt):
			t.Errorf("%s: %+v, want job %d %s shard %d saying %q", log, r, newID[want.job], want.status, want.shard, want.detail)
		}
	}
	if r := byMsg["xxl-job log 104"]; r.ShardTotal != 2 || r.WorkerID != "http://10.0.0.8:9999/" {
		t.Errorf("broadcast part: %+v", r)
	}

	// xxl_job_log_report: the day 20 days back, older than the log rows,
	// comes as totals; the days of imported runs do not (at most 2 of the
	// 3 report days read have runs, depending on the hour the test runs
	// at, their times being read in Asia/Shanghai).
	if h.ReportDays != 3 || h.TotalsWritten+h.TotalsSkipped != 3 || h.TotalsWritten < 1 {
		t.Errorf("report days: %+v", h)
	}
	old, err := c.Stats(context.Background(), client.StatsOptions{From: time.Now().AddDate(0, 0, -25).UTC().Format(time.DateOnly),
		To: time.Now().AddDate(0, 0, -15).UTC().Format(time.DateOnly)})
	if err != nil {
		t.Fatal(err)
	}
	totals := map[string]int64{}
	for _, r := range old.Rows {
		totals[r.Status] += r.Runs
	}
	if totals["SUCCEEDED"] != 5 || totals["FAILED"] != 1 {
		t.Errorf("the daily statistics 15-25 days back: %v, want xxl_job_log_report's 5 succeeded and 1 failed", totals)
	}

	again := imp()
	if h := again.History; h.Imported != 0 || h.Existing != 5 {
		t.Errorf("history imported again: %+v, want 5 already there", h)
	}
	out := api.admin(t, "", "import", "xxl-job", "--mysql-url", dsn, "--tz", "Asia/Shanghai", "--history", "30")
	printed(t, "the table", out, "history: 8 xxl_job_log rows since", "0 runs imported, 5 already there",
		"history: 1 rows not imported: its job is not imported", "days of xxl_job_log_report read")
	st, err := c.Stats(context.Background(), client.StatsOptions{From: time.Now().AddDate(0, 0, -30).UTC().Format(time.DateOnly),
		JobID: newID[1]})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range st.Rows {
		n += int(r.Runs)
	}
	if n != 2 {
		t.Errorf("the daily statistics count %d runs of job 1, want its 2 imported: %+v", n, st.Rows)
	}
}
