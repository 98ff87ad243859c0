package api_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// A bulk action picks by label selector among the jobs the caller may
// read, changes each job the caller may operate (one audit entry per
// job), reports the others refused, and refuses the whole request when
// the selector picks more jobs than max. The listing filters by the same
// selector, and a job's labels and owner come back as written.
func TestBulkBySelector(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	label := func(j store.Job, l map[string]string) store.Job {
		j.Labels, j.Owner = l, "team-x@example.com"
		out, err := e.st.UpdateJob(ctx, store.System, j)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	prodX := map[string]string{"env": "prod", "team": "x"}
	a1, a2 := label(e.job("a", "echo"), prodX), label(e.job("a", "echo"), prodX)
	label(e.job("a", "echo"), map[string]string{"env": "dev", "team": "x"})
	b1 := label(e.job("b", "echo"), prodX)

	code, body := e.do("viewerA", "GET", "/api/v1/jobs?labels=env=prod,team=x", nil)
	var list apiv1.JobList
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].ID != a1.ID || list.Jobs[0].Owner != "team-x@example.com" || list.Jobs[0].Labels["team"] != "x" {
		t.Errorf("viewer of a listed %+v, want jobs %d and %d with their labels and owner", list.Jobs, a1.ID, a2.ID)
	}

	bulk := func(who string, req apiv1.BulkRequest) (int, apiv1.BulkResult, string) {
		code, body := e.do(who, "POST", "/api/v1/jobs/bulk", req)
		var res apiv1.BulkResult
		_ = json.Unmarshal(body, &res)
		return code, res, string(body)
	}
	disable := apiv1.BulkRequest{Selector: "env=prod,team=x", Action: "disable", Note: "freeze"}
	if code, res, body := bulk("viewerA", disable); code != 200 || res.Matched != 2 || res.Done != 0 ||
		!strings.Contains(res.Items[0].Error, "operator") {
		t.Errorf("viewer's bulk disable: %d %s, want 2 picked, both refused for want of operator", code, body)
	}
	if code, res, body := bulk("operator", disable); code != 200 || res.Matched != 2 || res.Done != 2 {
		t.Errorf("operator of a's bulk disable: %d %s, want a's 2 jobs done (b's never picked)", code, body)
	}
	for _, id := range []int64{a1.ID, a2.ID} {
		j, _ := e.st.GetJob(ctx, id)
		if j.Enabled || j.PausedNote != "freeze" {
			t.Errorf("job %d after the bulk disable: enabled %t note %q", id, j.Enabled, j.PausedNote)
		}
	}
	if j, _ := e.st.GetJob(ctx, b1.ID); !j.Enabled {
		t.Errorf("group b's job %d was disabled by an operator of a", b1.ID)
	}
	var audits int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'job.disable' AND actor = 'operator'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 2 {
		t.Errorf("%d job.disable audit entries, want one per job (2)", audits)
	}
	if code, res, body := bulk("admin", apiv1.BulkRequest{Selector: "team=x", Action: "trigger"}); code != 200 || res.Done != 4 || res.Items[0].RunID == 0 {
		t.Errorf("admin's bulk trigger: %d %s, want 4 runs", code, body)
	}
	for _, bad := range []apiv1.BulkRequest{
		{Selector: "team=x", Action: "trigger", Max: 3},
		{Selector: "", Action: "enable"},
		{Selector: "team=x", Action: "explode"},
		{Selector: "team=x", IDs: []int64{a1.ID}, Action: "enable"},
		{IDs: []int64{a1.ID, a2.ID}, Action: "enable", Max: 1},
		{Selector: "team", Action: "enable"},
	} {
		if code, _, body := bulk("admin", bad); code != 400 {
			t.Errorf("bulk %+v: %d %s, want 400", bad, code, body)
		}
	}
}

