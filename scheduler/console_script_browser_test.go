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

// A script job's script page, as a user works it in real Chromium: the
// source with line numbers, edited and saved with a remark, the new
// version in the list, the diff of the two, and a rollback; the page fits
// 1280 and 375 px. A viewer reads the source without the editor.
func TestConsoleScriptEditor(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	one := "#!/bin/bash\necho one\n"
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "nightly-script", Handler: "script", ScriptLanguage: "bash",
		Script: &one, ScheduleType: "none"})
	path := fmt.Sprintf("/jobs/%d/script", job.ID)
	b := signedInTab(t, sys, fmt.Sprintf("/jobs/%d", job.ID), "ada")
	b.do("open the script from the job's page", chromedp.Click(chromedp.ID("job-script")), chromedp.WaitVisible(chromedp.ID("script-source")))
	if got := evalIn[string](b, `document.getElementById("script-source").value`); got != one {
		t.Fatalf("the editor holds %q, want %q", got, one)
	}
	// Line numbers: one per line of the source (and one to type on).
	if got := strings.Fields(b.text("#script-gutter")); strings.Join(got, " ") != "1 2 3" {
		t.Fatalf("the gutter reads %q", got)
	}

	b.do("edit and save with a remark",
		chromedp.SetValue(chromedp.ID("script-source"), "#!/bin/bash\necho two\necho more\n"),
		chromedp.SendKeys(chromedp.ID("script-remark"), "say two"),
		chromedp.Click(chromedp.ID("script-save")),
		chromedp.WaitVisible(chromedp.ID("version-2")))
	if row := b.text("#version-2"); !strings.Contains(row, "say two") || !strings.Contains(row, "current") || !strings.Contains(row, "ada") {
		t.Fatalf("version 2's row: %q", row)
	}
	if cur := b.text("#script-current"); !strings.Contains(cur, "Version 2") {
		t.Fatalf("current: %q", cur)
	}
	if s, err := sys.api.GetScript(t.Context(), job.ID); err != nil || s.Source != "#!/bin/bash\necho two\necho more\n" {
		t.Fatalf("stored after the save: %+v, %v (the browser's CRLF must be stored as LF)", s, err)
	}

	b.do("view the diff to the current version", chromedp.Click(chromedp.ID("diff-1")), chromedp.WaitVisible(chromedp.ID("script-diff")))
	dels := evalIn[[]string](b, `[...document.querySelectorAll("#script-diff .d-del")].map((e) => e.textContent)`)
	adds := evalIn[[]string](b, `[...document.querySelectorAll("#script-diff .d-add")].map((e) => e.textContent)`)
	if strings.Join(dels, "|") != "-echo one" || strings.Join(adds, "|") != "+echo two|+echo more" {
		t.Fatalf("diff: deleted %q, added %q", dels, adds)
	}

	b.acceptConfirms()
	b.do("roll back to version 1", chromedp.Click(chromedp.CSS("#rollback-1 button")), chromedp.WaitVisible(chromedp.ID("version-3")))
	if row := b.text("#version-3"); !strings.Contains(row, "rollback to v1") || !strings.Contains(row, "current") {
		t.Fatalf("version 3's row: %q", row)
	}
	if got := evalIn[string](b, `document.getElementById("script-source").value`); got != one {
		t.Fatalf("after the rollback the editor holds %q", got)
	}

	for _, width := range []int64{1280, 375} {
		b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
		for _, p := range []string{path, path + "?from=1&to=2"} {
			b.open(p)
			if w, inner := evalIn[int](b, "document.documentElement.scrollWidth"), evalIn[int](b, "window.innerWidth"); w > inner {
				t.Errorf("%s at %d px: the page is %d px wide", p, width, w)
			}
		}
		if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
			b.screenshot(filepath.Join(dir, fmt.Sprintf("console-script-%d.png", width)))
		}
	}

	// A viewer reads the script and its versions, with nothing to edit.
	v := newTab(t, sys.url)
	v.signIn(path, "vic")
	v.waitText("#script-readonly", "echo one", 30*time.Second)
	if n := evalIn[int](v, `document.querySelectorAll("#script-form, [id^=rollback-]").length`); n != 0 {
		t.Fatalf("a viewer sees %d editing controls", n)
	}
}

// A one-time set-password link, opened in Chromium by a user imported
// without a password: they choose one, sign in with it, and the link
// opened again is refused.
func TestConsoleSetPasswordLink(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, consoleHandlers)
	if _, err := sys.api.CreateUser(t.Context(), apiv1.UserCreate{Name: "newcomer", Grants: []apiv1.Grant{{Group: "g", Role: "viewer"}}}); err != nil {
		t.Fatal(err)
	}
	l, err := sys.api.PasswordLink(t.Context(), "newcomer", 0)
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t, sys.url)
	b.open(l.Path)
	b.do("choose a password",
		chromedp.WaitVisible(chromedp.ID("new-password")),
		chromedp.SendKeys(chromedp.ID("new-password"), consolePassword),
		chromedp.SendKeys(chromedp.ID("confirm-password"), consolePassword),
		chromedp.Click(chromedp.ID("set-password-submit")),
		chromedp.WaitVisible(chromedp.ID("sign-in")))
	if got := b.text(".flash"); !strings.Contains(got, "Password set") {
		t.Fatalf("after setting the password the page says %q", got)
	}
	b.signIn("/jobs", "newcomer")

	o := newTab(t, sys.url)
	o.open(l.Path)
	o.do("use the link again",
		chromedp.WaitVisible(chromedp.ID("new-password")),
		chromedp.SendKeys(chromedp.ID("new-password"), "a password of someone else"),
		chromedp.SendKeys(chromedp.ID("confirm-password"), "a password of someone else"),
		chromedp.Click(chromedp.ID("set-password-submit")),
		chromedp.WaitVisible(chromedp.ID("page-error")))
	if got := o.text("#page-error"); !strings.Contains(got, "already used or expired") {
		t.Fatalf("a used link says %q", got)
	}
}
