package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/i18n"
)

// acceptLanguage makes the tab send header as its Accept-Language, as a
// browser set to that language does.
func (b *tab) acceptLanguage(header string) {
	b.t.Helper()
	b.do("Accept-Language: "+header, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Language": header}})
		return err
	}))
}

// chineseUnmissed fails t if a page asked the catalogue for a message it
// has no Chinese text for (the page showed it in English).
func chineseUnmissed(t *testing.T) {
	t.Helper()
	if m := i18n.Missing(); len(m) > 0 {
		t.Errorf("pages showed these messages in English, lacking in i18n/zh-CN.json: %q", m)
	}
}

// The console speaks the browser's language until the user chooses one in
// the user menu; the choice is kept with the user, so it holds on the next
// page, after signing out (this browser's login page) and when they sign
// in from another browser.
func TestConsoleLanguages(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "nightly-report", Handler: "chatty", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)

	// A browser in Chinese: the login page and the dashboard in Chinese.
	zh := newTab(t, sys.url)
	zh.acceptLanguage("zh-CN,zh;q=0.9,en;q=0.8")
	zh.open("/login")
	if lang := evalIn[string](zh, "document.documentElement.lang"); lang != "zh-CN" {
		t.Fatalf(`<html lang> is %q for a Chinese browser, want zh-CN`, lang)
	}
	if h := zh.text("h1"); !strings.Contains(h, "登录") {
		t.Fatalf("the login page says %q to a Chinese browser", h)
	}
	// Its switch turns the login page to English before anyone signs in
	// (a cookie), and back.
	zh.do("switch the login page to English", chromedp.Click(chromedp.ID("lang-en")), chromedp.WaitVisible(chromedp.ID("lang-zh-CN")))
	if b := zh.text("#sign-in"); b != "Sign in" {
		t.Fatalf("the login page switched to English reads %q", b)
	}
	zh.do("switch the login page to Chinese", chromedp.Click(chromedp.ID("lang-zh-CN")), chromedp.WaitVisible(chromedp.ID("lang-en")))
	zh.signIn("/", "vic")
	if h := zh.text("h1"); !strings.Contains(h, "概览") {
		t.Fatalf("the dashboard's heading is %q to a Chinese browser, want 概览", h)
	}
	if nav := zh.text("nav"); !strings.Contains(nav, "任务管理") || !strings.Contains(nav, "调度日志") {
		t.Fatalf("the navigation reads %q", nav)
	}
	if s := zh.text("#sign-out"); s != "退出" {
		t.Fatalf("the sign-out button reads %q, want 退出", s)
	}
	if s := zh.text("#lang-en"); s != "English" {
		t.Fatalf("the language switch offers %q, want English", s)
	}
	zh.open(fmt.Sprintf("/runs/%d", run.ID))
	if st := evalIn[string](zh, `document.getElementById("run-status").dataset.status`); st == "" {
		t.Fatal("the run's status has no raw value in data-status")
	}

	// A browser in English: the user switches to Chinese in the user menu.
	en := newTab(t, sys.url)
	en.signIn("/", "ada")
	if h := en.text("h1"); !strings.HasPrefix(h, "Dashboard") {
		t.Fatalf("the dashboard's heading is %q to an English browser", h)
	}
	if lang := evalIn[string](en, "document.documentElement.lang"); lang != "en" {
		t.Fatalf(`<html lang> is %q, want en`, lang)
	}
	en.do("switch to Chinese", chromedp.Click(chromedp.ID("lang-zh-CN")), chromedp.WaitVisible(chromedp.ID("lang-en")))
	if h := en.text("h1"); !strings.Contains(h, "概览") || !strings.HasSuffix(en.location(), "/") {
		t.Fatalf("after the switch, %s says %q, want the dashboard in Chinese", en.location(), h)
	}
	en.open("/runs")
	if h := en.text("h1"); h != "调度日志" {
		t.Fatalf("the next page's heading is %q, want 调度日志", h)
	}
	if u, err := sys.api.GetUser(t.Context(), "ada"); err != nil || u.Language != "zh-CN" {
		t.Fatalf("ada's saved language: %+v, %v", u, err)
	}
	en.do("sign out", chromedp.Click(chromedp.ID("sign-out")), chromedp.WaitVisible(chromedp.ID("sign-in")))
	if b := en.text("#sign-in"); b != "登录" {
		t.Fatalf("the login page after signing out reads %q, want 登录", b)
	}

	// Another English browser (no cookie of this one): signing in brings
	// the user's Chinese.
	other := newTab(t, sys.url)
	other.signIn("/", "ada")
	if h := other.text("h1"); !strings.Contains(h, "概览") {
		t.Fatalf("signed in from another browser, the dashboard says %q, want Chinese", h)
	}
	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		chineseScreenshots(t, other, dir, job.ID, run.ID)
	}
	// And back to English.
	other.do("switch to English", chromedp.Click(chromedp.ID("lang-en")), chromedp.WaitVisible(chromedp.ID("lang-zh-CN")))
	if h := other.text("h1"); !strings.HasPrefix(h, "Dashboard") {
		t.Fatalf("after switching back, the dashboard says %q", h)
	}
	chineseUnmissed(t)
}

// chineseScreenshots saves docs/img's pictures of the console in Chinese
// (make console-screenshots), at a laptop's width and a phone's.
func chineseScreenshots(t *testing.T, b *tab, dir string, job, run int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{"dashboard": "/", "runs": "/runs", "run": fmt.Sprintf("/runs/%d", run),
		"jobs": "/jobs", "job": fmt.Sprintf("/jobs/%d", job), "workers": "/workers", "stats": "/stats"}
	for _, width := range []int64{1280, 375} {
		b.do(fmt.Sprintf("a %d px viewport", width), chromedp.EmulateViewport(width, 900))
		for name, path := range pages {
			file := filepath.Join(dir, fmt.Sprintf("console-%s.zh-CN.png", name))
			if width != 1280 {
				if name != "dashboard" && name != "run" {
					continue
				}
				file = filepath.Join(dir, fmt.Sprintf("console-%s-%d.zh-CN.png", name, width))
			}
			b.open(path)
			b.screenshot(file)
			t.Logf("screenshot %s", file)
		}
	}
	b.do("a 1280 px viewport", chromedp.EmulateViewport(1280, 900))
	// Back where the test left the tab: pages is a map, so the last page
	// opened above is any of them (the switch back to English stays on it).
	b.open("/")
}
