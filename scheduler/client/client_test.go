package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

const testToken = "s3cret"

// apiServer is a tiny in-memory implementation of a few /api/v1 endpoints,
// written the way package apiv1 documents them.
type apiServer struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	jobs     []apiv1.Job // ordered by id
	runs     []apiv1.Run // ordered by id
	queries  []url.Values
	triggers []string // raw trigger bodies
	specs    []string // raw job spec bodies
}

func newAPIServer(t *testing.T, prefix string) *apiServer {
	t.Helper()
	s := &apiServer{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/jobs", s.createJob)
	mux.HandleFunc("GET /api/v1/jobs", s.listJobs)
	mux.HandleFunc("GET /api/v1/jobs/{id}", s.getJob)
	mux.HandleFunc("DELETE /api/v1/jobs/{id}", s.deleteJob)
	mux.HandleFunc("POST /api/v1/jobs/{id}/trigger", s.trigger)
	mux.HandleFunc("GET /api/v1/jobs/{id}/next", s.next)
	mux.HandleFunc("GET /api/v1/jobs/{id}/runs", s.listRuns)
	mux.HandleFunc("GET /api/v1/groups", func(w http.ResponseWriter, r *http.Request) {
		// Not JSON: what a proxy in front of a dead scheduler would answer.
		http.Error(w, "upstream connect error", http.StatusBadGateway)
	})
	mux.HandleFunc("GET /api/v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		// Non-2xx with an empty body.
		w.WriteHeader(http.StatusServiceUnavailable)
	})

	auth := func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer "+testToken {
			writeJSON(w, http.StatusUnauthorized, apiv1.Error{Error: "missing or invalid bearer token"})
			return
		}
		if !strings.HasPrefix(r.URL.Path, prefix+"/api/v1/") {
			writeJSON(w, http.StatusNotFound, apiv1.Error{Error: "no route " + r.URL.Path})
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(r.URL.Path, prefix)
		r2.URL.RawPath = ""
		s.mu.Lock()
		s.queries = append(s.queries, r.URL.Query())
		s.mu.Unlock()
		mux.ServeHTTP(w, r2)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(auth))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *apiServer) client(t *testing.T, token string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.srv.URL, token, opts...)
	if err != nil {
		t.Fatalf("client.New(%q): %v", s.srv.URL, err)
	}
	return c
}

func (s *apiServer) lastQuery() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queries) == 0 {
		s.t.Fatal("no request recorded")
	}
	return s.queries[len(s.queries)-1]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *apiServer) createJob(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, apiv1.Error{Error: "content type " + ct})
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var spec apiv1.JobSpec
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: "bad job spec: " + err.Error()})
		return
	}
	if spec.ScheduleType == "cron" && strings.Count(spec.ScheduleExpr, " ") < 4 {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: "invalid cron expression " + strconv.Quote(spec.ScheduleExpr) + ": expected 5 or 6 fields"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs = append(s.specs, string(raw))
	job := apiv1.Job{
		ID:        int64(len(s.jobs) + 1),
		JobSpec:   spec,
		Enabled:   spec.Enabled == nil || *spec.Enabled,
		Version:   1,
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	}
	job.JobSpec.Enabled = nil
	s.jobs = append(s.jobs, job)
	writeJSON(w, http.StatusCreated, job)
}

func queryInt(r *http.Request, name string, def int64) (int64, bool) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 0
}

func (s *apiServer) listJobs(w http.ResponseWriter, r *http.Request) {
	limit, ok1 := queryInt(r, "limit", 100)
	after, ok2 := queryInt(r, "after", 0)
	if !ok1 || !ok2 || limit == 0 {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: "bad limit or after"})
		return
	}
	group := r.URL.Query().Get("group")
	s.mu.Lock()
	defer s.mu.Unlock()
	matched := []apiv1.Job{}
	for _, j := range s.jobs {
		if j.ID > after && (group == "" || j.Group == group) {
			matched = append(matched, j)
		}
	}
	var out apiv1.JobList
	out.Jobs, out.Next = page(matched, limit, func(j apiv1.Job) int64 { return j.ID })
	writeJSON(w, http.StatusOK, out)
}

// page is the fake's paging, the server's: the first limit of the matched
// items, and the last one's id as the next cursor when more are left.
func page[T any](matched []T, limit int64, id func(T) int64) ([]T, int64) {
	if int64(len(matched)) <= limit {
		return matched, 0
	}
	return matched[:limit], id(matched[limit-1])
}

func (s *apiServer) findJob(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, j := range s.jobs {
		if err == nil && j.ID == id {
			return i, true
		}
	}
	writeJSON(w, http.StatusNotFound, apiv1.Error{Error: "job " + r.PathValue("id") + " not found"})
	return 0, false
}

