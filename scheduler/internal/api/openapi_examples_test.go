package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
)

// TestOpenAPIExamplesAccepted sends every request example of the
// committed OpenAPI document, as it is written there, to a fresh API, in
// the order a user would (a group, its user, a login, a job and its
// trigger, a workflow of its jobs, a channel and a rule on it): each must
// succeed, so that the examples a client copies work. An operation with
// an example that is not in this sequence fails the test.
func TestOpenAPIExamplesAccepted(t *testing.T) {
	e := newEnv(t)
	doc, err := openapi3.NewLoader().LoadFromData([]byte(apiv1.OpenAPI()))
	if err != nil {
		t.Fatal(err)
	}
	var job apiv1.Job
	steps := []struct {
		pattern string
		who     string
		path    func() string
		out     any
	}{
		{"POST /api/v1/groups", "admin", nil, nil},
		{"POST /api/v1/users", "admin", nil, nil},
		{"POST /api/v1/login", "", nil, nil},
		{"POST /api/v1/jobs", "admin", nil, &job},
		{"POST /api/v1/jobs/{id}/trigger", "admin", func() string { return fmt.Sprintf("/api/v1/jobs/%d/trigger", job.ID) }, nil},
		{"POST /api/v1/runs/bulk", "admin", nil, nil},
		{"POST /api/v1/workflows", "admin", nil, nil},
		{"POST /api/v1/channels", "admin", nil, nil},
		{"POST /api/v1/alert-rules", "admin", nil, nil},
		{"POST /api/v1/groups/{name}/pause", "admin", func() string { return "/api/v1/groups/billing/pause" }, nil},
		{"PATCH /api/v1/groups/{name}", "admin", func() string { return "/api/v1/groups/billing" }, nil},
	}
	sent := map[string]bool{}
	for _, st := range steps {
		if st.pattern == "POST /api/v1/workflows" {
			// The jobs the example's nodes name.
			apitest.Job(t, e.st, "billing", "extract", "echo")
			apitest.Job(t, e.st, "billing", "load", "echo")
		}
		method, path, _ := strings.Cut(st.pattern, " ")
		ex := example(doc, method, path)
		if ex == nil {
			t.Fatalf("%s has no request example in the document", st.pattern)
		}
		sent[st.pattern] = true
		if st.path != nil {
			path = st.path()
		}
		a := e.call(e.keys[st.who], method, path, json.RawMessage(ex))
		if a.code/100 != 2 {
			t.Fatalf("the example of %s (%s): %d %s", st.pattern, ex, a.code, a.body)
		}
		if st.out != nil {
			if err := json.Unmarshal([]byte(a.body), st.out); err != nil {
				t.Fatal(err)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if example(doc, method, path) != nil && !sent[method+" "+path] {
				t.Errorf("%s %s has a request example that this test does not send: add it to the steps", method, path)
			}
		}
	}
}

// example is the JSON request example of an operation, nil if none.
func example(doc *openapi3.T, method, path string) []byte {
	item := doc.Paths.Value(path)
	if item == nil {
		return nil
	}
	op := item.GetOperation(method)
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Example == nil {
		return nil
	}
	b, _ := json.Marshal(mt.Example)
	return b
}
