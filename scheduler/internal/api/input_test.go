package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A body over the 1 MiB limit answers 413 whoever sends it, with its length
// known up front or chunked. The routes whose permission rule looks into
// the body (the job's group and handler, the key's user) used to read a
// truncated copy and answer 400 "malformed JSON" to everyone but admins.
// Anonymous callers get 401 before any body is read.
func TestOversizedBodyAnswers413ForEveryCaller(t *testing.T) {
	e := newEnv(t)
	big := `{"group":"a","name":"big","handler":"echo","schedule_type":"none","description":"` + strings.Repeat("x", 1<<20) + `"}`
	routes := []struct{ method, path string }{
		{"POST", "/api/v1/jobs"},
		{"PUT", fmt.Sprintf("/api/v1/jobs/%d", e.plain.ID)},
		{"POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", e.plain.ID)},
		{"POST", "/api/v1/keys"},
		{"POST", "/api/v1/groups"},
	}
	for _, who := range principals {
		for _, rt := range routes {
			for _, chunked := range []bool{false, true} {
				name := fmt.Sprintf("%s %s as %q chunked=%v", rt.method, rt.path, who, chunked)
				var body io.Reader = strings.NewReader(big)
				if chunked {
					body = io.MultiReader(body) // no length: sent chunked
				}
				req, err := http.NewRequest(rt.method, e.srv.URL+rt.path, body)
				if err != nil {
					t.Fatal(err)
				}
				if who != "" {
					req.Header.Set("Authorization", "Bearer "+e.keys[who])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := http.StatusRequestEntityTooLarge
				if who == "" {
					want = http.StatusUnauthorized
				}
				if resp.StatusCode != want {
					t.Errorf("%s: %d, want %d: %.200s", name, resp.StatusCode, want, b)
				}
			}
		}
	}
}

// An id has one spelling, also in If-Match: "+3" and "03" are refused
// like any other malformed version.
func TestIfMatchTakesCanonicalDecimalOnly(t *testing.T) {
	e := newEnv(t)
	path := fmt.Sprintf("/api/v1/jobs/%d", e.plain.ID)
	spec := jobSpec("a", "echo", e.plain.Name)
	for _, im := range []string{"+1", "01", `"+1"`, " 1e0"} {
		code, body := e.do("admin", "PUT", path, spec, "If-Match", im)
		var ae apiv1.Error
		_ = json.Unmarshal(body, &ae)
		if code != http.StatusBadRequest || !strings.Contains(ae.Error, "If-Match") {
			t.Errorf("If-Match %q: %d %s, want 400 naming If-Match", im, code, body)
		}
	}
	if code, body := e.do("admin", "PUT", path, spec, "If-Match", `"1"`); code != http.StatusOK {
		t.Errorf(`If-Match "1": %d %s, want 200`, code, body)
	}
}
