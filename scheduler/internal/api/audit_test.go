package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

func auditCount(t *testing.T, e *env) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM audit_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// lastAudit reads the newest audit entry of an action through the API.
func lastAudit(t *testing.T, e *env, action string) apiv1.AuditEntry {
	t.Helper()
	code, body := e.do("admin", "GET", "/api/v1/audit?limit=1&action="+action, nil)
	var l apiv1.AuditList
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Entries) != 1 {
		t.Fatalf("audit of %s: %d %s", action, code, body)
	}
	return l.Entries[0]
}

func field(t *testing.T, doc json.RawMessage, name string) any {
	t.Helper()
	if doc == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return m[name]
}

// Every kind of change writes one audit row with who, how, from where and
// the documents before and after; a change that fails writes none.
func TestAuditRowsForEveryMutation(t *testing.T) {
	e := newEnv(t)
	opKey := e.keys["operator"]
	var op apiv1.Me
	_, body := e.do("operator", "GET", "/api/v1/me", nil)
	_ = json.Unmarshal(body, &op)

	// Jobs, as the operator.
	code, body := e.do("operator", "POST", "/api/v1/jobs", jobSpec("a", "echo", "audited"))
	var j apiv1.Job
	if code != http.StatusCreated || json.Unmarshal(body, &j) != nil {
		t.Fatalf("create: %d %s", code, body)
	}
	spec := j.JobSpec
	spec.Description, spec.Version, spec.Jitter = "second", j.Version, apiv1.Duration(3*time.Second)
	if code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), spec); code != http.StatusOK {
		t.Fatalf("update: %d %s", code, body)
	}
	steps := []struct{ method, path string }{
		{"POST", fmt.Sprintf("/api/v1/jobs/%d/disable", j.ID)},
		{"POST", fmt.Sprintf("/api/v1/jobs/%d/enable", j.ID)},
		{"POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", j.ID)},
	}
	for _, s := range steps {
		if code, body := e.do("operator", s.method, s.path, nil); code >= 300 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, code, body)
		}
	}
	trig := lastAudit(t, e, "job.trigger")
	runID := int64(field(t, trig.After, "id").(float64))
	if code, body := e.do("operator", "POST", fmt.Sprintf("/api/v1/runs/%d/kill", runID), nil); code != http.StatusAccepted {
		t.Fatalf("kill: %d %s", code, body)
	}
	if code, body := e.do("operator", "DELETE", fmt.Sprintf("/api/v1/jobs/%d", j.ID), nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	keyAuth := "key:" + op.KeyPrefix
	for _, c := range []struct {
		action, target string
		field          string
		before, after  any
	}{
		{"job.create", fmt.Sprint("job:", j.ID), "description", nil, nil},
		{"job.update", fmt.Sprint("job:", j.ID), "description", nil, "second"},
		{"job.update", fmt.Sprint("job:", j.ID), "jitter", nil, "3s"},
		{"job.disable", fmt.Sprint("job:", j.ID), "enabled", true, false},
		{"job.enable", fmt.Sprint("job:", j.ID), "enabled", false, true},
		{"job.trigger", fmt.Sprint("job:", j.ID), "status", nil, "SCHEDULED"},
		{"run.kill", fmt.Sprint("run:", runID), "status", "SCHEDULED", "CANCELLED"},
		{"job.delete", fmt.Sprint("job:", j.ID), "description", "second", nil},
	} {
		a := lastAudit(t, e, c.action)
		if a.Actor != "operator" || a.Auth != keyAuth || a.Target != c.target || a.Group != "a" || a.Client != "127.0.0.1" {
			t.Errorf("%s: %+v, want actor operator by %s on %s in group a from 127.0.0.1", c.action, a, keyAuth, c.target)
		}
		if got := field(t, a.Before, c.field); got != c.before {
			t.Errorf("%s: before.%s = %v, want %v (%s)", c.action, c.field, got, c.before, a.Before)
		}
		if got := field(t, a.After, c.field); got != c.after {
			t.Errorf("%s: after.%s = %v, want %v (%s)", c.action, c.field, got, c.after, a.After)
		}
	}
	// The job's history is its revisions, newest first, and outlives it.
	code, body = e.do("viewerA", "GET", fmt.Sprintf("/api/v1/jobs/%d/history", j.ID), nil)
	var h apiv1.AuditList
	if code != http.StatusOK || json.Unmarshal(body, &h) != nil {
		t.Fatalf("history: %d %s", code, body)
	}
	var actions []string
	for _, en := range h.Entries {
		actions = append(actions, en.Action)
	}
	if got := strings.Join(actions, ","); got != "job.delete,job.enable,job.disable,job.update,job.create" {
		t.Errorf("history of the deleted job: %s", got)
	}
	if code, _ := e.do("viewerB", "GET", fmt.Sprintf("/api/v1/jobs/%d/history", j.ID), nil); code != http.StatusNotFound {
		t.Errorf("history as a viewer of another group: %d, want 404", code)
	}

	// Groups, users, grants, keys, as the admin.
	admin := []struct {
		method, path string
		body         any
		action       string
	}{
		{"POST", "/api/v1/groups", apiv1.Group{Name: "c", CommandHandlers: []string{"sql"}}, "group.create"},
		{"POST", "/api/v1/users", apiv1.UserCreate{Name: "dora", Password: "a long enough password"}, "user.create"},
		{"POST", "/api/v1/users/dora/grants", apiv1.Grant{Group: "c", Role: "operator", Scripts: true}, "grant.set"},
		{"PATCH", "/api/v1/users/dora", apiv1.UserPatch{DisplayName: ptr("Dora")}, "user.update"},
		{"POST", "/api/v1/keys", apiv1.KeyCreate{Name: "dora's ci", User: "dora"}, "key.create"},
		{"DELETE", "/api/v1/users/dora/grants?group=c", nil, "grant.delete"},
		{"DELETE", "/api/v1/users/dora", nil, "user.delete"},
	}
	for _, s := range admin {
		code, body := e.do("admin", s.method, s.path, s.body)
		if code >= 300 {
			t.Fatalf("%s %s: %d %s", s.method, s.path, code, body)
		}
		a := lastAudit(t, e, s.action)
		if a.Actor != "admin" || !strings.HasPrefix(a.Auth, "key:") {
			t.Errorf("%s: actor %q by %q", s.action, a.Actor, a.Auth)
		}
		if strings.Contains(string(a.After), "argon2") || strings.Contains(string(a.After), "secret") {
			t.Errorf("%s: a secret in the audit log: %s", s.action, a.After)
		}
	}
	if a := lastAudit(t, e, "user.update"); field(t, a.Before, "display_name") != nil || field(t, a.After, "display_name") != "Dora" {
		t.Errorf("user.update: %s → %s", a.Before, a.After)
	}
	if a := lastAudit(t, e, "grant.set"); field(t, a.After, "role") != "operator" || a.Group != "c" {
		t.Errorf("grant.set: %+v", a)
	}
	// Revoking a key, as its owner.
	k := e.newKey("operator", nil)
	if code, _ := e.doToken(opKey, "DELETE", fmt.Sprintf("/api/v1/keys/%d", k.ID), nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	if a := lastAudit(t, e, "key.revoke"); a.Actor != "operator" || field(t, a.Before, "revoked_at") != nil || field(t, a.After, "revoked_at") == nil {
		t.Errorf("key.revoke: %+v", a)
	}

	// Failed changes write nothing.
	before := auditCount(t, e)
	j2 := e.job("a", "echo")
	before++ // the fixture's own job.create
	stale := jobSpec("a", "echo", j2.Name)
	stale.Version = j2.Version + 5
	bad := jobSpec("a", "echo", "x")
	bad.ChildJobIDs = []int64{999999}
	cycle := jobSpec("a", "echo", j2.Name)
	cycle.Version, cycle.ChildJobIDs = j2.Version, []int64{j2.ID}
	ended := e.newRun(j2.ID)
	before++ // and its trigger
	if _, err := e.pool.Exec(context.Background(), `UPDATE job_runs SET status = 'SUCCEEDED' WHERE id = $1`, ended); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		method, path string
		body         any
		code         int
	}{
		{"PUT", fmt.Sprintf("/api/v1/jobs/%d", j2.ID), stale, http.StatusConflict},
		{"POST", "/api/v1/jobs", bad, http.StatusBadRequest},
		{"PUT", fmt.Sprintf("/api/v1/jobs/%d", j2.ID), cycle, http.StatusBadRequest},
		{"POST", fmt.Sprintf("/api/v1/runs/%d/kill", ended), nil, http.StatusConflict},
		{"POST", "/api/v1/jobs", jobSpec("a", "echo", j2.Name), http.StatusConflict},
		{"POST", "/api/v1/users/nobody/grants", apiv1.Grant{Group: "a", Role: "viewer"}, http.StatusNotFound},
		{"POST", "/api/v1/users", apiv1.UserCreate{Name: "operator"}, http.StatusConflict},
	} {
		code, body := e.do("admin", f.method, f.path, f.body)
		if code != f.code {
			t.Errorf("%s %s: %d %s, want %d", f.method, f.path, code, body, f.code)
		}
	}
	if after := auditCount(t, e); after != before {
		t.Errorf("failed changes wrote %d audit rows, want none", after-before)
	}
}

