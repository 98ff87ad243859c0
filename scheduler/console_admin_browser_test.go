package scheduler_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// The administration pages (users, API keys, audit, backfills, statistics)
// in real Chromium: an admin makes an API key in the browser, sees its
// secret once and revokes it; every page holds long, realistic content at
// 1280 and 375 px without widening the page.
func TestConsoleAdminPages(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sys := startConsole(t)
	if _, err := sys.api.CreateUser(ctx, apiv1.UserCreate{Name: "settlement.reconciliation@example.com",
		DisplayName: "Settlement Reconciliation Service Account (treasury operations, Frankfurt)", Password: consolePassword,
		Grants: []apiv1.Grant{{Group: "g", Role: "operator", Scripts: true}}}); err != nil {
		t.Fatal(err)
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "nightly-settlement-reconciliation-for-the-european-card-acquiring-ledger",
		Handler: "chatty", ScheduleType: "cron", ScheduleExpr: "0 0 3 * * *", Timezone: "UTC"})
	for range 3 {
		trigger(t, sys.api, job.ID, nil)
	}
	testwait.Eventually(t, 60*time.Second, "three SUCCEEDED runs", func() bool {
		rs, err := sys.api.SearchRuns(ctx, client.SearchRunsOptions{JobID: job.ID, Statuses: []string{"SUCCEEDED"}})
		return err == nil && len(rs.Runs) >= 3
	})
	from := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -20)
	if _, err := sys.api.Backfill(ctx, job.ID, apiv1.BackfillRequest{From: from, To: from.AddDate(0, 0, 10)}); err != nil {
		t.Fatal(err)
	}

	b := signedInTab(t, sys, "/keys", "ada")
	b.do("create a key", chromedp.SendKeys(chromedp.ID("new-key-name"), "grafana dashboards for the treasury team"),
		chromedp.Click(chromedp.CSS("#new-key-form button")), chromedp.WaitVisible(chromedp.ID("key-secret")))
	secret := strings.TrimSpace(b.text("#key-secret"))
	withKey, err := client.New(sys.url, secret)
	if err != nil {
		t.Fatal(err)
	}
	if me, err := withKey.Me(ctx); err != nil || me.Name != "ada" {
		t.Fatalf("the key made in the browser: %+v, %v", me, err)
	}
	b.open("/keys")
	if n := evalIn[int](b, `document.querySelectorAll("#key-secret").length`); n != 0 || strings.Contains(b.text("main"), secret) {
		t.Fatal("the key's secret is shown again on the list")
	}
	b.do("revoke the key", chromedp.Click(chromedp.CSS("#keys-table button.danger")), chromedp.WaitVisible(chromedp.CSS(".flash")))
	var ae *client.APIError
	if _, err := withKey.Me(ctx); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("the revoked key: %v, want 401", err)
	}

	pages := []string{"/users", "/users/settlement.reconciliation@example.com", "/keys", "/audit", "/backfills", "/stats"}
	dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS")
	for _, width := range []int64{1280, 375} {
		b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
		for _, path := range pages {
			b.open(path)
			if dir != "" && width == 375 && (path == "/stats" || path == "/users") {
				b.screenshot(filepath.Join(dir, "console"+strings.ReplaceAll(path, "/", "-")+"-375.png"))
			}
			if w, inner := evalIn[int](b, "document.documentElement.scrollWidth"), evalIn[int](b, "window.innerWidth"); w > inner {
				t.Errorf("%s at %d px: the page is %d px wide; wider than the screen: %q", path, width, w, overflowing(b))
			}
		}
	}
	b.do("a 1280 px viewport", chromedp.EmulateViewport(1280, 900))
	b.open("/stats")
	if n := evalIn[int](b, `document.querySelectorAll("#stats-runs rect, #stats-durations polyline").length`); n < 2 {
		t.Errorf("the statistics page draws %d bars and lines", n)
	}
	b.open("/backfills")
	if !strings.Contains(b.text("#backfills-table"), job.Name) {
		t.Errorf("the backfills page does not name the job: %q", b.text("#backfills-table"))
	}
	if dir != "" {
		for name, path := range map[string]string{"console-stats.png": "/stats", "console-users.png": "/users", "console-audit.png": "/audit"} {
			b.open(path)
			b.screenshot(filepath.Join(dir, name))
		}
	}
}

// overflowing names the elements and texts that reach past the viewport's
// right edge outside a box that scrolls (the first few), for a failure
// message: a long word overflows its box without widening it.
func overflowing(b *tab) []string {
	return evalIn[[]string](b, `(() => {
		const out = [];
		const inBox = (n) => n.parentElement && n.parentElement.closest(".table-wrap");
		for (const e of document.querySelectorAll("body *")) {
			if (!inBox(e) && e.getBoundingClientRect().right > window.innerWidth + 1) {
				out.push(e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + " " + Math.round(e.getBoundingClientRect().right) + "px");
			}
		}
		const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n = w.nextNode(); n; n = w.nextNode()) {
			if (inBox(n) || !n.textContent.trim()) { continue; }
			const r = document.createRange(); r.selectNodeContents(n);
			const right = r.getBoundingClientRect().right;
			if (right > window.innerWidth + 1) { out.push("text " + Math.round(right) + "px " + n.textContent.trim().slice(0, 40)); }
		}
		return out.slice(0, 8);
	})()`)
}