// A bulk action on jobs named by id: each job the caller may operate is
// done, one they may only read is refused, one they may not read (or that
// does not exist) is "no such job" alike; delete as DELETE /jobs/{id},
// including its scripts rule for command-running jobs.
func TestBulkByIDs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a1, a2, sh := e.job("a", "echo"), e.job("a", "echo"), e.job("a", "shell")
	b1 := e.job("b", "echo")
	bulk := func(who string, req apiv1.BulkRequest) apiv1.BulkResult {
		t.Helper()
		code, body := e.do(who, "POST", "/api/v1/jobs/bulk", req)
		var res apiv1.BulkResult
		if err := json.Unmarshal(body, &res); code != 200 || err != nil {
			t.Fatalf("bulk %+v as %s: %d %s", req, who, code, body)
		}
		return res
	}
	res := bulk("operator", apiv1.BulkRequest{IDs: []int64{a1.ID, a2.ID, b1.ID, 999999, a1.ID}, Action: "disable", Note: "freeze"})
	if res.Matched != 2 || res.Done != 2 || len(res.Items) != 4 || res.Items[2].Error != "no such job" || res.Items[3].Error != "no such job" {
		t.Errorf("operator of a disabling a1, a2, b1, a missing job: %+v; want 2 done, b1 and the missing one \"no such job\"", res)
	}
	for _, id := range []int64{a1.ID, a2.ID} {
		if j, _ := e.st.GetJob(ctx, id); j.Enabled || j.PausedNote != "freeze" {
			t.Errorf("job %d after the bulk disable: enabled %t note %q", id, j.Enabled, j.PausedNote)
		}
	}
	if res := bulk("viewerA", apiv1.BulkRequest{IDs: []int64{a1.ID}, Action: "enable"}); res.Done != 0 || !strings.Contains(res.Items[0].Error, "operator") {
		t.Errorf("viewer's bulk enable: %+v, want refused for want of operator", res)
	}
	res = bulk("opNoScripts", apiv1.BulkRequest{IDs: []int64{a2.ID, sh.ID}, Action: "delete"})
	if res.Done != 1 || !res.Items[0].OK || res.Items[1].OK || !strings.Contains(res.Items[1].Error, "scripts") {
		t.Errorf("operator without scripts deleting a2 and a shell job: %+v, want a2 deleted and the shell job refused for scripts", res)
	}
	if _, err := e.st.GetJob(ctx, a2.ID); err == nil {
		t.Errorf("job %d still there after its bulk delete", a2.ID)
	}
	if _, err := e.st.GetJob(ctx, sh.ID); err != nil {
		t.Errorf("shell job %d gone after a refused delete: %v", sh.ID, err)
	}
	var audits int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'job.delete' AND actor = 'opNoScripts'`).Scan(&audits); err != nil {
		t.Fatal(err)
	}
	if audits != 1 {
		t.Errorf("%d job.delete audit entries, want 1", audits)
	}
}

// The job list pages forward with cursor and back with before, and with
// total=true says how many jobs match and how many precede the page.
func TestJobListPrevAndTotal(t *testing.T) {
	e := newEnv(t)
	if _, err := e.st.CreateGroup(context.Background(), store.System, store.Group{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	var js []store.Job
	for range 5 {
		js = append(js, e.job("c", "echo"))
	}
	slices.SortFunc(js, func(a, b store.Job) int { return strings.Compare(a.Name, b.Name) })
	var ids []int64
	for _, j := range js {
		ids = append(ids, j.ID)
	}
	list := func(q string) apiv1.JobList {
		t.Helper()
		code, body := e.do("admin", "GET", "/api/v1/jobs?group=c&limit=2&total=true&"+q, nil)
		var l apiv1.JobList
		if err := json.Unmarshal(body, &l); code != 200 || err != nil {
			t.Fatalf("list %s: %d %s", q, code, body)
		}
		return l
	}
	got := func(l apiv1.JobList) (out []int64) {
		for _, j := range l.Jobs {
			out = append(out, j.ID)
		}
		return out
	}
	for _, order := range []string{"asc", "desc"} {
		want := slices.Clone(ids)
		if order == "desc" {
			slices.Reverse(want)
		}
		p1 := list("sort=name&order=" + order)
		if p1.Prev != "" || *p1.Total != 5 || p1.Offset != 0 || !slices.Equal(got(p1), want[:2]) {
			t.Fatalf("%s page 1: %v prev %q total %d offset %d; want %v, no prev, 5, 0", order, got(p1), p1.Prev, *p1.Total, p1.Offset, want[:2])
		}
		p2 := list("sort=name&order=" + order + "&cursor=" + p1.Cursor)
		p3 := list("sort=name&order=" + order + "&cursor=" + p2.Cursor)
		if !slices.Equal(got(p3), want[4:]) || p3.Offset != 4 || p3.Cursor != "" || p3.Prev == "" {
			t.Fatalf("%s page 3: %v offset %d cursor %q prev %q; want %v at 4, a prev and no cursor", order, got(p3), p3.Offset, p3.Cursor, p3.Prev, want[4:])
		}
		back := list("sort=name&order=" + order + "&before=" + p3.Prev)
		if !slices.Equal(got(back), want[2:4]) || back.Offset != 2 || back.Prev == "" || back.Cursor == "" {
			t.Errorf("%s back from page 3: %v offset %d; want %v at 2 with prev and cursor", order, got(back), back.Offset, want[2:4])
		}
		first := list("sort=name&order=" + order + "&before=" + back.Prev)
		if !slices.Equal(got(first), want[:2]) || first.Prev != "" || first.Offset != 0 {
			t.Errorf("%s back to page 1: %v prev %q offset %d; want %v, no prev, 0", order, got(first), first.Prev, first.Offset, want[:2])
		}
	}
	if code, body := e.do("viewerA", "GET", "/api/v1/jobs?total=maybe", nil); code != 400 {
		t.Errorf("total=maybe: %d %s, want 400", code, body)
	}
}