func ptr[T any](v T) *T { return &v }

// Two operators PUT the same version at once: exactly one wins, the other
// is told the job changed (409 with the current version).
func TestConcurrentPutsOneWins(t *testing.T) {
	e := newEnv(t)
	j := e.job("a", "echo")
	const n = 8
	codes := make([]int, n)
	bodies := make([][]byte, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := jobSpec("a", "echo", j.Name)
			spec.Description, spec.Version = fmt.Sprint("editor ", i), j.Version
			<-start
			codes[i], bodies[i] = e.do("operator", "PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), spec)
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i := range n {
		switch codes[i] {
		case http.StatusOK:
			won++
		case http.StatusConflict:
			var er apiv1.Error
			if json.Unmarshal(bodies[i], &er) != nil || er.CurrentVersion != j.Version+1 {
				t.Errorf("409 %s: want current_version %d", bodies[i], j.Version+1)
			}
		default:
			t.Errorf("PUT %d: %d %s", i, codes[i], bodies[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d PUTs won, want exactly 1", won)
	}
	// If-Match works as the body's version; none at all is refused.
	spec := jobSpec("a", "echo", j.Name)
	if code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), spec); code != http.StatusPreconditionRequired {
		t.Errorf("PUT without a version: %d %s, want 428", code, body)
	}
	if code, body := e.do("operator", "PUT", fmt.Sprintf("/api/v1/jobs/%d", j.ID), spec, "If-Match", fmt.Sprintf(`"%d"`, j.Version+1)); code != http.StatusOK {
		t.Errorf("PUT with If-Match: %d %s", code, body)
	}
}

// Revoked and expired keys, and keys of disabled users, are refused; the
// stored form is not the secret.
func TestKeys(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	code, body := e.do("operator", "POST", "/api/v1/keys", apiv1.KeyCreate{Name: "laptop"})
	var k apiv1.CreatedKey
	if code != http.StatusCreated || json.Unmarshal(body, &k) != nil || !strings.HasPrefix(k.Secret, "jj_"+k.Prefix+"_") {
		t.Fatalf("create key: %d %s", code, body)
	}
	if code, _ := e.doToken(k.Secret, "GET", "/api/v1/me", nil); code != http.StatusOK {
		t.Fatalf("new key: %d", code)
	}
	var stored []byte
	var prefix string
	if err := e.pool.QueryRow(ctx, `SELECT prefix, secret_sha256 FROM api_keys WHERE id = $1`, k.ID).Scan(&prefix, &stored); err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimPrefix(k.Secret, "jj_"+prefix+"_")
	if strings.Contains(string(stored), secret) || len(stored) != 32 {
		t.Errorf("stored %x: want a SHA-256, not the secret", stored)
	}
	var leaks int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE after::text LIKE '%' || $1 || '%'`, secret).Scan(&leaks); err != nil || leaks != 0 {
		t.Errorf("the secret is in %d audit rows (%v)", leaks, err)
	}
	// The listing shows it without the secret.
	_, body = e.do("operator", "GET", "/api/v1/keys", nil)
	if strings.Contains(string(body), secret) || !strings.Contains(string(body), k.Prefix) {
		t.Errorf("key listing: %s", body)
	}
	// A wrong secret with the right prefix.
	if code, _ := e.doToken(k.Secret[:len(k.Secret)-2]+"xx", "GET", "/api/v1/me", nil); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d, want 401", code)
	}
	// Revoked.
	if code, _ := e.do("operator", "DELETE", fmt.Sprintf("/api/v1/keys/%d", k.ID), nil); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	if code, _ := e.doToken(k.Secret, "GET", "/api/v1/me", nil); code != http.StatusUnauthorized {
		t.Errorf("revoked key: %d, want 401", code)
	}
	// Expired.
	soon := time.Now().Add(time.Hour)
	x := e.newKey("operator", &soon)
	if code, _ := e.doToken(x.Secret, "GET", "/api/v1/me", nil); code != http.StatusOK {
		t.Fatalf("key before expiry: %d", code)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, x.ID); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.doToken(x.Secret, "GET", "/api/v1/me", nil); code != http.StatusUnauthorized {
		t.Errorf("expired key: %d, want 401", code)
	}
	if code, _ := e.do("operator", "POST", "/api/v1/keys", apiv1.KeyCreate{Name: "old", ExpiresAt: ptr(time.Now().Add(-time.Minute))}); code != http.StatusBadRequest {
		t.Errorf("key expiring in the past: %d, want 400", code)
	}
	// A disabled user's keys stop working.
	if code, _ := e.do("admin", "PATCH", "/api/v1/users/viewerA", apiv1.UserPatch{Disabled: ptr(true)}); code != http.StatusOK {
		t.Fatal("disable viewerA")
	}
	if code, _ := e.do("viewerA", "GET", "/api/v1/me", nil); code != http.StatusUnauthorized {
		t.Errorf("key of a disabled user: %d, want 401", code)
	}
	// Garbage, and the bootstrap token (admin "bootstrap").
	for _, tok := range []string{"nope", "jj_aaaaaaaa_" + strings.Repeat("A", 43)} {
		if code, _ := e.doToken(tok, "GET", "/api/v1/me", nil); code != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401", tok, code)
		}
	}
	code, body = e.doToken(bootstrapToken, "GET", "/api/v1/me", nil)
	var me apiv1.Me
	if code != http.StatusOK || json.Unmarshal(body, &me) != nil || me.Name != "bootstrap" || !me.Admin || me.Auth != "bootstrap" {
		t.Errorf("bootstrap token: %d %s", code, body)
	}
}

// Reads are filtered by the caller's groups; another group's run and its
// logs are not found, whatever the id.
func TestReadsFilteredByGroup(t *testing.T) {
	e := newEnv(t)
	jb := e.job("b", "echo")
	runB := e.newRun(jb.ID)
	type list struct {
		Jobs    []apiv1.Job       `json:"jobs"`
		Runs    []apiv1.Run       `json:"runs"`
		Groups  []json.RawMessage `json:"groups"`
		Workers []apiv1.Worker    `json:"workers"`
		Rows    []apiv1.StatsRow  `json:"rows"`
		Other   map[string]any    `json:"-"`
	}
	for _, c := range []struct{ who, group string }{{"viewerA", "a"}, {"viewerB", "b"}} {
		for _, path := range []string{"/api/v1/jobs", "/api/v1/runs", "/api/v1/workers", "/api/v1/stats", "/api/v1/groups"} {
			code, body := e.do(c.who, "GET", path, nil)
			if code != http.StatusOK {
				t.Fatalf("%s %s: %d %s", c.who, path, code, body)
			}
			var l list
			_ = json.Unmarshal(body, &l)
			n := 0
			check := func(g string) {
				n++
				if g != c.group {
					t.Errorf("%s %s: an item of group %s", c.who, path, g)
				}
			}
			for _, x := range l.Jobs {
				check(x.Group)
			}
			for _, x := range l.Runs {
				check(x.Group)
			}
			for _, x := range l.Workers {
				check(x.Group)
			}
			for _, x := range l.Rows {
				check(x.Group)
			}
			for _, raw := range l.Groups {
				var g struct{ Name, Group string }
				_ = json.Unmarshal(raw, &g)
				check(g.Name + g.Group)
			}
			if n == 0 {
				t.Errorf("%s %s: nothing listed, want the items of group %s: %s", c.who, path, c.group, body)
			}
		}
	}
	for _, path := range []string{fmt.Sprintf("/api/v1/runs/%d", runB), fmt.Sprintf("/api/v1/runs/%d/logs", runB),
		fmt.Sprintf("/api/v1/jobs/%d/runs", jb.ID), fmt.Sprintf("/api/v1/runs/%d", runB+1000)} {
		code, body := e.do("viewerA", "GET", path, nil)
		if code != http.StatusNotFound || strings.Contains(string(body), `"b"`) {
			t.Errorf("viewerA %s: %d %s, want a bare 404", path, code, body)
		}
	}
}
