package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A user keeps their console language (issue #35): set with their own
// PATCH, canonical ("zh" is stored as zh-CN), shown by /me, cleared with "".
func TestUserLanguage(t *testing.T) {
	e := newEnv(t)
	me := func() apiv1.Me {
		t.Helper()
		code, body := e.do("operator", "GET", "/api/v1/me", nil)
		var m apiv1.Me
		if code != http.StatusOK || json.Unmarshal(body, &m) != nil {
			t.Fatalf("GET /me: %d %s", code, body)
		}
		return m
	}
	if got := me().Language; got != "" {
		t.Fatalf("a new user's language is %q, want none", got)
	}
	for _, tc := range []struct{ set, want string }{{"zh", "zh-CN"}, {"en", "en"}, {"", ""}} {
		if code, body := e.do("operator", "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Language: &tc.set}); code != http.StatusOK {
			t.Fatalf("set language %q: %d %s", tc.set, code, body)
		}
		if got := me().Language; got != tc.want {
			t.Fatalf("after setting %q, /me says %q, want %q", tc.set, got, tc.want)
		}
	}
	fr := "fr"
	if code, _ := e.do("operator", "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Language: &fr}); code != http.StatusBadRequest {
		t.Fatalf("language fr answered %d, want 400", code)
	}
	// Another user's language is theirs: a viewer cannot set the operator's.
	zh := "zh-CN"
	if code, _ := e.do("viewerA", "PATCH", "/api/v1/users/operator", apiv1.UserPatch{Language: &zh}); code != http.StatusForbidden {
		t.Fatalf("a viewer setting another's language answered %d, want 403", code)
	}
}
