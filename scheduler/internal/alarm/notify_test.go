package alarm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/fakeclock"
)

// vendor is a test server standing in for one vendor's webhook: it checks
// each request the way the vendor documents it and answers as the vendor
// does, recording what it accepted.
type vendor struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []map[string]any
	calls int
}

func startVendor(t *testing.T, check func(r *http.Request, body []byte) (status int, answer string)) *vendor {
	v := &vendor{}
	v.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		v.mu.Lock()
		v.calls++
		v.mu.Unlock()
		if r.Method != http.MethodPost || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		status, answer := check(r, body)
		if status == http.StatusOK {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				http.Error(w, "not JSON", http.StatusBadRequest)
				return
			}
			v.mu.Lock()
			v.got = append(v.got, m)
			v.mu.Unlock()
		}
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *vendor) accepted() []map[string]any {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.got
}

func testNotice() *Notice {
	return &Notice{Event: EventFailed, AlertID: 7, Rule: "nightly", State: "open", JobID: 42, JobName: "billing-export",
		Group: "finance", RunID: 9001, Status: "FAILED", Message: "exit status 3", Attempt: 2, Count: 5,
		FirstAt: time.Date(2026, 11, 22, 2, 30, 0, 0, time.UTC), At: time.Date(2026, 11, 22, 2, 31, 0, 0, time.UTC),
		ConsoleLink: "https://jetjob.example.com/runs/9001"}
}

// clocked is a sender whose clock the test holds.
func clocked(t *testing.T) (*Sender, time.Time) {
	s := newSender(t, Config{Timeout: 5 * time.Second})
	now := time.Now().Truncate(time.Second)
	s.now = fakeclock.New(now).Now
	return s, now
}

// path walks a decoded JSON value: keys for objects, indexes for arrays.
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// DingTalk: the robot URL gets timestamp (Unix ms) and sign in its query,
// sign = URL-encoded base64(HMAC-SHA256(key secret, timestamp + "\n" +
// secret)); the body is a markdown message; the robot refuses a timestamp
// more than an hour off and answers errcode 0 when it took the message.
func TestDingTalkChannel(t *testing.T) {
	const secret = "SEC4f8a0d6e1b2c3d4e5f60718293a4b5c6d7e8f9"
	s, now := clocked(t)
	v := startVendor(t, func(r *http.Request, body []byte) (int, string) {
		q := r.URL.Query()
		if q.Get("access_token") != "tok" {
			return http.StatusOK, `{"errcode":300001,"errmsg":"token is not exist"}`
		}
		ts := q.Get("timestamp")
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.UnixMilli(ms).Sub(now).Abs() > time.Hour {
			return http.StatusOK, `{"errcode":310000,"errmsg":"invalid timestamp"}`
		}
		// The query was URL-encoded: a "+" of the base64 must arrive as
		// "+", not as a space.
		if !strings.Contains(r.URL.RawQuery, "sign=") {
			return http.StatusOK, `{"errcode":310000,"errmsg":"sign missing"}`
		}
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(ts + "\n" + secret))
		if q.Get("sign") != base64.StdEncoding.EncodeToString(m.Sum(nil)) {
			return http.StatusOK, `{"errcode":310000,"errmsg":"sign not match"}`
		}
		return http.StatusOK, `{"errcode":0,"errmsg":"ok"}`
	})
	ch := Channel{Kind: KindDingTalk, Target: v.srv.URL + "/robot/send?access_token=tok", Secret: secret}
	if res := s.Notify(t.Context(), ch, testNotice(), "d1"); res.Err != nil {
		t.Fatalf("notify: %v", res.Err)
	}
	got := v.accepted()[0]
	if path(got, "msgtype") != "markdown" || path(got, "markdown", "title") != testNotice().Title() {
		t.Errorf("message %v: want msgtype markdown titled %q", got, testNotice().Title())
	}
	text, _ := path(got, "markdown", "text").(string)
	for _, want := range []string{"billing-export", "**Count:** 5", "[Open in the console](https://jetjob.example.com/runs/9001)"} {
		if !strings.Contains(text, want) {
			t.Errorf("markdown %q lacks %q", text, want)
		}
	}
	// A wrong secret is refused by the robot: recorded with its code.
	ch.Secret = "SECwrong"
	res := s.Notify(t.Context(), ch, testNotice(), "d2")
	if res.Err == nil || res.Err.Error() != "dingtalk: errcode 310000" {
		t.Errorf("wrong secret: %v, want dingtalk: errcode 310000", res.Err)
	}
}

