package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
)

// The jobs list pages forward and back with the total, filters kept.
func TestConsoleJobsPagesWithTotal(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	var first *apiv1.Job
	for i := range 55 {
		j := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: fmt.Sprintf("paged-%02d", i), Handler: "noop", ScheduleType: "none"})
		if i == 0 {
			first = j
		}
	}
	createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "not-matching", Handler: "noop", ScheduleType: "none"})
	b := signedInTab(t, sys, "/jobs?q=paged-&sort=name", "ada")
	if got := b.text("#jobs-range"); got != "1–50 of 55" {
		t.Fatalf("first page's range %q, want 1–50 of 55", got)
	}
	if n := evalIn[int](b, `document.querySelectorAll("#jobs-prev").length`); n != 0 {
		t.Fatal("the first page has a Previous link")
	}
	b.do("next page", chromedp.Click(chromedp.ID("jobs-next")))
	b.waitText("#jobs-range", "51–55 of 55", 30*time.Second)
	if loc := b.location(); !strings.Contains(loc, "q=paged-") || !strings.Contains(loc, "sort=name") {
		t.Fatalf("the next page %s lost the search or the sort", loc)
	}
	if got := b.text("#jobs-table tbody tr:first-child .name a"); got != "paged-50" {
		t.Fatalf("the second page starts with %q, want paged-50", got)
	}
	b.do("previous page", chromedp.Click(chromedp.ID("jobs-prev")))
	b.waitText("#jobs-range", "1–50 of 55", 30*time.Second)
	if got := b.text("#jobs-table tbody tr:first-child .name a"); got != first.Name {
		t.Fatalf("back on the first page, it starts with %q, want %s", got, first.Name)
	}
	if loc := b.location(); !strings.Contains(loc, "q=paged-") {
		t.Fatalf("the previous page %s lost the search", loc)
	}
}

