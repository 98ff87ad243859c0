package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// answer is an HTTP answer: status, headers, body.
type answer struct {
	code int
	hdr  http.Header
	body string
}

// call sends a JSON request with the credential: "cookie:<session cookie>"
// or a bearer token.
func (e *env) call(cred, method, path string, body any) answer {
	e.t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.send(cred, method, path, bytes.NewReader(b))
}

// callEmpty is call without a body.
func (e *env) callEmpty(cred, method, path string) answer {
	e.t.Helper()
	return e.send(cred, method, path, nil)
}

func (e *env) send(cred, method, path string, body io.Reader) answer {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c, ok := strings.CutPrefix(cred, "cookie:"); ok {
		req.Header.Set("Cookie", "jetjob_session="+c)
	} else if cred != "" {
		req.Header.Set("Authorization", "Bearer "+cred)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(raw)}
}

// setPassword gives a user a password directly in the store.
func (e *env) setPassword(user, pw string) {
	e.t.Helper()
	h, err := auth.HashPassword(context.Background(), pw)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.UpdateUser(context.Background(), store.System, user, store.UserChange{PasswordHash: &h}); err != nil {
		e.t.Fatal(err)
	}
}

// session logs user in and returns "cookie:<value>", failing the test when
// the login is refused.
func (e *env) session(user, pw string) string {
	e.t.Helper()
	a := e.call("", "POST", "/api/v1/login", apiv1.LoginRequest{Name: user, Password: pw})
	for _, c := range (&http.Response{Header: a.hdr}).Cookies() {
		if c.Name == "jetjob_session" && c.Value != "" && a.code == http.StatusOK {
			return "cookie:" + c.Value
		}
	}
	e.t.Fatalf("login as %s: %d %s", user, a.code, a.body)
	return ""
}

// lastUserUpdate is the newest user.update audit entry of user.
func (e *env) lastUserUpdate(user string) map[string]any {
	e.t.Helper()
	code, body := e.do("admin", "GET", "/api/v1/audit?action=user.update&target=user:"+user, nil)
	var l apiv1.AuditList
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Entries) == 0 {
		e.t.Fatalf("audit of %s: %d %s", user, code, body)
	}
	var after map[string]any
	if err := json.Unmarshal(l.Entries[0].After, &after); err != nil {
		e.t.Fatal(err)
	}
	return after
}

