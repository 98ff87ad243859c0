package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestLoginLogout(t *testing.T) {
	e := newEnv(t)
	b := e.browser()

	// Signed out, a page sends the browser to the login page and back.
	p := b.get("/jobs?group=a")
	if p.Code != http.StatusSeeOther || p.Location != "/login?next="+url.QueryEscape("/jobs?group=a") {
		t.Fatalf("signed-out page: %d → %q", p.Code, p.Location)
	}
	p = b.open(p.Location)
	mustContain(t, p, `name="next" value="/jobs?group=a"`, `<label for="password">`)

	// A wrong password shows the form again with the API's words.
	p = b.post("/login", url.Values{"name": {"admin"}, "password": {"nope"}, "next": {"/"}})
	if p.Code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", p.Code)
	}
	mustContain(t, p, "wrong user name or password", `value="admin"`)

	// The right one signs in and goes where the user was heading; the
	// user menu shows the name and the role.
	p = b.post("/login", url.Values{"name": {"admin"}, "password": {password}, "next": {"/jobs?group=a"}})
	if p.Code != http.StatusSeeOther || p.Location != "/jobs?group=a" {
		t.Fatalf("login: %d → %q", p.Code, p.Location)
	}
	p = b.open("/")
	mustContain(t, p, `<strong id="user-name">Ada Admin</strong>`, `<span class="role" id="user-role">admin</span>`)

	v := e.browser().login("viewer")
	mustContain(t, v.get("/"), `id="user-role">viewer of a</span>`)

	// Signing out ends the session: the old cookie no longer works.
	p = b.post("/logout", nil)
	if p.Code != http.StatusSeeOther || p.Location != "/login?notice=signed-out" {
		t.Fatalf("logout: %d → %q", p.Code, p.Location)
	}
	if p = b.get("/"); p.Code != http.StatusSeeOther {
		t.Fatalf("after logout: %d", p.Code)
	}
}

func TestLoginKeepsNextOnSite(t *testing.T) {
	e := newEnv(t)
	for _, next := range []string{"https://evil.example/", "//evil.example/x", `/\evil.example`, "javascript:alert(1)"} {
		p := e.browser().post("/login", url.Values{"name": {"viewer"}, "password": {password}, "next": {next}})
		if p.Code != http.StatusSeeOther || p.Location != "/" {
			t.Errorf("next=%q: %d → %q, want / ", next, p.Code, p.Location)
		}
	}
}

func TestCrossSiteFormIsRefused(t *testing.T) {
	e := newEnv(t)
	b := e.browser().login("admin")
	b.site = "cross-site"
	if p := b.post("/logout", nil); p.Code != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d, want 403", p.Code)
	}
	b.site = "same-origin"
	if p := b.get("/"); p.Code != http.StatusOK {
		t.Fatalf("the session must survive the refused cross-site POST: %d", p.Code)
	}
}

func TestUnknownPage(t *testing.T) {
	e := newEnv(t)
	b := e.browser().login("viewer")
	p := b.expect("/no/such/page", http.StatusNotFound)
	mustContain(t, p, "no such page: /no/such/page", `id="user-name"`)
	// The API's own 404 stays JSON.
	if p := b.get("/api/v1/nothing"); p.Code != http.StatusNotFound || p.Body[0] != '{' {
		t.Fatalf("API 404: %d %q", p.Code, p.Body)
	}
}

// The browser's own /favicon.ico request is the console's icon, signed in
// or not, and every page names it: no 404 on each load.
func TestFavicon(t *testing.T) {
	e := newEnv(t)
	for _, b := range []*browser{e.browser(), e.browser().login("viewer")} {
		p := b.open("/favicon.ico")
		if !strings.HasPrefix(p.Body, "<svg") {
			t.Fatalf("/favicon.ico: %q", p.Body)
		}
		b.open("/static/favicon.svg")
	}
	mustContain(t, e.browser().open("/login"), `<link rel="icon" href="/static/favicon.svg"`)
}