func (s *apiServer) getJob(w http.ResponseWriter, r *http.Request) {
	if i, ok := s.findJob(w, r); ok {
		s.mu.Lock()
		j := s.jobs[i]
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, j)
	}
}

func (s *apiServer) deleteJob(w http.ResponseWriter, r *http.Request) {
	if i, ok := s.findJob(w, r); ok {
		s.mu.Lock()
		s.jobs = append(s.jobs[:i], s.jobs[i+1:]...)
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *apiServer) trigger(w http.ResponseWriter, r *http.Request) {
	i, ok := s.findJob(w, r)
	if !ok {
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var req apiv1.TriggerRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.triggers = append(s.triggers, string(raw))
	job := s.jobs[i]
	run := apiv1.Run{
		ID:          int64(len(s.runs) + 1),
		JobID:       job.ID,
		Group:       job.Group,
		TriggerType: "manual",
		Status:      "SCHEDULED",
		ScheduledAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Attempt:     1,
		ShardTotal:  1,
		Params:      job.Params,
	}
	if req.Params != nil {
		run.Params = *req.Params
	}
	s.runs = append(s.runs, run)
	writeJSON(w, http.StatusAccepted, run)
}

func (s *apiServer) next(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.findJob(w, r); !ok {
		return
	}
	n, ok := queryInt(r, "n", 5)
	if !ok {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: "bad n"})
		return
	}
	out := apiv1.NextFires{Times: []time.Time{}}
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		out.Times = append(out.Times, t0.Add(time.Duration(i)*time.Minute))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *apiServer) listRuns(w http.ResponseWriter, r *http.Request) {
	i, ok := s.findJob(w, r)
	if !ok {
		return
	}
	limit, ok1 := queryInt(r, "limit", 100)
	before, ok2 := queryInt(r, "before", 0)
	if !ok1 || !ok2 || limit == 0 {
		writeJSON(w, http.StatusBadRequest, apiv1.Error{Error: "bad limit or before"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	jobID := s.jobs[i].ID
	matched := []apiv1.Run{}
	for k := len(s.runs) - 1; k >= 0; k-- {
		if run := s.runs[k]; run.JobID == jobID && (before == 0 || run.ID < before) {
			matched = append(matched, run)
		}
	}
	var out apiv1.RunList
	out.Runs, out.Next = page(matched, limit, func(r apiv1.Run) int64 { return r.ID })
	writeJSON(w, http.StatusOK, out)
}

func TestNewValidatesBaseURL(t *testing.T) {
	bad := map[string]string{
		"":                       "empty API address",
		"   ":                    "empty API address",
		"localhost:8080":         "missing http:// or https://",
		"127.0.0.1:8080":         "missing http:// or https://",
		"ftp://example.com":      `scheme "ftp" is not http or https`,
		"http://":                "no host",
		"http:///api":            "no host",
		"http://:8080":           "no host",
		"http://example.com?x=1": "must not have a query",
		"http://example.com/#f":  "must not have a fragment",
		"http://[::1":            "invalid API address",
	}
	for in, want := range bad {
		c, err := client.New(in, "")
		if err == nil {
			t.Errorf("New(%q) = %v, want an error", in, c.BaseURL())
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New(%q) error = %q, want it to contain %q", in, err, want)
		}
	}
	good := map[string]string{
		"http://127.0.0.1:8080":          "http://127.0.0.1:8080",
		"  http://127.0.0.1:8080/  ":     "http://127.0.0.1:8080",
		"HTTPS://Example.com":            "https://Example.com",
		"https://ops.example.com/jetjob": "https://ops.example.com/jetjob",
		"http://h:1/jetjob/api/v1/":      "http://h:1/jetjob",
		"http://[::1]:9/api/v1":          "http://[::1]:9",
	}
	for in, want := range good {
		c, err := client.New(in, "")
		if err != nil {
			t.Errorf("New(%q): %v", in, err)
			continue
		}
		if got := c.BaseURL(); got != want {
			t.Errorf("New(%q).BaseURL() = %q, want %q", in, got, want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, strings.Join(r.Header.Values("Authorization"), "|"))
		mu.Unlock()
		writeJSON(w, http.StatusOK, apiv1.GroupList{Groups: []apiv1.Group{{Name: "g"}}})
	}))
	defer srv.Close()
	ctx := context.Background()

	for _, token := range []string{"abc", ""} {
		c, err := client.New(srv.URL, token)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListGroups(ctx); err != nil {
			t.Fatalf("ListGroups: %v", err)
		}
	}
	want := []string{"Bearer abc", ""}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Authorization headers = %q, want %q", got, want)
	}
}

func TestUnauthorizedIsAPIError(t *testing.T) {
	s := newAPIServer(t, "")
	_, err := s.client(t, "wrong").GetJob(context.Background(), 1)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not an *APIError", err, err)
	}
	if apiErr.StatusCode != http.StatusUnauthorized || apiErr.Message != "missing or invalid bearer token" {
		t.Fatalf("APIError = %+v", apiErr)
	}
	if want := "api: 401 Unauthorized: missing or invalid bearer token"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestCreateJobEncodesSpec(t *testing.T) {
	s := newAPIServer(t, "")
	c := s.client(t, testToken)
	disabled := false
	spec := apiv1.JobSpec{
		Group:         "billing",
		Name:          "invoice",
		Description:   "monthly invoices",
		Handler:       "shell",
		Params:        `{"cmd":"echo hi"}`,
		ScheduleType:  "cron",
		ScheduleExpr:  "0 0 1 * *",
		Timezone:      "Europe/Paris",
		MisfirePolicy: "fire_once",
		RouteStrategy: "round",
		BlockStrategy: "serial",
		Timeout:       apiv1.Duration(90 * time.Second),
		MaxRetries:    3,
		Enabled:       &disabled,
	}
	job, err := c.CreateJob(context.Background(), spec)
	if err != nil {
		t.Fatalf("CreateJob: %v", err)
	}
	if job.ID != 1 || job.Enabled || job.Name != "invoice" || job.Timezone != "Europe/Paris" ||
		job.Timeout != apiv1.Duration(90*time.Second) || job.MaxRetries != 3 || job.Params != spec.Params {
		t.Fatalf("job = %+v", job)
	}

	var sent map[string]any
	if err := json.Unmarshal([]byte(s.specs[0]), &sent); err != nil {
		t.Fatal(err)
	}
	if sent["timeout"] != "1m30s" || sent["enabled"] != false || sent["schedule_type"] != "cron" ||
		sent["group"] != "billing" || sent["max_retries"] != float64(3) {
		t.Fatalf("sent body = %s", s.specs[0])
	}

	// Defaults: omitempty fields are left out, enabled is absent.
	if _, err := c.CreateJob(context.Background(), apiv1.JobSpec{Group: "g", Name: "n", Handler: "h", ScheduleType: "none"}); err != nil {
		t.Fatal(err)
	}
	want := `{"group":"g","name":"n","handler":"h","schedule_type":"none"}`
	if got := s.specs[1]; got != want {
		t.Fatalf("sent body = %s, want %s", got, want)
	}
}

func TestAPIErrorMessage(t *testing.T) {
	s := newAPIServer(t, "")
	c := s.client(t, testToken)
	ctx := context.Background()

	_, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "n", Handler: "h", ScheduleType: "cron", ScheduleExpr: "bad"})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v (%T) is not an *APIError", err, err)
	}
	want := `api: 400 Bad Request: invalid cron expression "bad": expected 5 or 6 fields`
	if apiErr.StatusCode != 400 || err.Error() != want {
		t.Fatalf("error = %q (status %d), want %q", err, apiErr.StatusCode, want)
	}

	// Not JSON: the raw body, trimmed.
	_, err = c.ListGroups(ctx)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || apiErr.Message != "upstream connect error" {
		t.Fatalf("ListGroups error = %#v", err)
	}
	if want := "api: 502 Bad Gateway: upstream connect error"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err, want)
	}

	// Empty body.
	_, err = c.GetRun(ctx, 7)
	if !errors.As(err, &apiErr) || err.Error() != "api: 503 Service Unavailable" {
		t.Fatalf("GetRun error = %v", err)
	}

	// 404 from the server's own handler.
	err = c.DeleteJob(ctx, 42)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Message != "job 42 not found" {
		t.Fatalf("DeleteJob error = %v", err)
	}

	if got := (&client.APIError{StatusCode: 599, Message: "x"}).Error(); got != "api: 599: x" {
		t.Fatalf("unknown status: %q", got)
	}
}

