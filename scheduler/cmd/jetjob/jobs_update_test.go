package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// decodeJSON parses a command's -o json output.
func decodeJSON[T any](t *testing.T, res result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		t.Fatalf("-o json printed %q: %v (stderr %q)", res.stdout, err, res.stderr)
	}
	return v
}

// "jobs update" changes only the fields its flags name, keeps the job's
// enabled state unless --disabled is given, and sends the version it read.
func TestJobsUpdate(t *testing.T) {
	r := isolatedAPI(t, "demo")
	created := adminJSON[apiv1.Job](t, r, "jobs", "create",
		"--group", "demo", "--name", "hello", "--handler", "hello", "--every", "30s",
		"--description", "first", "--params", "p1", "--max-retries", "2", "--timeout", "5m")
	id := fmt.Sprint(created.ID)

	upd := adminJSON[apiv1.Job](t, r, "jobs", "update", id, "--every", "1m")
	if upd.ScheduleType != "fix_rate" || upd.ScheduleExpr != "1m" || upd.Version != created.Version+1 {
		t.Fatalf("after --every 1m: schedule %s %s, version %d (was %d)", upd.ScheduleType, upd.ScheduleExpr, upd.Version, created.Version)
	}
	// Every field no flag named is as it was.
	want := created
	want.ScheduleExpr, want.Version, want.UpdatedAt, want.NextFireAt = upd.ScheduleExpr, upd.Version, upd.UpdatedAt, upd.NextFireAt
	if a, b := jsonOf(t, want), jsonOf(t, upd); a != b {
		t.Fatalf("update changed more than the schedule:\nbefore %s\nafter  %s", a, b)
	}

	// --disabled disables; a later update without it keeps the job disabled.
	upd = adminJSON[apiv1.Job](t, r, "jobs", "update", id, "--disabled")
	if upd.Enabled || upd.NextFireAt != nil {
		t.Fatalf("after --disabled: enabled %v, next fire %v", upd.Enabled, upd.NextFireAt)
	}
	upd = adminJSON[apiv1.Job](t, r, "jobs", "update", id,
		"--description", "second", "--params", "")
	if upd.Enabled || upd.Description != "second" || upd.Params != "" || upd.MaxRetries != 2 {
		t.Fatalf("after --description: %+v", upd)
	}
	// --no-schedule leaves a job that only runs when triggered.
	upd = adminJSON[apiv1.Job](t, r, "jobs", "update", id,
		"--no-schedule", "--disabled=false")
	if upd.ScheduleType != "none" || upd.ScheduleExpr != "" || !upd.Enabled || upd.Version != created.Version+4 {
		t.Fatalf("after --no-schedule: %+v", upd)
	}

	// The table form shows the job.
	res := must(t, r.as(t, bootstrapToken, "", "jobs", "update", id, "--cron", "0 0 3 * * *", "--tz", "Europe/Paris"), "update --cron")
	printed(t, "update", res.stdout, "Schedule:       cron 0 0 3 * * * (Europe/Paris)\n", "Version:        6\n", "Description:    second\n")
}

// A change based on a version that is no longer the job's is refused by
// the server (409) and reported as such; nothing is written.
func TestJobsUpdateStaleVersion(t *testing.T) {
	r := isolatedAPI(t, "demo")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello", "--every", "30s")
	r.admin(t, "", "jobs", "update", "1", "--description", "someone else's change") // version 2
	r.admin(t, "", "jobs", "update", "1", "--version", "2", "--max-retries", "1")   // based on 2: fine, now 3

	res := r.as(t, bootstrapToken, "", "jobs", "update", "1", "--version", "2", "--description", "mine")
	want := "Error: job 1 was changed by someone else since you read it (version 2, now 3): read it again and retry\n"
	if res.code != exitError || res.stdout != "" || res.stderr != want {
		t.Fatalf("stale update: exit %d, stdout %q, stderr %q; want exit 1 and %q", res.code, res.stdout, res.stderr, want)
	}
	job := adminJSON[apiv1.Job](t, r, "jobs", "get", "1")
	if job.Version != 3 || job.Description != "someone else's change" || job.MaxRetries != 1 {
		t.Fatalf("the stale update wrote: %+v", job)
	}
}

func TestJobsUpdateUsage(t *testing.T) {
	r := isolatedAPI(t, "demo")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello")
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"1"}, "nothing to change"},
		{[]string{"1", "--version", "3"}, "nothing to change"},
		{[]string{"1", "--version", "0", "--every", "1m"}, "--version 0"},
		{[]string{"x", "--every", "1m"}, `invalid job id "x"`},
		{[]string{"--every", "1m"}, "missing argument ID"},
		{[]string{"1", "--every", "1m", "--no-schedule"}, "only one schedule flag may be given, got --every and --no-schedule"},
		{[]string{"1", "--group", " "}, "--group: must not be empty"},
		{[]string{"1", "--every", "soon"}, `--every "soon"`},
		{[]string{"1", "--tz", "Mars/Olympus"}, "unknown time zone"},
		{[]string{"1", "--params", "a", "--params-file", "f"}, "not both"},
	}
	before := r.reqs.Load()
	for _, b := range bad {
		res := r.as(t, bootstrapToken, "", append([]string{"jobs", "update"}, b.args...)...)
		if res.code != exitUsage || res.stdout != "" || !strings.Contains(res.stderr, b.want) {
			t.Errorf("jobs update %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", b.args, res.code, res.stdout, res.stderr, b.want)
		}
	}
	if n := r.reqs.Load() - before; n != 0 {
		t.Errorf("refused commands sent %d requests", n)
	}
	if res := r.as(t, bootstrapToken, "", "jobs", "update", "99", "--every", "1m"); res.code != exitError || !strings.Contains(res.stderr, "404") {
		t.Errorf("update of a missing job: exit %d, stderr %q", res.code, res.stderr)
	}
}

