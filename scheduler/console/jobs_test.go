package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/store"
)

func TestJobsListEmptyAndFull(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	v := e.browser().login("viewer")

	// Empty: an operator is invited to create one, a viewer is not.
	p := op.get("/jobs")
	if p.Code != http.StatusOK {
		t.Fatalf("jobs page: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="no-jobs"`, "No jobs yet — ", `href="/jobs/new"`, `id="new-job"`)
	p = v.get("/jobs")
	mustContain(t, p, `id="no-jobs"`, "No jobs yet in the groups you may read.")
	mustLack(t, p, `id="new-job"`, "create one")

	// Full: the row with its link, group, handler, schedule and state.
	ja := e.job("a", "echo")
	jb := e.job("b", "report")
	p = op.get("/jobs")
	mustContain(t, p, `id="jobs-table"`, fmt.Sprintf(`id="job-%d"`, ja.ID), fmt.Sprintf(`<a href="/jobs/%d">%s</a>`, ja.ID, ja.Name),
		"<td>echo</td>", `<span class="badge st-ok">enabled</span>`,
		fmt.Sprintf(`id="disable-%d"`, ja.ID), fmt.Sprintf(`id="trigger-%d"`, ja.ID))
	mustLack(t, p, `id="no-jobs"`, jb.Name)

	// A viewer sees the job, no row actions and no New button.
	p = v.get("/jobs")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, ja.ID))
	mustLack(t, p, `id="new-job"`, fmt.Sprintf(`id="disable-%d"`, ja.ID), fmt.Sprintf(`id="trigger-%d"`, ja.ID))

	// A viewer of b sees none of a's jobs.
	p = e.browser().login("viewerB").get("/jobs")
	mustContain(t, p, fmt.Sprintf(`id="job-%d"`, jb.ID))
	mustLack(t, p, ja.Name, fmt.Sprintf(`id="job-%d"`, ja.ID))
}

func TestJobPageShowsEverything(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	child := e.job("a", "echo")
	j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "nightly-report", Handler: "report",
		ScheduleType: "cron", ScheduleExpr: "0 30 2 * * *", Timezone: "Asia/Tokyo", MisfirePolicy: "skip",
		RouteStrategy: "any", BlockStrategy: "serial", Enabled: true, ChildJobIDs: []int64{child.ID}})
	if err != nil {
		t.Fatal(err)
	}
	admin := e.browser().login("admin")
	p := admin.get(fmt.Sprintf("/jobs/%d", j.ID))
	if p.Code != http.StatusOK {
		t.Fatalf("job page: %d\n%s", p.Code, p.Body)
	}
	// 02:30 in Tokyo is 17:30 UTC the day before.
	mustContain(t, p, `id="job-title"`, "nightly-report", `id="preview-table"`, "02:30:00 JST", "17:30:00</td>",
		`id="no-runs"`, `id="job-history"`, "job.create", `id="job-audit"`, `id="job-edit"`,
		fmt.Sprintf(`<a href="/jobs/%d">%s (#%d)</a>`, child.ID, child.Name, child.ID))
	_ = strings.Contains
	_ = url.Values{}
}
