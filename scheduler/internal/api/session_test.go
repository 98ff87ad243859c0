package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// A login sets a hardened session cookie that authenticates the console;
// cross-site state changes are refused; logout ends the session; repeated
// failures are limited with a message saying for how long.
func TestSessionLogin(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h, err := auth.HashPassword(ctx, "a long enough password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.UpdateUser(ctx, store.System, "operator", store.UserChange{PasswordHash: &h}); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string, hdr ...string) *http.Response {
		req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post("/api/v1/login", `{"name":"operator","password":"wrong password!!"}`); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", r.StatusCode)
	}
	r := post("/api/v1/login", `{"name":"operator","password":"a long enough password"}`)
	var c *http.Cookie
	for _, ck := range r.Cookies() {
		if ck.Name == "jetjob_session" {
			c = ck
		}
	}
	if r.StatusCode != http.StatusOK || c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Expires.IsZero() {
		t.Fatalf("login: %d, cookie %+v: want HttpOnly, Secure, SameSite=Lax, with an expiry", r.StatusCode, c)
	}
	cookie := "jetjob_session=" + c.Value
	if code, body := e.do("", "GET", "/api/v1/me", nil, "Cookie", cookie); code != http.StatusOK || !strings.Contains(string(body), `"auth": "session"`) {
		t.Fatalf("me by session: %d %s", code, body)
	}
	// A cross-site form post carrying the cookie is refused.
	if r := post("/api/v1/jobs/1/disable", "", "Cookie", cookie, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", r.StatusCode)
	}
	if r := post("/api/v1/logout", "", "Cookie", cookie); r.StatusCode != http.StatusNoContent {
		t.Fatalf("logout: %d", r.StatusCode)
	}
	if code, _ := e.do("", "GET", "/api/v1/me", nil, "Cookie", cookie); code != http.StatusUnauthorized {
		t.Errorf("me after logout: %d, want 401", code)
	}
	// Five failures (the login above forgot the earlier one): the next try waits.
	for range 5 {
		post("/api/v1/login", `{"name":"operator","password":"wrong password!!"}`)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/login", strings.NewReader(`{"name":"operator","password":"a long enough password"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(b.String(), "try again in") {
		t.Errorf("6th login: %d %s, want 429 saying when to try again", resp.StatusCode, b.String())
	}
}