// Changing one's own password needs the current one, checked like a login
// (limited, a wrong one counts); the change ends every session, the
// caller's too (its cookie is cleared), and is audited as "changed". An
// admin resets another user's password without it, audited as "reset";
// their own needs it like anyone's.
func TestPasswordChangeNeedsTheCurrentOne(t *testing.T) {
	e := newEnv(t)
	e.setPassword("operator", "the old password")
	sess := e.session("operator", "the old password")
	other := e.session("operator", "the old password")

	// A session alone cannot change the password.
	for _, c := range []struct {
		body apiv1.UserPatch
		code int
		want string
	}{
		{apiv1.UserPatch{Password: ptr("a stolen session's password")}, http.StatusBadRequest, "current_password is required"},
		{apiv1.UserPatch{Password: ptr("a stolen session's password"), CurrentPassword: ptr("a wrong guess!!")}, http.StatusForbidden, "not your password"},
		{apiv1.UserPatch{CurrentPassword: ptr("the old password")}, http.StatusBadRequest, "goes with password"},
	} {
		if a := e.call(sess, "PATCH", "/api/v1/users/operator", c.body); a.code != c.code || !strings.Contains(a.body, c.want) {
			t.Fatalf("PATCH %+v with a session: %d %s, want %d saying %q", c.body, a.code, a.body, c.code, c.want)
		}
	}
	e.session("operator", "the old password") // unchanged

	// With it, the password changes and every session ends.
	a := e.call(sess, "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Password: ptr("the new password"), CurrentPassword: ptr("the old password")})
	if a.code != http.StatusOK || !strings.Contains(strings.Join(a.hdr.Values("Set-Cookie"), ";"), "jetjob_session=;") {
		t.Fatalf("change with the current password: %d %s, cookies %q: want 200 clearing the session cookie", a.code, a.body, a.hdr.Values("Set-Cookie"))
	}
	for _, s := range []string{sess, other} {
		if a := e.call(s, "GET", "/api/v1/me", nil); a.code != http.StatusUnauthorized {
			t.Errorf("a session after the password change: %d, want 401", a.code)
		}
	}
	if a := e.call(e.keys["operator"], "GET", "/api/v1/me", nil); a.code != http.StatusOK {
		t.Errorf("the user's key after a change without revoke_credentials: %d, want 200", a.code)
	}
	e.session("operator", "the new password")
	if after := e.lastUserUpdate("operator"); after["password"] != "changed" {
		t.Errorf("audit of the change: %v, want password changed", after)
	}

	// An admin resets another user's password without theirs, and may not
	// pass one; their own password needs the current one.
	if a := e.call(e.keys["admin"], "PATCH", "/api/v1/users/viewerA", apiv1.UserPatch{Password: ptr("reset by the admin"), CurrentPassword: ptr("x")}); a.code != http.StatusBadRequest {
		t.Errorf("admin reset with a current_password: %d %s, want 400", a.code, a.body)
	}
	if a := e.call(e.keys["admin"], "PATCH", "/api/v1/users/viewerA", apiv1.UserPatch{Password: ptr("reset by the admin")}); a.code != http.StatusOK {
		t.Fatalf("admin reset: %d %s", a.code, a.body)
	}
	e.session("viewerA", "reset by the admin")
	if after := e.lastUserUpdate("viewerA"); after["password"] != "reset" {
		t.Errorf("audit of the reset: %v, want password reset", after)
	}
	e.setPassword("admin", "the admin's password")
	if a := e.call(e.keys["admin"], "PATCH", "/api/v1/users/admin", apiv1.UserPatch{Password: ptr("the admin's new one")}); a.code != http.StatusBadRequest {
		t.Errorf("an admin's own change without the current password: %d %s, want 400", a.code, a.body)
	}
	// Nobody else may reset it.
	if a := e.call(e.keys["operator"], "PATCH", "/api/v1/users/viewerA", apiv1.UserPatch{Password: ptr("an operator's idea")}); a.code != http.StatusForbidden {
		t.Errorf("an operator resetting another user: %d, want 403", a.code)
	}

	// Guessing the current password is the login's limit: after 5 wrong
	// ones, the right one is refused too, and so is a login.
	for range 5 {
		e.call(e.keys["operator"], "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Password: ptr("a guesser's password"), CurrentPassword: ptr("guess guess guess")})
	}
	a = e.call(e.keys["operator"], "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Password: ptr("a guesser's password"), CurrentPassword: ptr("the new password")})
	if a.code != http.StatusTooManyRequests || a.hdr.Get("Retry-After") == "" {
		t.Errorf("the right current password after 5 wrong ones: %d %s, want 429 with Retry-After", a.code, a.body)
	}
	if a := e.call("", "POST", "/api/v1/login", apiv1.LoginRequest{Name: "operator", Password: "the new password"}); a.code != http.StatusTooManyRequests {
		t.Errorf("a login after 5 wrong current passwords: %d, want 429", a.code)
	}
}

// revoke_credentials ends every session of the user and revokes every key
// of theirs, the caller's own included; the audit entry counts them.
func TestRevokeCredentials(t *testing.T) {
	e := newEnv(t)
	e.setPassword("operator", "the old password")
	sess := e.session("operator", "the old password")
	second := e.newKey("operator", nil).Secret

	// The user themself, with one of the keys: "sign out everywhere".
	if a := e.call(second, "PATCH", "/api/v1/users/operator", apiv1.UserPatch{RevokeCredentials: true}); a.code != http.StatusOK {
		t.Fatalf("revoke_credentials by the user: %d %s", a.code, a.body)
	}
	for what, cred := range map[string]string{"session": sess, "key": e.keys["operator"], "the caller's key": second} {
		if a := e.call(cred, "GET", "/api/v1/me", nil); a.code != http.StatusUnauthorized {
			t.Errorf("the %s after revoke_credentials: %d, want 401", what, a.code)
		}
	}
	after := e.lastUserUpdate("operator")
	if rev, _ := after["revoked"].(map[string]any); rev["sessions"] != 1.0 || rev["keys"] != 2.0 {
		t.Errorf("audit of the revocation: %v, want 1 session and 2 keys", after)
	}
	e.session("operator", "the old password") // the password still works

	// An admin, for another user, with a new password.
	if a := e.call(e.keys["admin"], "PATCH", "/api/v1/users/viewerB", apiv1.UserPatch{Password: ptr("a fresh start here"), RevokeCredentials: true}); a.code != http.StatusOK {
		t.Fatalf("reset with revoke_credentials: %d %s", a.code, a.body)
	}
	if a := e.call(e.keys["viewerB"], "GET", "/api/v1/me", nil); a.code != http.StatusUnauthorized {
		t.Errorf("viewerB's key after the admin revoked it: %d, want 401", a.code)
	}
	if a := e.call(e.keys["admin"], "GET", "/api/v1/me", nil); a.code != http.StatusOK {
		t.Errorf("the admin's own key: %d", a.code)
	}
}
