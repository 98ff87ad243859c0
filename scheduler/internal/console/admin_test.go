package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// An admin creates a user, grants them a group with scripts, removes the
// grant, disables them; the user's sign-in follows each change. Nobody
// else reaches the users pages.
func TestUsersPages(t *testing.T) {
	e := newEnv(t)
	admin := e.browser().login("admin")
	mustContain(t, admin.open("/users"), `id="user-row-operator"`, "operator+scripts of a", `id="new-user-form"`)

	// A refused user comes back with what was typed, never the password.
	p := admin.post("/users", url.Values{"name": {"bad name"}, "display_name": {"Bea"}, "password": {password}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad user name: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="field-error-user"`, `value="bad name"`, `value="Bea"`)
	mustLack(t, p, password)

	p = admin.post("/users", url.Values{"name": {"bea"}, "display_name": {"Bea"}, "password": {password}})
	if p.Code != http.StatusSeeOther || p.Location != "/users/bea?notice=user-created" {
		t.Fatalf("create user: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	mustContain(t, admin.get(p.Location), "User created.", `id="no-grants"`)
	p = admin.post("/users/bea/grants", url.Values{"group": {"a"}, "role": {"operator"}, "scripts": {"on"}})
	if p.Code != http.StatusSeeOther {
		t.Fatalf("set grant: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, admin.get(p.Location), `id="grant-row-a"`, "Grant saved.")
	bea := e.browser().login("bea")
	mustContain(t, bea.open("/"), `id="user-role">operator&#43;scripts of a<`)
	// A user who is not an admin has no users page, nor the nav link.
	mustLack(t, bea.get("/jobs"), `href="/users"`, `href="/audit"`)
	bea.expect("/users", http.StatusForbidden)
	bea.expect("/audit", http.StatusForbidden)

	if p = admin.post("/users/bea/grants/delete", url.Values{"group": {"a"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("remove grant: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, admin.get("/users/bea"), `id="no-grants"`)
	if p = admin.post("/users/bea", url.Values{"disabled": {"true"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("disable: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, admin.get("/users/bea"), `id="user-enable"`, "disabled")
	// Disabling ended bea's session: the next page is the sign-in.
	if p = bea.get("/jobs"); p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/login") {
		t.Fatalf("a disabled user's page: %d → %q", p.Code, p.Location)
	}
}

// Everyone manages their own keys; the secret is shown once, on the
// answer to the form, and revoking stops it working.
func TestKeysPage(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	mustContain(t, op.open("/keys"), `id="no-keys"`, `id="new-key-form"`)
	mustLack(t, op.get("/keys"), `id="keys-owner"`) // only admins choose whose keys

	p := op.post("/keys", url.Values{"name": {"ci deploys"}, "user": {"operator"}, "expires_days": {"30"}})
	if p.Code != http.StatusCreated {
		t.Fatalf("create key: %d\n%s", p.Code, p.Body)
	}
	secret := regexp.MustCompile(`id="key-secret" class="secret">([^<]+)<`).FindStringSubmatch(p.Body)
	if secret == nil {
		t.Fatalf("no secret on the created key's page:\n%s", p.Body)
	}
	id := regexp.MustCompile(`id="key-row-(\d+)"`).FindStringSubmatch(p.Body)
	if id == nil {
		t.Fatalf("the new key is not listed:\n%s", p.Body)
	}
	if code := apiStatus(t, e, secret[1]); code != http.StatusOK {
		t.Fatalf("the new key answers %d, want 200", code)
	}
	// Shown once: the list afterwards holds only the prefix.
	mustLack(t, op.get("/keys"), secret[1], `id="key-secret"`)
	// An operator may not make a key for someone else: the API's words.
	p = op.post("/keys", url.Values{"name": {"theirs"}, "user": {"viewer"}})
	if p.Code != http.StatusForbidden {
		t.Fatalf("a key for another user: %d, want 403", p.Code)
	}
	p = op.post("/keys/"+id[1]+"/revoke", url.Values{"user": {"operator"}})
	if p.Code != http.StatusSeeOther || p.Location != "/keys?user=operator&notice=key-revoked" {
		t.Fatalf("revoke: %d → %q", p.Code, p.Location)
	}
	mustContain(t, op.get(p.Location), "Key revoked", "revoked ")
	if code := apiStatus(t, e, secret[1]); code != http.StatusUnauthorized {
		t.Fatalf("the revoked key answers %d, want 401", code)
	}
	// An admin sees anyone's keys.
	admin := e.browser().login("admin")
	mustContain(t, admin.get("/keys?user=operator"), `id="keys-owner"`, "API keys of operator", "ci deploys")
}

// apiStatus is the status of GET /api/v1/me with key.
func apiStatus(t *testing.T, e *env, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The audit page filters by who, action and group, and pages back.
func TestAuditPage(t *testing.T) {
	e := newEnv(t)
	admin := e.browser().login("admin")
	for i := range 3 {
		admin.post("/groups", url.Values{"name": {fmt.Sprintf("g%d", i)}})
	}
	op := e.browser().login("operator")
	j := e.job("a", "echo")
	op.post(fmt.Sprintf("/jobs/%d/trigger", j.ID), url.Values{})
	p := admin.open("/audit?actor=operator")
	mustContain(t, p, `id="audit-table"`, "job.trigger", fmt.Sprintf(`href="/jobs/%d"`, j.ID))
	mustLack(t, p, "group.create")
	p = admin.get("/audit?action=group.create")
	mustContain(t, p, "group:g0", "group:g2")
	mustLack(t, p, "job.trigger")
	mustContain(t, admin.get("/audit?group=a&action=job.trigger"), "job.trigger", `<option selected>a</option>`)
	mustContain(t, admin.get("/audit?group=b&action=job.trigger"), `id="no-entries"`)
	// A time filter as the form sends it (datetime-local, UTC).
	future := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04")
	mustContain(t, admin.get("/audit?from="+url.QueryEscape(future)), `id="no-entries"`)
}

// The backfills page lists the readable groups' operations with their
// progress; an operator cancels a running one.
func TestBackfillsPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ja, jb := e.job("a", "echo"), e.job("b", "echo")
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ba, err := e.st.CreateBackfill(ctx, store.System, ja, from, from.AddDate(0, 0, 3), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.st.CreateBackfill(ctx, store.System, jb, from, from.AddDate(0, 0, 5), 5); err != nil {
		t.Fatal(err)
	}
	op := e.browser().login("operator")
	p := op.open("/backfills")
	mustContain(t, p, fmt.Sprintf(`id="backfill-row-%d" data-state="running"`, ba.ID), "0 / 3",
		fmt.Sprintf(`id="backfill-cancel-%d"`, ba.ID))
	mustLack(t, p, "0 / 5") // group b's is not the operator's
	p = op.post(fmt.Sprintf("/backfills/%d/cancel", ba.ID), nil)
	if p.Code != http.StatusSeeOther {
		t.Fatalf("cancel: %d\n%s", p.Code, p.Body)
	}
	p = op.get("/backfills?state=cancelled")
	mustContain(t, p, fmt.Sprintf(`id="backfill-row-%d" data-state="cancelled"`, ba.ID))
	mustLack(t, p, fmt.Sprintf(`id="backfill-cancel-%d"`, ba.ID))
	mustContain(t, op.get("/backfills?state=running"), `id="no-backfills"`)
	// A viewer sees it but cannot cancel: the API's 403.
	v := e.browser().login("viewerB")
	if p = v.post(fmt.Sprintf("/backfills/%d/cancel", ba.ID), nil); p.Code != http.StatusNotFound && p.Code != http.StatusForbidden {
		t.Fatalf("another group's viewer cancelling: %d", p.Code)
	}
}

// The statistics page draws the report's days: bars by status, the
// success rate and durations, and sums each group up.
func TestStatsPage(t *testing.T) {
	e := newEnv(t)
	ja := e.job("a", "echo")
	e.finishedRuns(ja, "SUCCEEDED", "SUCCEEDED", "SUCCEEDED", "FAILED")
	admin := e.browser().login("admin")
	p := admin.open("/stats")
	mustContain(t, p, `id="stats-runs"`, `id="stats-success"`, `id="stats-durations"`, `id="stats-group-a"`,
		"<td>4</td><td>3</td>", "75.0 %", `data-series="p99"`)
	mustLack(t, p, `id="stats-group-b"`)
	// A group without runs in the range says so.
	mustContain(t, admin.get("/stats?group=b"), `id="no-stats"`)
	// A range the API refuses shows its words.
	p = admin.expect("/stats?from=2026-05-01&to=2026-04-01", http.StatusBadRequest)
	mustContain(t, p, "is after")
}
