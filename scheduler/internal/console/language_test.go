package console_test

import (
	"net/http"
	"net/url"
	"testing"
)

// The language switch (POST /ui/language) takes only the console's
// languages, sends the browser back only to a page of this site, and
// works before sign-in (a cookie) as after (kept with the user).
func TestLanguageSwitch(t *testing.T) {
	e := newEnv(t)
	anon := e.browser()
	if p := anon.post("/ui/language", url.Values{"language": {"fr"}, "back": {"/login"}}); p.Code != http.StatusBadRequest {
		t.Fatalf("language fr: %d, want 400", p.Code)
	}
	for _, back := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", ""} {
		if p := anon.post("/ui/language", url.Values{"language": {"zh-CN"}, "back": {back}}); p.Code != http.StatusSeeOther || p.Location != "/" {
			t.Fatalf("back %q: %d → %q, want / (this site)", back, p.Code, p.Location)
		}
	}
	// Before sign-in: the cookie alone, and the login page in Chinese.
	mustContain(t, anon.open("/login"), `<html lang="zh-CN">`, "登录")

	op := e.browser().login("operator")
	mustContain(t, op.open("/"), `<html lang="en">`, ">Dashboard")
	if p := op.post("/ui/language", url.Values{"language": {"zh"}, "back": {"/runs?status=FAILED"}}); p.Code != http.StatusSeeOther || p.Location != "/runs?status=FAILED" {
		t.Fatalf("switch: %d → %q, want back to /runs?status=FAILED", p.Code, p.Location)
	}
	mustContain(t, op.open("/runs?status=FAILED"), `<html lang="zh-CN">`, "<h1>调度日志</h1>")
	// Kept with the user: a new browser (no cookie) signs in to Chinese.
	mustContain(t, e.browser().login("operator").open("/"), `<html lang="zh-CN">`, "概览")
	// An English browser that never chose sees English.
	mustContain(t, e.browser().login("viewer").open("/"), `<html lang="en">`)
}
