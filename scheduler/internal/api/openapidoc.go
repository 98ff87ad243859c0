package api

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/openapi"
)

// openAPI serves the committed OpenAPI document (apiv1.OpenAPI): public,
// since it describes the API and holds no data.
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_, err := w.Write([]byte(apiv1.OpenAPI()))
	return err
}

// undocumented are the routes the OpenAPI document leaves out, and why.
var undocumented = map[string]string{
	"/api/": "the catch-all answering 404/405 for paths no route matches",
}

// openAPISpec is what the document says besides its operations.
func openAPISpec() openapi.Spec {
	return openapi.Spec{
		Title:   "jetjob API",
		Version: "1",
		Description: "The HTTP API of jetjob's scheduler, generated from its route table and the Go types of " +
			"package scheduler/apiv1 (docs/api.md). Request bodies are JSON (whatever their Content-Type says), decoded strictly: an unknown field answers 400.",
		Security: map[string]any{
			"apiKey": map[string]any{"type": "http", "scheme": "bearer",
				"description": "An API key (jj_<prefix>_<secret>, POST /api/v1/keys), or the JETJOB_API_TOKEN break-glass token."},
			"session": map[string]any{"type": "apiKey", "in": "cookie", "name": sessionCookie,
				"description": "The session cookie POST /api/v1/login sets (browsers: same-origin requests only)."},
		},
		PathParams: map[string]openapi.Param{
			"id":   {Type: "integer", Description: "the record's id"},
			"name": {Description: "the user's name"},
			"v":    {Type: "integer", Description: "the script version's number"},
		},
		Error: apiv1.Error{},
		ErrorDescription: "Every answer that is not a success: 400 invalid input (naming every problem), 401 no or " +
			"wrong credentials, 403 a permission lacking (named in permission), 404 not found or not readable by the " +
			"caller, 405 a known path with another method, 409 a conflict (a stale version: current_version), 410 a used or expired set-password link, 413 a " +
			"body over 1 MiB, 429 too many attempts, 500, 503 a dependency unavailable.",
		Special: map[reflect.Type]map[string]any{
			reflect.TypeFor[apiv1.Duration](): {"type": "string", "examples": []string{"30s", "1h30m"},
				"description": "A Go duration: a sequence of decimal numbers with units ns, us, ms, s, m, h."},
		},
	}
}

// openAPIOperations joins a route table with its documentation (apiDocs
// for routeTable): the operations of the document, each with its route's
// permission. An error names every route without an entry and every
// entry without a route, and says what to do.
func openAPIOperations(table []route, entries []openapi.Operation) ([]openapi.Operation, error) {
	docs := map[string]openapi.Operation{}
	for _, d := range entries {
		docs[d.Pattern] = d
	}
	var ops []openapi.Operation
	var problems []string
	routed := map[string]bool{}
	for _, rt := range table {
		routed[rt.pattern] = true
		if _, skip := undocumented[rt.pattern]; skip {
			continue
		}
		d, ok := docs[rt.pattern]
		if !ok {
			problems = append(problems, fmt.Sprintf("route %q has no documentation: add an entry "+
				"{Pattern: %q, Summary: \"...\", Query: ..., Body: apiv1.X{}, Status: ..., Response: apiv1.Y{}} to apiDocs "+
				"in scheduler/internal/api/openapi.go, then run `make openapi`", rt.pattern, rt.pattern))
			continue
		}
		d.Public = rt.rule.Public()
		d.Description = strings.TrimSpace(d.Description + "\n\nPermission: " + rt.rule.String() + ".")
		ops = append(ops, d)
	}
	for _, d := range entries {
		if !routed[d.Pattern] {
			problems = append(problems, fmt.Sprintf("apiDocs documents %q, which routeTable does not serve: "+
				"remove the entry or correct its pattern", d.Pattern))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return nil, fmt.Errorf("the OpenAPI table and the routes disagree:\n%s", strings.Join(problems, "\n"))
	}
	return ops, nil
}