// "jobs history" lists the revisions newest first with who made them, the
// version each produced and the fields it changed; it pages like audit.
func TestJobsHistory(t *testing.T) {
	r := isolatedAPI(t, "demo")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello", "--every", "30s")
	r.admin(t, "", "jobs", "update", "1", "--every", "1m", "--description", "slower")
	r.admin(t, "", "jobs", "disable", "1")
	r.admin(t, "", "jobs", "update", "1", "--max-retries", "3")
	r.admin(t, strings.Repeat("x", 50), "jobs", "update", "1", "--params-file", "-")

	out := r.admin(t, "", "jobs", "history", "1")
	rows := tableRows(out)
	want := [][]string{
		{"ACTOR", "ACTION", "VERSION", "CHANGES"},
		{"bootstrap", "job.update", "5", "params"},
		{"bootstrap", "job.update", "4", "max_retries: 0 → 3"},
		{"bootstrap", "job.disable", "3", "enabled: true → false"},
		{"bootstrap", "job.update", "2", `description: - → "slower"; schedule_expr: "30s" → "1m"`},
		{"bootstrap", "job.create", "1", "created"},
	}
	if len(rows) != len(want) {
		t.Fatalf("history:\n%s", out)
	}
	for i, w := range want {
		got := rows[i][1:] // past TIME
		if strings.Join(got, " | ") != strings.Join(w, " | ") {
			t.Errorf("row %d = %q, want %q", i, got, w)
		}
	}

	// Two per page: the cursor printed reads the rest.
	page := must(t, r.as(t, bootstrapToken, "", "jobs", "history", "1", "--limit", "2"), "page 1")
	if n := len(tableRows(page.stdout)); n != 3 {
		t.Fatalf("page 1 has %d lines:\n%s", n, page.stdout)
	}
	_, cursor, ok := strings.Cut(strings.TrimSpace(page.stderr), "pass --after ")
	if !ok {
		t.Fatalf("page 1 announced no next page: %q", page.stderr)
	}
	cursor = strings.Fields(cursor)[0]
	rest := adminJSON[apiv1.AuditList](t, r, "jobs", "history", "1", "--after", cursor)
	if len(rest.Entries) != 3 || rest.Entries[0].Action != "job.disable" || rest.Entries[2].Action != "job.create" || rest.Next != 0 {
		t.Fatalf("page 2: %+v", rest)
	}
	if res := r.as(t, bootstrapToken, "", "jobs", "history", "1", "--after", "x"); res.code != exitUsage {
		t.Errorf("--after x: exit %d, stderr %q", res.code, res.stderr)
	}
}

// tableRows splits a table into rows of cells (columns are separated by
// two or more spaces).
func tableRows(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var cells []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		rows = append(rows, cells)
	}
	return rows
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A disabled job fires no more: no command shows it a next fire, though
// the scheduler keeps its place for the catch-up of an enable.
func TestDisabledJobShowsNoNextFire(t *testing.T) {
	r := isolatedAPI(t, "demo")
	r.admin(t, "", "jobs", "create", "--group", "demo", "--name", "hello", "--handler", "hello", "--every", "30s")
	if out := r.admin(t, "", "jobs", "disable", "1", "--note", "maintenance"); out != "job 1 (hello) disabled\n" {
		t.Errorf("jobs disable printed %q, want no next fire", out)
	}
	if rows := tableRows(r.admin(t, "", "jobs", "list")); len(rows) != 2 || rows[1][len(rows[1])-1] != "-" {
		t.Errorf("jobs list shows the disabled job a next fire: %q", rows)
	}
	printed(t, "get", r.admin(t, "", "jobs", "get", "1"), "Next fire:      -\n")
	printed(t, "next", r.admin(t, "", "jobs", "next", "1"), "job 1 is disabled: no upcoming fire until it is enabled")
	if next := adminJSON[apiv1.NextFires](t, r, "jobs", "next", "1"); len(next.Times) != 0 {
		t.Errorf("GET .../next of a disabled job: %v, want none", next.Times)
	}
	// Enabled again, it has its fires back.
	if out := r.admin(t, "", "jobs", "enable", "1"); !strings.Contains(out, "enabled; next fire: 20") {
		t.Errorf("jobs enable printed %q, want its next fire", out)
	}
}