func TestListJobsPagination(t *testing.T) {
	s := newAPIServer(t, "")
	c := s.client(t, testToken)
	ctx := context.Background()
	for i := range 5 {
		group := "a b" // needs escaping in the query
		if i%2 == 1 {
			group = "other"
		}
		if _, err := c.CreateJob(ctx, apiv1.JobSpec{Group: group, Name: "j" + strconv.Itoa(i), Handler: "h", ScheduleType: "none"}); err != nil {
			t.Fatal(err)
		}
	}

	// No options: no query at all.
	all, err := c.ListJobs(ctx, client.ListJobsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := s.lastQuery(); len(q) != 0 {
		t.Fatalf("query = %v, want none", q)
	}
	if len(all.Jobs) != 5 || all.Next != 0 {
		t.Fatalf("all = %d jobs, next %d", len(all.Jobs), all.Next)
	}

	// Page through group "a b" (jobs 1, 3, 5) two at a time.
	var ids []int64
	opts := client.ListJobsOptions{Group: "a b", Limit: 2}
	var queries []string
	for pages := 0; ; pages++ {
		if pages == 10 {
			t.Fatalf("pagination does not end; queries so far: %q", queries)
		}
		page, err := c.ListJobs(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, s.lastQuery().Encode())
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.Next == 0 {
			break
		}
		opts.After = page.Next
	}
	if got := strconv.Quote(strings.Join(queries, " ; ")); got != strconv.Quote("group=a+b&limit=2 ; after=3&group=a+b&limit=2") {
		t.Fatalf("queries = %s", got)
	}
	if len(ids) != 3 || ids[0] != 1 || ids[1] != 3 || ids[2] != 5 {
		t.Fatalf("ids = %v", ids)
	}

	if _, err := c.ListJobs(ctx, client.ListJobsOptions{Limit: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}
}

func TestTriggerRunsAndNext(t *testing.T) {
	s := newAPIServer(t, "")
	c := s.client(t, testToken)
	ctx := context.Background()
	job, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "n", Handler: "h", Params: "default", ScheduleType: "none"})
	if err != nil {
		t.Fatal(err)
	}

	empty := ""
	override := "override"
	for _, p := range []*string{nil, &empty, &override} {
		run, err := c.TriggerJob(ctx, job.ID, p)
		if err != nil {
			t.Fatalf("TriggerJob: %v", err)
		}
		want := "default"
		if p != nil {
			want = *p
		}
		if run.JobID != job.ID || run.Params != want || run.Status != "SCHEDULED" {
			t.Fatalf("run = %+v, want params %q", run, want)
		}
	}
	if got := strings.Join(s.triggers, " "); got != `{} {"params":""} {"params":"override"}` {
		t.Fatalf("trigger bodies = %s", got)
	}

	// Runs come newest first; page with before.
	page, err := c.ListRuns(ctx, job.ID, client.ListRunsOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if q := s.lastQuery().Encode(); q != "limit=2" {
		t.Fatalf("query = %q", q)
	}
	if len(page.Runs) != 2 || page.Runs[0].ID != 3 || page.Runs[1].ID != 2 || page.Next != 2 {
		t.Fatalf("page 1 = %+v", page)
	}
	page, err = c.ListRuns(ctx, job.ID, client.ListRunsOptions{Limit: 2, Before: page.Next})
	if err != nil {
		t.Fatal(err)
	}
	if q := s.lastQuery().Encode(); q != "before=2&limit=2" {
		t.Fatalf("query = %q", q)
	}
	if len(page.Runs) != 1 || page.Runs[0].ID != 1 || page.Next != 0 {
		t.Fatalf("page 2 = %+v", page)
	}

	next, err := c.NextFires(ctx, job.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	if q := s.lastQuery().Encode(); q != "n=3" {
		t.Fatalf("query = %q", q)
	}
	if len(next.Times) != 3 || !next.Times[2].Equal(time.Date(2026, 3, 1, 0, 2, 0, 0, time.UTC)) {
		t.Fatalf("next = %v", next.Times)
	}

	if err := c.DeleteJob(ctx, job.ID); err != nil {
		t.Fatalf("DeleteJob: %v", err)
	}
	var apiErr *client.APIError
	if _, err := c.GetJob(ctx, job.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("GetJob after delete: %v", err)
	}
}

func TestPathPrefixAndHTTPClient(t *testing.T) {
	s := newAPIServer(t, "/jetjob")
	var used int
	var mu sync.Mutex
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		used++
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := client.New(s.srv.URL+"/jetjob/", testToken, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateJob(context.Background(), apiv1.JobSpec{Group: "g", Name: "n", Handler: "h", ScheduleType: "none"}); err != nil {
		t.Fatalf("CreateJob through prefix: %v", err)
	}
	if used != 1 {
		t.Fatalf("custom HTTP client used %d times, want 1", used)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestContextCanceled(t *testing.T) {
	s := newAPIServer(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.client(t, testToken).GetJob(ctx, 1)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestBadSuccessBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/jobs/1" {
			w.WriteHeader(http.StatusOK) // empty
			return
		}
		_, _ = io.WriteString(w, "<html>not json</html>")
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetJob(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "empty response body") {
		t.Fatalf("empty body error = %v", err)
	}
	if _, err := c.GetJob(context.Background(), 2); err == nil || !strings.Contains(err.Error(), "decoding GET /jobs/2 response") {
		t.Fatalf("bad body error = %v", err)
	}
}
