package scheduler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// An admin creates a secret on the console's secrets page, rotates its
// value and deletes it, in Chromium: the list names it with its version,
// and no value typed in is ever on a page.
func TestConsoleSecrets(t *testing.T) {
	t.Parallel()
	sys := startConsole(t, withKeyring(t))
	b := signedInTab(t, sys, "/secrets", "ada")
	const first, second = "first-VALUE-5d1", "second-VALUE-8c3"
	b.do("create a secret",
		chromedp.WaitVisible(chromedp.ID("new-secret-form")),
		chromedp.SetValue(chromedp.ID("new-secret-group"), "g"),
		chromedp.SendKeys(chromedp.ID("new-secret-name"), "warehouse-password"),
		chromedp.SendKeys(chromedp.ID("new-secret-value"), first),
		chromedp.Submit(chromedp.ID("new-secret-form")),
		chromedp.WaitVisible(chromedp.ID("secrets-table")),
	)
	list, err := sys.api.ListSecrets(t.Context(), "g")
	if err != nil || len(list) != 1 || list[0].Name != "warehouse-password" {
		t.Fatalf("secrets of g after the form: %+v, %v", list, err)
	}
	id := list[0].ID
	if got := b.text(fmt.Sprintf("#secret-%d", id)); !strings.Contains(got, "warehouse-password") || !strings.Contains(got, "by ada") {
		t.Fatalf("the secret's row: %q", got)
	}
	html := evalIn[string](b, "document.documentElement.outerHTML")
	if strings.Contains(html, first) {
		t.Fatal("the page holds the value just typed in")
	}
	b.do("rotate it",
		chromedp.SendKeys(chromedp.ID(fmt.Sprintf("rotate-value-%d", id)), second),
		chromedp.Submit(chromedp.ID(fmt.Sprintf("rotate-%d", id))),
	)
	b.waitText(".flash", "Secret rotated", 30*time.Second)
	if got, err := sys.api.GetSecret(t.Context(), id); err != nil || got.Version != 2 {
		t.Fatalf("after the rotation: %+v, %v; want version 2", got, err)
	}
	if html := evalIn[string](b, "document.documentElement.outerHTML"); strings.Contains(html, first) || strings.Contains(html, second) {
		t.Fatal("the page holds a value")
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		for _, width := range []int64{1280, 375} {
			b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
			b.open("/secrets")
			b.screenshot(filepath.Join(dir, fmt.Sprintf("console-secrets-%d.png", width)))
		}
		b.do("a 1280 px viewport", chromedp.EmulateViewport(1280, 900))
		b.open("/secrets")
	}
	b.acceptConfirms()
	b.do("delete it",
		chromedp.Submit(chromedp.ID(fmt.Sprintf("delete-%d", id))),
		chromedp.WaitVisible(chromedp.ID("no-secrets")),
	)
	if list, err := sys.api.ListSecrets(t.Context(), "g"); err != nil || len(list) != 0 {
		t.Fatalf("secrets of g after the delete: %+v, %v", list, err)
	}
}

// The job form's preview follows the calendars typed in: the fires a
// calendar excludes are listed among the others, struck through, saying
// which calendar; an include calendar gives them back.
func TestConsoleJobFormPreviewMarksCalendars(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	for _, cal := range []apiv1.Calendar{{Name: "weekend", Weekdays: []string{"SAT", "SUN"}},
		{Name: "every-day", Weekdays: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}} {
		if _, err := sys.api.PutCalendar(t.Context(), cal.Name, cal); err != nil {
			t.Fatal(err)
		}
	}
	b := signedInTab(t, sys, "/jobs/new", "ada")
	b.do("a daily schedule excluding weekends",
		chromedp.WaitVisible(chromedp.ID("job-form")),
		chromedp.SetValue(chromedp.ID("f-schedule_type"), "cron"),
		chromedp.Clear(chromedp.ID("f-schedule_expr")),
		chromedp.SendKeys(chromedp.ID("f-schedule_expr"), "0 0 9 * * *"),
		// The calendars are among the advanced settings, folded.
		chromedp.Click(chromedp.CSS("#form-advanced > summary")),
		chromedp.WaitVisible(chromedp.ID("f-exclude_calendars")),
		chromedp.SendKeys(chromedp.ID("f-exclude_calendars"), "weekend"),
	)
	b.waitFor("weekend fires struck through", `document.querySelectorAll("#preview-table tr.excluded s").length >= 2 &&
		document.querySelectorAll("#preview-table tbody tr:not(.excluded)").length === 10`, 30*time.Second)
	if got := b.text("#preview-table tr.excluded"); !strings.Contains(got, "excluded by calendar weekend") {
		t.Fatalf("an excluded fire's row says %q", got)
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		b.screenshot(filepath.Join(dir, "console-job-form-calendars.png"))
	}
	b.do("give every day back", chromedp.SendKeys(chromedp.ID("f-include_calendars"), "every-day"))
	b.waitFor("no fire excluded", `document.querySelectorAll("#preview-table tr").length === 11 &&
		document.querySelectorAll("#preview-table tr.excluded").length === 0`, 30*time.Second)
}