// Bulk operations on the jobs list: three ticked jobs disabled with a note
// (their rows then say disabled, with the note), and a delete of every job
// on the page (select-all) after a confirmation that says how many.
func TestConsoleBulkJobs(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	ctx := context.Background()
	var js []*apiv1.Job
	for _, name := range []string{"bulk-alpha", "bulk-bravo", "bulk-charlie", "bulk-delta"} {
		js = append(js, createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: name, Handler: "noop", ScheduleType: "cron",
			ScheduleExpr: "0 0 3 * * *", Timezone: "UTC"}))
	}
	var gone []*apiv1.Job
	for _, name := range []string{"old-report-one", "old-report-two"} {
		gone = append(gone, createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: name, Handler: "noop", ScheduleType: "none"}))
	}
	b := signedInTab(t, sys, "/jobs?q=bulk-", "ada")
	for _, j := range js[:3] {
		b.do("tick "+j.Name, chromedp.Click(chromedp.ID(fmt.Sprintf("select-%d", j.ID))))
	}
	if !evalIn[bool](b, `document.getElementById("jobs-select-all").indeterminate`) {
		t.Error("with 3 of 4 jobs ticked, the select-all box does not show mixed")
	}
	shots := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS")
	shoot := func(name string) {
		if shots == "" {
			return
		}
		for _, width := range []int64{1280, 375} {
			b.do("viewport", chromedp.EmulateViewport(width, 900))
			b.screenshot(filepath.Join(shots, fmt.Sprintf("%s-%d.png", name, width)))
		}
		b.do("viewport", chromedp.EmulateViewport(1280, 900))
	}
	if shots != "" {
		if err := os.MkdirAll(shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shoot("jobs-bulk-selected")
	b.do("disable the ticked jobs", chromedp.Click(chromedp.ID("bulk-disable")), chromedp.WaitVisible(chromedp.ID("jobs-bulk-note")))
	if got := b.text("#jobs-bulk-count"); got != "Disable 3 jobs?" {
		t.Fatalf("confirmation %q, want Disable 3 jobs?", got)
	}
	shoot("jobs-bulk-confirm")
	b.do("confirm with a note", chromedp.SendKeys(chromedp.ID("jobs-bulk-note"), "warehouse migration until Monday"),
		chromedp.Click(chromedp.ID("jobs-bulk-confirm-submit")), chromedp.WaitVisible(chromedp.ID("jobs-bulk-result")))
	if got := b.text("#jobs-bulk-done"); got != "3" {
		t.Fatalf("%s jobs done, want 3: %s", got, b.text("#jobs-bulk-items"))
	}
	shoot("jobs-bulk-result")
	b.do("back to the list", chromedp.Click(chromedp.ID("jobs-bulk-back")), chromedp.WaitVisible(chromedp.ID("jobs-table")))
	for i, j := range js {
		row := b.text(fmt.Sprintf("#job-%d", j.ID))
		disabled := i < 3
		if strings.Contains(row, "disabled") != disabled || strings.Contains(row, "warehouse migration until Monday") != disabled {
			t.Errorf("row of %s (disabled: %t) reads %q", j.Name, disabled, row)
		}
		got, err := sys.api.GetJob(ctx, j.ID)
		if err != nil || got.Enabled == disabled || (disabled && got.PausedNote != "warehouse migration until Monday") {
			t.Errorf("job %s after the bulk disable: %+v, %v", j.Name, got, err)
		}
	}

	// Delete every job on a page: select-all, then a confirmation naming
	// how many.
	b.open("/jobs?q=old-report")
	b.do("select all", chromedp.Click(chromedp.ID("jobs-select-all")))
	b.confirmBulk("jobs-bulk-", "Delete 2 jobs")
	if got := b.text("#jobs-bulk-done"); got != "2" {
		t.Fatalf("%s jobs deleted, want 2", got)
	}
	for _, j := range gone {
		var apiErr *client.APIError
		if _, err := sys.api.GetJob(ctx, j.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
			t.Errorf("job %s after the bulk delete: %v, want 404", j.Name, err)
		}
	}
	for _, j := range js {
		if _, err := sys.api.GetJob(ctx, j.ID); err != nil {
			t.Errorf("job %s, not on the deleted page: %v", j.Name, err)
		}
	}
}

// The job form's handler field suggests what the group's live workers
// registered (through the worker's real heartbeat into the scheduler's
// registry), and follows a change of group.
func TestConsoleJobFormSuggestsHandlers(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, func(w *worker.Worker) {
		registerConsoleHandlers(w, nil)
		w.Handle("billing.export_invoices", func(context.Context, *worker.Job) error { return nil })
	})
	consoleUsers(t, sys)
	ctx := context.Background()
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "idle"}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "the worker's handlers in the registry", func() bool {
		wl, err := sys.api.ListWorkers(ctx, "g")
		return err == nil && len(wl.Workers) > 0 && strings.Contains(strings.Join(wl.Workers[0].Handlers, ","), "billing.export_invoices")
	})
	b := signedInTab(t, sys, "/jobs/new?group=idle", "ada")
	suggested := `(() => { const l = document.getElementById("f-handler").list; return l ? [...l.options].map((o) => o.value) : []; })()`
	if got := evalIn[[]string](b, suggested); len(got) != 0 {
		t.Fatalf("group idle (no worker) suggests %q", got)
	}
	if !evalIn[bool](b, `!document.getElementById("form-advanced").open`) {
		t.Error("the advanced settings are open on a new form")
	}
	b.do("choose group g", chromedp.SetValue(chromedp.ID("f-group"), "g"))
	evalIn[bool](b, `document.getElementById("f-group").dispatchEvent(new Event("change", {bubbles: true}))`)
	got := evalIn[[]string](b, suggested)
	if !strings.Contains(strings.Join(got, ","), "billing.export_invoices") || !strings.Contains(strings.Join(got, ","), "noop") {
		t.Fatalf("group g suggests %q, want its worker's handlers", got)
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int64{1280, 375} {
			b.do("viewport", chromedp.EmulateViewport(width, 900))
			b.screenshot(filepath.Join(dir, fmt.Sprintf("job-form-%d.png", width)))
		}
	}
}
