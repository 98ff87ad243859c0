package scheduler_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// confirmBulk deletes what is ticked through a list's bulk bar: its
// Delete button, then the confirmation, whose question (want + "?") and
// button (want) say how many, confirmed. prefix is the page's (the runs
// page's "bulk-", the jobs page's "jobs-bulk-").
func (b *tab) confirmBulk(prefix, want string) {
	b.t.Helper()
	submit := prefix + "confirm-submit"
	b.do("delete the ticked", chromedp.Click(chromedp.ID("bulk-delete")), chromedp.WaitVisible(chromedp.ID(submit)))
	if got := b.text("#" + prefix + "count"); got != want+"?" {
		b.t.Fatalf("confirmation %q, want %s?", got, want)
	}
	if got := b.text("#" + submit); got != want {
		b.t.Fatalf("confirm button %q, want %s", got, want)
	}
	b.do("confirm", chromedp.Click(chromedp.ID(submit)), chromedp.WaitVisible(chromedp.ID(prefix+"result")))
}

// The runs page's bulk bar deletes the ticked runs after a confirmation
// that says how many: the ended ones go, the one still running is listed
// refused with why. Then an ended run's own Delete button, confirmed, goes
// back to the runs page with a notice.
func TestConsoleDeletesRuns(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	ctx := t.Context()
	noop := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "noop", Handler: "noop", ScheduleType: "none"})
	forever := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "forever", Handler: "forever", ScheduleType: "none"})
	var ended []int64
	for range 3 {
		run := trigger(t, sys.api, noop.ID, nil)
		waitStatus(t, sys.api, run.ID, "SUCCEEDED", 60*time.Second)
		ended = append(ended, run.ID)
	}
	running := trigger(t, sys.api, forever.ID, nil)
	waitStatus(t, sys.api, running.ID, "RUNNING", 60*time.Second)

	b := signedInTab(t, sys, "/runs?group=g", "ada")
	for _, id := range []int64{ended[0], ended[1], running.ID} {
		b.do(fmt.Sprint("tick run ", id), chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="id"][value="%d"]`, id))))
	}
	b.confirmBulk("bulk-", "Delete 3 runs")
	if done, failed := b.text("#bulk-done"), b.text("#bulk-failed"); done != "2" || failed != "1" {
		t.Fatalf("%s deleted, %s refused; want 2 and 1", done, failed)
	}
	if got := b.text("#bulk-refused"); !strings.Contains(got, fmt.Sprint(running.ID)) || !strings.Contains(got, "kill it first") {
		t.Errorf("refused table %q, want run %d refused: kill it first", got, running.ID)
	}
	gone := func(id int64) bool {
		var apiErr *client.APIError
		_, err := sys.api.GetRun(ctx, id)
		return errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound
	}
	for _, id := range ended[:2] {
		if !gone(id) {
			t.Errorf("run %d still there after its bulk delete", id)
		}
	}
	if gone(running.ID) {
		t.Errorf("running run %d deleted", running.ID)
	}

	b.open(fmt.Sprintf("/runs/%d", ended[2]))
	b.acceptConfirms()
	b.do("delete the run", chromedp.Click(chromedp.ID("delete-submit")), chromedp.WaitVisible(chromedp.CSS(".flash")))
	if loc := b.location(); !strings.Contains(loc, "/runs?notice=run-deleted") {
		t.Errorf("after the delete the browser is at %s, want /runs with the notice", loc)
	}
	if !gone(ended[2]) {
		t.Errorf("run %d still there after its page's Delete", ended[2])
	}
	// The system stops with no run in flight.
	if _, err := sys.api.KillRun(ctx, running.ID); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, sys.api, running.ID, "CANCELLED", 60*time.Second)
}