// Feishu / Lark: timestamp (Unix seconds, a string) and sign in the body,
// sign = base64(HMAC-SHA256 keyed with timestamp + "\n" + secret over an
// empty message); the body is an interactive card; code 0 is success.
func TestFeishuChannel(t *testing.T) {
	const secret = "qVnT6lPs2Ut3xAbC"
	s, now := clocked(t)
	v := startVendor(t, func(r *http.Request, body []byte) (int, string) {
		var m struct {
			Timestamp string `json:"timestamp"`
			Sign      string `json:"sign"`
			MsgType   string `json:"msg_type"`
		}
		if json.Unmarshal(body, &m) != nil || m.MsgType != "interactive" {
			return http.StatusOK, `{"code":9499,"msg":"Bad Request","data":{}}`
		}
		secs, err := strconv.ParseInt(m.Timestamp, 10, 64)
		if err != nil || time.Unix(secs, 0).Sub(now).Abs() > time.Hour {
			return http.StatusOK, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`
		}
		mac := hmac.New(sha256.New, []byte(m.Timestamp+"\n"+secret))
		if m.Sign != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
			return http.StatusOK, `{"code":19021,"msg":"sign match fail or timestamp is not within one hour from current time"}`
		}
		return http.StatusOK, `{"code":0,"msg":"success","data":{}}`
	})
	ch := Channel{Kind: KindFeishu, Target: v.srv.URL + "/open-apis/bot/v2/hook/abc", Secret: secret}
	if res := s.Notify(t.Context(), ch, testNotice(), "f1"); res.Err != nil {
		t.Fatalf("notify: %v", res.Err)
	}
	got := v.accepted()[0]
	if path(got, "card", "header", "title", "content") != testNotice().Title() || path(got, "card", "header", "template") != "red" {
		t.Errorf("card header %v: want the title, red", path(got, "card", "header"))
	}
	if path(got, "card", "elements", 0, "tag") != "markdown" || path(got, "card", "elements", 1, "actions", 0, "url") != testNotice().ConsoleLink {
		t.Errorf("card elements %v: want markdown then a button to the console", path(got, "card", "elements"))
	}
	ch.Secret = "other"
	if res := s.Notify(t.Context(), ch, testNotice(), "f2"); res.Err == nil || res.Err.Error() != "feishu: code 19021" {
		t.Errorf("wrong secret: %v, want feishu: code 19021", res.Err)
	}
}

// Slack: an incoming webhook takes text (the notification's fallback) and
// blocks: a plain_text header, a mrkdwn section, a button to the console.
func TestSlackChannel(t *testing.T) {
	s, _ := clocked(t)
	v := startVendor(t, func(*http.Request, []byte) (int, string) { return http.StatusOK, "ok" })
	n := testNotice()
	if res := s.Notify(t.Context(), Channel{Kind: KindSlack, Target: v.srv.URL + "/services/T0/B0/X"}, n, "s1"); res.Err != nil {
		t.Fatalf("notify: %v", res.Err)
	}
	got := v.accepted()[0]
	if path(got, "text") != n.Title() || path(got, "blocks", 0, "type") != "header" || path(got, "blocks", 0, "text", "type") != "plain_text" {
		t.Errorf("message %v: want the title as text and a plain_text header block", got)
	}
	if path(got, "blocks", 1, "text", "type") != "mrkdwn" || !strings.Contains(path(got, "blocks", 1, "text", "text").(string), "*Count:* 5") {
		t.Errorf("section %v: want mrkdwn with the count", path(got, "blocks", 1))
	}
	if path(got, "blocks", 2, "elements", 0, "url") != n.ConsoleLink {
		t.Errorf("actions %v: want a button to the console", path(got, "blocks", 2))
	}
}

// Teams: a message with one attachment, an Adaptive Card.
func TestTeamsChannel(t *testing.T) {
	s, _ := clocked(t)
	v := startVendor(t, func(*http.Request, []byte) (int, string) { return http.StatusAccepted, "" })
	v2 := startVendor(t, func(*http.Request, []byte) (int, string) { return http.StatusOK, "1" })
	for _, url := range []string{v.srv.URL, v2.srv.URL} {
		if res := s.Notify(t.Context(), Channel{Kind: KindTeams, Target: url + "/workflows/x"}, testNotice(), "t1"); res.Err != nil {
			t.Fatalf("notify: %v", res.Err)
		}
	}
	got := v2.accepted()[0]
	card := path(got, "attachments", 0, "content")
	if path(got, "type") != "message" || path(got, "attachments", 0, "contentType") != "application/vnd.microsoft.card.adaptive" ||
		path(card, "type") != "AdaptiveCard" || path(card, "body", 0, "text") != testNotice().Title() ||
		path(card, "actions", 0, "type") != "Action.OpenUrl" {
		t.Errorf("message %v: want an Adaptive Card with the title and a link", got)
	}
}

// WeCom: a markdown message of at most 4,096 bytes; errcode 0 is success.
func TestWeComChannel(t *testing.T) {
	s, _ := clocked(t)
	v := startVendor(t, func(r *http.Request, body []byte) (int, string) {
		if r.URL.Query().Get("key") == "" {
			return http.StatusOK, `{"errcode":93000,"errmsg":"invalid webhook url"}`
		}
		var m struct {
			MsgType  string `json:"msgtype"`
			Markdown struct {
				Content string `json:"content"`
			} `json:"markdown"`
		}
		if json.Unmarshal(body, &m) != nil || m.MsgType != "markdown" || len(m.Markdown.Content) > 4096 {
			return http.StatusOK, `{"errcode":40058,"errmsg":"markdown.content exceed max length 4096"}`
		}
		return http.StatusOK, `{"errcode":0,"errmsg":"ok"}`
	})
	n := testNotice()
	n.Message = strings.Repeat("错误 ", 3000)
	if res := s.Notify(t.Context(), Channel{Kind: KindWeCom, Target: v.srv.URL + "/cgi-bin/webhook/send?key=k"}, n, "w1"); res.Err != nil {
		t.Fatalf("notify: %v", res.Err)
	}
	if res := s.Notify(t.Context(), Channel{Kind: KindWeCom, Target: v.srv.URL + "/cgi-bin/webhook/send"}, n, "w2"); res.Err == nil || res.Err.Error() != "wecom: errcode 93000" {
		t.Errorf("no key: %v, want wecom: errcode 93000", res.Err)
	}
}

// The generic webhook carries the notice as JSON, signed the Standard
// Webhooks way with the channel's secret: VerifyWebhook accepts it.
func TestGenericWebhookChannelIsSigned(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	s, _ := clocked(t)
	s.now = time.Now
	v := startVendor(t, func(r *http.Request, body []byte) (int, string) {
		if err := VerifyWebhook(secret, r.Header, body, 5*time.Minute); err != nil || r.Header.Get(IDHeader) != "jetjob-alert-delivery-5" {
			return http.StatusUnauthorized, ""
		}
		return http.StatusOK, ""
	})
	if res := s.Notify(t.Context(), Channel{Kind: KindWebhook, Target: v.srv.URL, Secret: secret}, testNotice(), "jetjob-alert-delivery-5"); res.Err != nil {
		t.Fatalf("notify: %v", res.Err)
	}
	got := v.accepted()[0]
	if path(got, "event") != "failed" || path(got, "count") != float64(5) || path(got, "job_name") != "billing-export" {
		t.Errorf("notice %v: want event, count and job", got)
	}
}

// A channel that fails, times out, redirects or asks to slow down is a
// failed attempt recorded with a status code or a class, and a 429's
// Retry-After is kept for the next attempt's time.
func TestChannelFailures(t *testing.T) {
	s, now := clocked(t)
	s.cfg.Timeout = 200 * time.Millisecond
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	slow := startVendor(t, func(r *http.Request, _ []byte) (int, string) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
		return http.StatusOK, "ok"
	})
	failing := startVendor(t, func(*http.Request, []byte) (int, string) {
		return http.StatusInternalServerError, "internal: db password hunter2"
	})
	limited := startVendor(t, func(*http.Request, []byte) (int, string) { return http.StatusTooManyRequests, "slow down" })
	limited.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	dated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", now.Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	t.Cleanup(dated.Close)
	target := startVendor(t, func(*http.Request, []byte) (int, string) { return http.StatusOK, "ok" })
	redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusFound))
	t.Cleanup(redirect.Close)

	res := s.Notify(t.Context(), Channel{Kind: KindSlack, Target: failing.srv.URL}, testNotice(), "x")
	if res.Code != 500 || res.Err == nil || res.Err.Error() != "HTTP 500 Internal Server Error" {
		t.Errorf("failing: %d %v, want HTTP 500 and no body", res.Code, res.Err)
	}
	res = s.Notify(t.Context(), Channel{Kind: KindSlack, Target: slow.srv.URL}, testNotice(), "x")
	if res.Err == nil || !errors.Is(res.Err, context.DeadlineExceeded) && !strings.Contains(res.Err.Error(), "timeout") {
		t.Errorf("slow: %v, want a timeout", res.Err)
	}
	res = s.Notify(t.Context(), Channel{Kind: KindSlack, Target: redirect.URL}, testNotice(), "x")
	if res.Code != http.StatusFound || res.Err == nil || !strings.Contains(res.Err.Error(), "redirects are not followed") {
		t.Errorf("redirect: %d %v, want HTTP 302 not followed", res.Code, res.Err)
	}
	if n := len(target.accepted()); n != 0 {
		t.Errorf("the redirect's target got %d notices", n)
	}
	res = s.Notify(t.Context(), Channel{Kind: KindSlack, Target: limited.srv.URL}, testNotice(), "x")
	if res.Code != http.StatusTooManyRequests || res.RetryAfter != 30*time.Second {
		t.Errorf("429: %d retry after %s, want 429 and 30s", res.Code, res.RetryAfter)
	}
	res = s.Notify(t.Context(), Channel{Kind: KindSlack, Target: dated.URL}, testNotice(), "x")
	if res.RetryAfter != 90*time.Second {
		t.Errorf("429 with a date: retry after %s, want 90s", res.RetryAfter)
	}
}

// Validate refuses what could never deliver, and a secret where the URL
// is the credential.
func TestChannelValidate(t *testing.T) {
	for _, c := range []struct {
		ch   Channel
		want string
	}{
		{Channel{Kind: "pager", Target: "https://x"}, "channel kind"},
		{Channel{Kind: KindSlack, Target: "hooks.slack.com/services/x"}, "http or https URL"},
		{Channel{Kind: KindSlack, Target: "https://hooks.slack.com/x", Secret: "s"}, "takes no secret"},
		{Channel{Kind: KindEmail, Target: "ops@example.com, nope"}, "not an email address"},
		{Channel{Kind: KindWebhook, Target: "https://u:p@example.com/"}, "credentials in the URL"},
		{Channel{Kind: KindWebhook, Target: "https://example.com/", Secret: "whsec_!!"}, "not base64"},
		{Channel{Kind: KindDingTalk, Target: "https://oapi.dingtalk.com/robot/send", Template: "{{.Nope"}, "channel template"},
	} {
		if err := c.ch.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.ch, err, c.want)
		}
	}
	if err := (Channel{Kind: KindEmail, Target: "ops@example.com, oncall@example.com"}).Validate(); err != nil {
		t.Errorf("two addresses: %v", err)
	}
	if got := (Channel{Kind: KindSlack, Target: "https://hooks.slack.com/services/T/B/secret"}).Redacted(); got != "https://hooks.slack.com/…" {
		t.Errorf("redacted %q", got)
	}
}

// A channel's own template replaces the body; an error in it fails the
// attempt with the template's error.
func TestChannelTemplate(t *testing.T) {
	body, err := Render(Channel{Kind: KindWeCom, Template: `{{.JobName}} failed {{.Count}}×`}, testNotice())
	if err != nil || body != "billing-export failed 5×" {
		t.Errorf("custom template: %q %v", body, err)
	}
	if _, err := Render(Channel{Kind: KindWeCom, Template: `{{.Nope}}`}, testNotice()); err == nil {
		t.Error("a template naming an unknown field rendered")
	}
	for _, k := range Kinds {
		body, err := Render(Channel{Kind: k}, &Notice{Event: EventTest})
		if err != nil || !strings.Contains(body, "test notice") {
			t.Errorf("%s test notice: %q %v", k, body, err)
		}
	}
}
