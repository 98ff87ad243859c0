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

// The jobs list and the job form speak Chinese too: their headings and
// field labels, the pager's range, and the form's own reading errors.
func TestJobPagesInChinese(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	if p := op.post("/ui/language", url.Values{"language": {"zh-CN"}, "back": {"/jobs"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("switch: %d", p.Code)
	}
	mustContain(t, op.open("/jobs"), "<h1>任务管理</h1>", "新增任务", "还没有任务")
	mustContain(t, op.open("/jobs/new"), "<h1>新增任务</h1>", "基础配置", "路由策略", "阻塞处理策略", "失败重试次数",
		"报警邮件", "接下来 10 次触发", `data-t-excluded-by="被日历 %s 排除"`, "创建任务")
	form := jobForm("nightly", "max_retries", "three")
	p := op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad number: %d, want 400", p.Code)
	}
	mustContain(t, p, `id="err-max_retries"`, "&#34;three&#34; 不是整数")
	if p = op.post("/jobs", jobForm("nightly")); p.Code != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, op.open("/jobs"), "第 1–1 条，共 1 条", "执行一次", "前</td>")
	mustContain(t, op.open(p.Location), "执行配置", "任务超时时间")
}
