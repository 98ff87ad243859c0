package api_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// The API's own test servers validate their traffic against the
// committed OpenAPI document (scheduler/apiv1/openapi.json) with
// kin-openapi: every answer must be one the document allows for its
// route and status, and a request the document refuses must not
// succeed. A handler that answers another type, status or field than
// its documentation says fails whichever test calls it, naming the
// route and the field.

// contractRouter is the document's router, loaded once per test binary.
var contractRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(apiv1.OpenAPI()))
	if err != nil {
		return nil, fmt.Errorf("load scheduler/apiv1/openapi.json: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("scheduler/apiv1/openapi.json: %w", err)
	}
	// A followed log is a stream of JSON lines: validated as text.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.PlainBodyDecoder)
	return legacy.NewRouter(doc)
})

// contract validates the traffic of one test server; report is the
// test's Errorf (or a collector, to test the contract itself).
type contract struct {
	router routers.Router
	report func(format string, args ...any)

	mu sync.Mutex
	// answered are the documented operations ("GET /api/v1/jobs/{id}")
	// that answered a success.
	answered map[string]bool
}

func newContract(t testing.TB, report func(format string, args ...any)) *contract {
	t.Helper()
	router, err := contractRouter()
	if err != nil {
		t.Fatal(err)
	}
	return &contract{router: router, report: report, answered: map[string]bool{}}
}

// validated serves h under the contract of t's API.
func validated(t testing.TB, h http.Handler) http.Handler {
	return newContract(t, t.Errorf).wrap(h)
}

var contractOptions = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
}

func (c *contract) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		route, params, err := c.router.FindRoute(r)
		if err != nil {
			h.ServeHTTP(rec, r)
			if rec.code < 400 {
				c.report("contract: %s %s is in no path of the OpenAPI document, yet answered %d", r.Method, r.URL.Path, rec.code)
			}
			return
		}
		op := r.Method + " " + route.Path
		body, err := io.ReadAll(r.Body)
		if err != nil {
			c.report("contract: %s: read the request body: %v", op, err)
			return
		}
		vr := r.Clone(context.Background())
		vr.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 && vr.Header.Get("Content-Type") == "" {
			// The API reads every body as JSON, whatever its type says
			// (the document's description says so); clients (this
			// package's tests among them) often send none.
			vr.Header.Set("Content-Type", "application/json")
		}
		in := &openapi3filter.RequestValidationInput{Request: vr, PathParams: params, Route: route, Options: contractOptions}
		reqErr := openapi3filter.ValidateRequest(context.Background(), in)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(rec, r)
		if reqErr != nil && rec.code < 300 {
			c.report("contract: %s (%s): answered %d to a request the OpenAPI document refuses: %v",
				op, r.URL.RequestURI(), rec.code, reqErr)
		}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.code, Header: rec.Header(),
			Options: contractOptions}
		out.SetBodyBytes(rec.body.Bytes())
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
			c.report("contract: %s (%s): the answer %d disagrees with the OpenAPI document: %v\nbody: %.600s",
				op, r.URL.RequestURI(), rec.code, err, rec.body.Bytes())
		}
		if rec.code < 300 {
			c.mu.Lock()
			c.answered[op] = true
			c.mu.Unlock()
		}
	})
}

// unanswered lists the documented operations that answered no success.
func (c *contract) unanswered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, rt := range contractRoutes() {
		if !c.answered[rt] {
			out = append(out, rt)
		}
	}
	slices.Sort(out)
	return out
}

// contractRoutes are the document's operations, "METHOD /path".
func contractRoutes() []string {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(apiv1.OpenAPI()))
	if err != nil {
		panic(err)
	}
	var out []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	return out
}

// recorder passes an answer through and keeps a copy of it.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
	body  bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// The contract catches an answer that disagrees with the document and
// names the route and the field; it passes one that agrees.
func TestContractNamesTheRouteAndField(t *testing.T) {
	var reports []string
	c := newContract(t, func(format string, args ...any) { reports = append(reports, fmt.Sprintf(format, args...)) })
	answer := `{"id": 7, "job_id": 3, "group": "a", "trigger_type": "manual", "status": "RUNNING",
		"scheduled_at": "2026-11-28T10:00:00Z", "attempt": 1, "shard_index": 0, "shard_total": "none"}`
	srv := httptest.NewServer(c.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer)
	})))
	defer srv.Close()
	get := func() {
		resp, err := http.Get(srv.URL + "/api/v1/runs/7")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	if len(reports) != 1 || !strings.Contains(reports[0], "GET /api/v1/runs/{id}") || !strings.Contains(reports[0], "shard_total") {
		t.Fatalf("a run whose shard_total is a string: reports %q, want one naming the route and shard_total", reports)
	}
	reports = nil
	answer = strings.Replace(answer, `"none"`, "0", 1)
	get()
	if len(reports) != 0 {
		t.Errorf("a run as documented: reports %q, want none", reports)
	}
}
