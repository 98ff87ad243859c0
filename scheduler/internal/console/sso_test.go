package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/ldaptest"
	"github.com/jetjob/jetjob/scheduler/internal/oidctest"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// The console's sign-in through a real OpenID Provider (package
// oidctest, zitadel's OP) over HTTP: the browser here is a Go client with
// a cookie jar that follows the provider's redirects itself.

const (
	opClient = "jetjob-console"
	opSecret = "op-client-secret-for-tests"
)

// opUsers are the provider's users: alice in jj-ops (operator of a with
// scripts), bob in jj-view (viewer of a), eve in no mapped group.
func opUsers() []oidctest.User {
	return []oidctest.User{
		{Subject: "sub-alice", Username: "alice", Password: "alice-pw", Name: "Alice Ops", Groups: []string{"jj-ops", "staff"}},
		{Subject: "sub-bob", Username: "bob", Password: "bob-pw", Name: "Bob Viewer", Groups: []string{"jj-view"}},
		{Subject: "sub-eve", Username: "eve", Password: "eve-pw", Groups: []string{"staff"}},
	}
}

// ssoEnv is the console with one OpenID provider "corp"; edit adjusts
// the configuration before the providers are built.
func ssoEnv(t *testing.T, edit func(*sso.Config)) (*env, *oidctest.Provider) {
	t.Helper()
	var op *oidctest.Provider
	e := newEnv(t, func(cfg *api.Config, base string) {
		op = oidctest.Start(t, oidctest.Options{ClientID: opClient, ClientSecret: opSecret,
			RedirectURIs: []string{base + "/login/sso/corp/callback", base + "/login"}, Users: opUsers()})
		c := &sso.Config{PublicURL: base, OIDC: []sso.OIDCConfig{{ID: "corp", Name: "Corp SSO", Issuer: op.Issuer,
			ClientID: opClient, ClientSecret: opSecret, Scopes: []string{"groups"},
			Mapping: sso.Mapping{AdminGroups: []string{"jj-admins"}, Grants: []sso.GrantRule{
				{From: "jj-ops", Group: "a", Role: "operator", Scripts: true},
				{From: "jj-view", Group: "a", Role: "viewer"},
				{From: "jj-view-b", Group: "b", Role: "viewer"},
			}}}}}
		if edit != nil {
			edit(c)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		ps, err := sso.New(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg.SSO = ps
	})
	return e, op
}

// abs requests an absolute URL (the provider's) with the browser's jar.
func (b *browser) abs(method, u string, form url.Values) page {
	b.e.t.Helper()
	var req *http.Request
	var err error
	if form != nil {
		req, err = http.NewRequest(method, u, strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		req, err = http.NewRequest(method, u, nil)
	}
	if err != nil {
		b.e.t.Fatal(err)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	loc := resp.Header.Get("Location")
	if loc != "" {
		if l, err := resp.Request.URL.Parse(loc); err == nil {
			loc = l.String()
		}
	}
	return page{Code: resp.StatusCode, Location: loc, Body: string(raw)}
}

// ssoToCallback starts a sign-in at provider corp, signs in at the
// provider as user, and returns the console's callback path (with code
// and state) the provider sends the browser back to.
func (b *browser) ssoToCallback(op *oidctest.Provider, user, pw string) string {
	b.e.t.Helper()
	p := b.get("/login/sso/corp?next=%2Fjobs")
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, op.Issuer) {
		b.e.t.Fatalf("start: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	p = b.abs(http.MethodGet, p.Location, nil) // authorize → the provider's login page
	login, err := url.Parse(p.Location)
	if err != nil || p.Code != http.StatusFound || login.Path != "/login" {
		b.e.t.Fatalf("authorize: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	p = b.abs(http.MethodPost, op.Issuer+"/login", url.Values{"id": {login.Query().Get("authRequestID")},
		"username": {user}, "password": {pw}})
	if p.Code != http.StatusFound {
		b.e.t.Fatalf("provider sign-in as %s: %d\n%s", user, p.Code, p.Body)
	}
	p = b.abs(http.MethodGet, p.Location, nil) // the provider's callback → ours
	if !strings.HasPrefix(p.Location, b.e.srv.URL+"/login/sso/corp/callback?") {
		b.e.t.Fatalf("provider's answer: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	return strings.TrimPrefix(p.Location, b.e.srv.URL)
}

// ssoSignIn signs in through corp and fails the test unless the console
// lands on /jobs.
func (b *browser) ssoSignIn(op *oidctest.Provider, user, pw string) {
	b.e.t.Helper()
	cb := b.ssoToCallback(op, user, pw)
	if p := b.get(cb); p.Code != http.StatusSeeOther || p.Location != "/jobs" {
		b.e.t.Fatalf("callback: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
}

func (b *browser) me() apiv1.Me {
	b.e.t.Helper()
	p := b.open("/api/v1/me")
	var me apiv1.Me
	if err := json.Unmarshal([]byte(p.Body), &me); err != nil {
		b.e.t.Fatal(err)
	}
	return me
}

// auditOf returns the actions recorded about target, oldest first.
func (e *env) auditOf(target string) []store.AuditEntry {
	e.t.Helper()
	list, _, err := e.st.ListAudit(context.Background(), store.AuditFilter{Target: target, Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	return list
}

func actions(es []store.AuditEntry) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Action)
	}
	return strings.Join(out, " ")
}

// A first sign-in creates the user with the mapped grants; a later one
// after the provider dropped a group takes its grant away; each change is
// in the audit log.
func TestSSOSignInMapsGroupsEachTime(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	b := e.browser()
	if p := b.open("/login"); !strings.Contains(p.Body, "Sign in with Corp SSO") {
		t.Fatalf("the sign-in page has no provider button:\n%s", p.Body)
	}
	b.ssoSignIn(op, "alice", "alice-pw")
	me := b.me()
	if me.Name != "alice" || me.Admin || len(me.Grants) != 1 || me.Grants[0] != (apiv1.Grant{Group: "a", Role: "operator", Scripts: true}) {
		t.Fatalf("alice after her first sign-in: %+v", me)
	}
	u, err := e.st.GetUser(context.Background(), "alice")
	if err != nil || u.Provider != "corp" || u.PasswordHash != "" || u.DisplayName != "Alice Ops" {
		t.Fatalf("alice's user: %+v, %v", u, err)
	}
	if got := actions(e.auditOf("user:alice")); got != "user.create grant.sync session.login" {
		t.Fatalf("audit of the first sign-in: %q", got)
	}

	op.SetGroups("alice", []string{"jj-view", "staff"})
	b2 := e.browser()
	b2.ssoSignIn(op, "alice", "alice-pw")
	me = b2.me()
	if len(me.Grants) != 1 || me.Grants[0] != (apiv1.Grant{Group: "a", Role: "viewer"}) {
		t.Fatalf("alice after losing jj-ops: %+v", me.Grants)
	}
	rows := e.auditOf("user:alice")
	last := rows[len(rows)-2]
	if last.Action != "grant.sync" || !strings.Contains(string(last.Before), `"scripts": true`) || strings.Contains(string(last.After), "scripts") ||
		last.Auth != "sso:corp" {
		t.Fatalf("grant change not audited as such: %s %s → %s (%s)", last.Action, last.Before, last.After, last.Auth)
	}
	// The dropped grant is gone from the running sessions too: the grants
	// are read per request.
	if me := b.me(); me.Grants[0].Role != "viewer" {
		t.Fatalf("alice's first session still has %+v", me.Grants)
	}
}

// A user none of whose groups is mapped is refused, not created.
func TestSSOUnmappedUserRefused(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	b := e.browser()
	p := b.get(b.ssoToCallback(op, "eve", "eve-pw"))
	if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "none of the user") {
		t.Fatalf("unmapped user: %d\n%s", p.Code, p.Body)
	}
	if _, err := e.st.GetUser(context.Background(), "eve"); err == nil {
		t.Fatal("eve was created")
	}
	if got := actions(e.auditOf("provider:corp")); got != "sso.refused" {
		t.Fatalf("audit: %q", got)
	}
}

// The provider's answer works once: the same callback again (a replayed
// state) is refused, and so is an answer brought to another browser.
func TestSSOStateReplayRefused(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	b := e.browser()
	cb := b.ssoToCallback(op, "bob", "bob-pw")
	if p := b.get(cb); p.Code != http.StatusSeeOther {
		t.Fatalf("first use: %d\n%s", p.Code, p.Body)
	}
	// Replayed with the state cookie put back, as an attacker holding
	// both would.
	u, _ := url.Parse(e.srv.URL + cb)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: "jetjob_sso", Value: u.Query().Get("state"), Path: "/login/sso/"}})
	p := b.get(cb)
	if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "already used (a replayed state)") {
		t.Fatalf("replayed state: %d\n%s", p.Code, p.Body)
	}
	// Another browser, without the state cookie.
	cb = b.ssoToCallback(op, "bob", "bob-pw")
	if p := e.browser().get(cb); p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "not started in this browser") {
		t.Fatalf("another browser: %d\n%s", p.Code, p.Body)
	}
	refused := 0
	for _, r := range e.auditOf("provider:corp") {
		if r.Action == "sso.refused" {
			refused++
			if strings.Contains(string(r.After), "code=") || strings.Contains(string(r.After), u.Query().Get("state")) {
				t.Fatalf("audit row holds a secret: %s", r.After)
			}
		}
	}
	if refused != 2 {
		t.Fatalf("%d sso.refused rows, want 2", refused)
	}
}

// ID tokens the client must not believe, from a real provider told to
// misbehave, are each refused (a wrong audience and an unknown issuer,
// which this provider cannot be made to send, in package sso's tests) with a clear message and an audit row, and
// nobody is signed in or created.
func TestSSOBadIDTokensRefused(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	for _, c := range []struct {
		name   string
		tamper oidctest.Tamper
		reason string
	}{
		{"nonce mismatch", oidctest.Tamper{Nonce: true}, "nonce does not match"},
		{"expired token", oidctest.Tamper{Expired: true}, "the ID token expired at"},
		{"bad signature", oidctest.Tamper{ForeignKey: true}, "signature does not verify"},
	} {
		op.Tamper(c.tamper)
		b := e.browser()
		p := b.get(b.ssoToCallback(op, "bob", "bob-pw"))
		if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, c.reason) {
			t.Fatalf("%s: %d\n%s", c.name, p.Code, p.Body)
		}
		rows := e.auditOf("provider:corp")
		if last := rows[len(rows)-1]; last.Action != "sso.refused" || !strings.Contains(string(last.After), c.reason) {
			t.Fatalf("%s: last audit row %s %s", c.name, last.Action, last.After)
		}
		if b.get("/api/v1/me").Code != http.StatusUnauthorized {
			t.Fatalf("%s: signed in anyway", c.name)
		}
	}
	if _, err := e.st.GetUser(context.Background(), "bob"); err == nil {
		t.Fatal("bob was created from a refused token")
	}
}

// A federated user has no password: the password form refuses them and
// an admin cannot give them one.
func TestSSOFederatedUserHasNoPassword(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	e.browser().ssoSignIn(op, "bob", "bob-pw")
	if p := e.browser().post("/login", url.Values{"name": {"bob"}, "password": {"bob-pw"}}); p.Code != http.StatusUnauthorized {
		t.Fatalf("password sign-in of a federated user: %d", p.Code)
	}
	admin := e.browser().login("admin")
	body := `{"password":"a-new-password-long-enough"}`
	req, _ := http.NewRequest(http.MethodPatch, e.srv.URL+"/api/v1/users/bob", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := admin.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("password reset of a federated user: %d, want 400", resp.StatusCode)
	}
}

// With require_sso only the break-glass admin signs in with a password.
func TestSSORequireSSO(t *testing.T) {
	t.Parallel()
	e, _ := ssoEnv(t, func(c *sso.Config) { c.RequireSSO, c.BreakGlass = true, "admin" })
	e.browser().login("admin")
	p := e.browser().post("/login", url.Values{"name": {"operator"}, "password": {password}})
	if p.Code != http.StatusForbidden || !strings.Contains(p.Body, "password sign-in is turned off") {
		t.Fatalf("password sign-in under require_sso: %d\n%s", p.Code, p.Body)
	}
	if got := actions(e.auditOf("provider:password")); got != "sso.refused" {
		t.Fatalf("audit: %q", got)
	}
}

// Logging out of a provider's session ends ours and sends the browser to
// the provider's end_session_endpoint.
func TestSSOLogoutEndsProviderSession(t *testing.T) {
	t.Parallel()
	e, op := ssoEnv(t, nil)
	b := e.browser()
	b.ssoSignIn(op, "bob", "bob-pw")
	p := b.post("/logout", nil)
	m := regexp.MustCompile(`id="end-session" href="([^"]+)"`).FindStringSubmatch(p.Body)
	if p.Code != http.StatusOK || m == nil {
		t.Fatalf("logout: %d\n%s", p.Code, p.Body)
	}
	end := html.UnescapeString(m[1])
	if !strings.HasPrefix(end, op.Issuer) || !strings.Contains(end, "post_logout_redirect_uri=") {
		t.Fatalf("logout sends the browser to %q", end)
	}
	if p := b.get("/api/v1/me"); p.Code != http.StatusUnauthorized {
		t.Fatalf("after logout /me answers %d", p.Code)
	}
	if p := b.abs(http.MethodGet, end, nil); p.Code != http.StatusFound || !strings.HasSuffix(p.Location, "/login") {
		t.Fatalf("the provider's end_session: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
}

// ldapEnv is the console with the test directory (package ldaptest):
// lena in jj-ops (operator of a with scripts) and staff (viewer of b).
func ldapEnv(t *testing.T) (*env, *ldaptest.Server) {
	t.Helper()
	d := ldaptest.StartTest(t, []ldaptest.User{{UID: "lena", Name: "Lena Ldap", Password: "lena-pw"}},
		[]ldaptest.Group{{Name: "jj-ops", Members: []string{"lena"}}, {Name: "staff", Members: []string{"lena"}}})
	e := newEnv(t, func(cfg *api.Config, _ string) {
		c := &sso.Config{LDAP: &sso.LDAPConfig{Name: "Corporate directory", URL: d.URL, CAFile: d.CAFile,
			BindDN: ldaptest.ServiceDN, BindPassword: ldaptest.ServicePass, UserBase: ldaptest.UserBase, GroupBase: ldaptest.GroupBase,
			Mapping: sso.Mapping{Grants: []sso.GrantRule{
				{From: "jj-ops", Group: "a", Role: "operator", Scripts: true},
				{From: "staff", Group: "b", Role: "viewer"},
			}}}}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		ps, err := sso.New(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg.SSO = ps
	})
	return e, d
}

func ldapForm(name, pw string) url.Values {
	return url.Values{"provider": {"ldap"}, "name": {name}, "password": {pw}, "next": {"/"}}
}

// Signing in on the same form against the directory: the groups map to
// grants at each sign-in; a wrong password and an injection attempt in
// the name are refused with a clear message and an audit row.
func TestLDAPSignInThroughTheForm(t *testing.T) {
	t.Parallel()
	e, d := ldapEnv(t)
	b := e.browser()
	if p := b.open("/login"); !strings.Contains(p.Body, `<option value="ldap"`) || !strings.Contains(p.Body, "Corporate directory") {
		t.Fatalf("the sign-in form offers no directory:\n%s", p.Body)
	}
	if p := b.post("/login", ldapForm("lena", "lena-pw")); p.Code != http.StatusSeeOther {
		t.Fatalf("directory sign-in: %d\n%s", p.Code, p.Body)
	}
	if me := b.me(); len(me.Grants) != 2 || me.Grants[0] != (apiv1.Grant{Group: "a", Role: "operator", Scripts: true}) ||
		me.Grants[1] != (apiv1.Grant{Group: "b", Role: "viewer"}) {
		t.Fatalf("lena's grants: %+v", me.Grants)
	}
	if u, err := e.st.GetUser(context.Background(), "lena"); err != nil || u.Provider != "ldap" {
		t.Fatalf("lena: %+v, %v", u, err)
	}

	p := e.browser().post("/login", ldapForm("lena", "not-her-password"))
	if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "wrong user name or password") {
		t.Fatalf("wrong password: %d\n%s", p.Code, p.Body)
	}
	p = e.browser().post("/login", ldapForm("*)(uid=*", "lena-pw"))
	if p.Code != http.StatusUnauthorized || !strings.Contains(p.Body, "would change the directory search") {
		t.Fatalf("injection attempt: %d\n%s", p.Code, p.Body)
	}
	rows := e.auditOf("provider:ldap")
	if len(rows) != 2 || rows[0].Actor != "lena" || !strings.Contains(string(rows[0].After), "wrong user name or password") ||
		rows[1].Actor != "anonymous" || !strings.Contains(string(rows[1].After), "characters such as") {
		for _, r := range rows {
			t.Logf("%s %s %s", r.Actor, r.Action, r.After)
		}
		t.Fatalf("audit of the refusals: %d rows", len(rows))
	}
	for _, r := range rows {
		if strings.Contains(string(r.After), "lena-pw") || strings.Contains(string(r.After), "not-her-password") {
			t.Fatalf("audit row holds a password: %s", r.After)
		}
	}

	// Out of jj-ops in the directory: the next sign-in takes the grant away.
	d.SetMembers(t, "jj-ops", nil)
	b2 := e.browser()
	if p := b2.post("/login", ldapForm("lena", "lena-pw")); p.Code != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d\n%s", p.Code, p.Body)
	}
	if me := b2.me(); len(me.Grants) != 1 || me.Grants[0].Group != "b" {
		t.Fatalf("lena's grants after leaving jj-ops: %+v", me.Grants)
	}
}
