package api

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/openapi"
)

// update rewrites scheduler/apiv1/openapi.json (make openapi).
var update = flag.Bool("update", false, "rewrite scheduler/apiv1/openapi.json from the route table and the apiv1 types")

const openAPIFile = "../../apiv1/openapi.json"

// buildOpenAPI generates the document from routeTable, apiDocs and the
// apiv1 types (with their doc comments).
func buildOpenAPI(t *testing.T) []byte {
	t.Helper()
	ops, err := openAPIOperations((&Server{}).routeTable(), apiDocs)
	if err != nil {
		t.Fatal(err)
	}
	spec := openAPISpec()
	if spec.Docs, err = openapi.Comments("../../apiv1"); err != nil {
		t.Fatal(err)
	}
	b, err := openapi.Build(spec, ops)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every route is documented and every documentation entry is a route; a
// route added without an entry fails, naming it and what to add.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	table := (&Server{}).routeTable()
	ops, err := openAPIOperations(table, apiDocs)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != len(table)-len(undocumented) {
		t.Errorf("%d operations documented for %d routes", len(ops), len(table))
	}
	t.Logf("%d routes documented", len(ops))

	added := append(table[:len(table):len(table)], route{pattern: "POST /api/v1/new-thing", rule: auth.Authenticated()})
	_, err = openAPIOperations(added, apiDocs)
	if err == nil || !strings.Contains(err.Error(), `route "POST /api/v1/new-thing" has no documentation`) ||
		!strings.Contains(err.Error(), "apiDocs in scheduler/internal/api/openapi.go") {
		t.Errorf("a route without documentation: %v, want an error naming it and where to document it", err)
	}
	stale := append(apiDocs[:len(apiDocs):len(apiDocs)], openapi.Operation{Pattern: "GET /api/v1/gone", Summary: "gone"})
	_, err = openAPIOperations(table, stale)
	if err == nil || !strings.Contains(err.Error(), `"GET /api/v1/gone", which routeTable does not serve`) {
		t.Errorf("documentation of no route: %v, want an error naming it", err)
	}
}

// The committed document is the one the code generates: it cannot drift
// from the routes or the types.
func TestOpenAPIFileIsCurrent(t *testing.T) {
	got := buildOpenAPI(t)
	if *update {
		if err := os.WriteFile(openAPIFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := []byte(apiv1.OpenAPI()); !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("scheduler/apiv1/openapi.json is not what the route table and the apiv1 types generate "+
					"(line %d: committed %q, generated %q): run `make openapi` and commit it", i+1, wl[i], gl[i])
			}
		}
		t.Fatalf("scheduler/apiv1/openapi.json has %d lines, the generated document %d: run `make openapi`", len(wl), len(gl))
	}
}

// loadOpenAPI loads a document with kin-openapi and validates it,
// examples included.
func loadOpenAPI(b []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background(), openapi3.EnableExamplesValidation())
}

// The document is valid OpenAPI 3.1, its examples agree with their
// schemas, and a wrong example is caught.
func TestOpenAPIDocumentValidates(t *testing.T) {
	doc, err := loadOpenAPI([]byte(apiv1.OpenAPI()))
	if err != nil {
		t.Fatalf("scheduler/apiv1/openapi.json: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %s, want 3.1", doc.OpenAPI)
	}
	bad := openapi.Operation{Pattern: "POST /api/v1/jobs", Summary: "Create a job", Body: apiv1.JobSpec{},
		Example: map[string]any{"group": "g", "name": "n", "handler": "h", "schedule_type": 5}}
	b, err := openapi.Build(openAPISpec(), []openapi.Operation{bad})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadOpenAPI(b); err == nil || !strings.Contains(err.Error(), "schedule_type") {
		t.Errorf("a document whose example has a number for schedule_type validated: %v", err)
	}
}
