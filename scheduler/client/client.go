// Package client is a small Go client for jetjob's HTTP API (/api/v1),
// used by the jetjob CLI, by tests and by the end-to-end suite.
//
// Every method takes a context first and speaks the documents of package
// apiv1. A non-2xx answer is returned as an *APIError, so callers can test
// the status code with errors.As:
//
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound { ... }
//
// The package also holds the CLI configuration file (Config, ConfigPath,
// LoadConfig, SaveConfig), shared by the jetjob CLI and the scheduler's dev
// command, which writes the address and token of the cluster it starts.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// apiPrefix is the path of the API below the base URL.
const apiPrefix = "/api/v1"

// maxErrorBody caps how much of an error answer is read into APIError.Message.
const maxErrorBody = 64 << 10

// Client talks to one jetjob scheduler (or a load balancer in front of
// several). It is safe for concurrent use.
type Client struct {
	base    string // scheme://host[/prefix], no trailing slash
	token   string
	session string // session cookie value, see WithSessionCookie
	hc      *http.Client
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests through hc instead of
// http.DefaultClient (timeouts, TLS settings, test transports). A nil hc is
// ignored.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// New returns a Client for the API at baseURL, e.g. "http://127.0.0.1:8080".
// The base URL must use http or https and name a host; it may carry a path
// prefix when the scheduler sits behind a reverse proxy
// ("https://ops.example.com/jetjob"). A trailing "/api/v1" is accepted and
// ignored. When token is not empty it is sent as "Authorization: Bearer
// <token>" with every request.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	base, err := normalizeBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, token: token, hc: http.DefaultClient}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// BaseURL returns the normalized base URL the client sends requests to
// (without the /api/v1 prefix).
func (c *Client) BaseURL() string { return c.base }

func normalizeBaseURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return "", errors.New("client: empty API address (want e.g. http://127.0.0.1:8080)")
	}
	if !strings.Contains(s, "://") {
		// "localhost:8080" would parse as scheme "localhost".
		return "", fmt.Errorf("client: invalid API address %q: missing http:// or https:// (want e.g. http://%s)", raw, strings.TrimPrefix(s, "//"))
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("client: invalid API address %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("client: invalid API address %q: scheme %q is not http or https", raw, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("client: invalid API address %q: no host", raw)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return "", fmt.Errorf("client: invalid API address %q: must not have a query", raw)
	}
	if u.Fragment != "" {
		return "", fmt.Errorf("client: invalid API address %q: must not have a fragment", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Path = strings.TrimSuffix(u.Path, apiPrefix)
	return strings.TrimRight(u.String(), "/"), nil
}

// APIError is a non-2xx answer of the API.
type APIError struct {
	// StatusCode is the HTTP status code.
	StatusCode int
	// Message is the "error" field of the apiv1.Error body, or the raw body
	// (trimmed) when it is not such a document. It may be empty.
	Message string
	// Permission is what a 403 lacked (apiv1.Error.Permission).
	Permission string
	// CurrentVersion is the job's version after a 409 on a stale PUT.
	CurrentVersion int64
}

// Error reads like "api: 400 Bad Request: invalid cron expression ...".
func (e *APIError) Error() string {
	status := strconv.Itoa(e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		status += " " + text
	}
	if e.Message == "" {
		return "api: " + status
	}
	return "api: " + status + ": " + e.Message
}

// ListJobsOptions selects a page of jobs. Zero values are left out of the
// query, so the server's defaults apply.
type ListJobsOptions struct {
	// Group keeps only the jobs of one group.
	Group string
	// Limit is the page size.
	Limit int
	// After is the last job id seen (JobList.Next of the previous page).
	After int64
	// Labels keeps only the jobs a label selector picks ("env=prod,team=x").
	Labels string
}

// ListRunsOptions selects a page of runs (newest first). Zero values are left
// out of the query.
type ListRunsOptions struct {
	// Limit is the page size.
	Limit int
	// Before is the last run id seen (RunList.Next of the previous page).
	Before int64
}

// CreateGroup creates an executor group.
func (c *Client) CreateGroup(ctx context.Context, g apiv1.Group) (*apiv1.Group, error) {
	return call[apiv1.Group](ctx, c, http.MethodPost, "/groups", nil, g)
}

// ListGroups lists every group.
func (c *Client) ListGroups(ctx context.Context) (*apiv1.GroupList, error) {
	return call[apiv1.GroupList](ctx, c, http.MethodGet, "/groups", nil, nil)
}

// CreateJob creates a job.
func (c *Client) CreateJob(ctx context.Context, spec apiv1.JobSpec) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPost, "/jobs", nil, spec)
}

// GetJob reads one job.
func (c *Client) GetJob(ctx context.Context, id int64) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodGet, jobPath(id), nil, nil)
}

// ListJobs reads one page of jobs, ordered by id. Pass the returned
// JobList.Next as opts.After to read the next page; Next is 0 on the last page.
func (c *Client) ListJobs(ctx context.Context, opts ListJobsOptions) (*apiv1.JobList, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("client: negative limit %d", opts.Limit)
	}
	if opts.After < 0 {
		return nil, fmt.Errorf("client: negative after %d", opts.After)
	}
	q := pageQuery("after", opts.After, opts.Limit)
	if opts.Group != "" {
		q.Set("group", opts.Group)
	}
	if opts.Labels != "" {
		q.Set("labels", opts.Labels)
	}
	return call[apiv1.JobList](ctx, c, http.MethodGet, "/jobs", q, nil)
}

// ListAllJobs reads every page of jobs from opts.After on, ordered by id.
func (c *Client) ListAllJobs(ctx context.Context, opts ListJobsOptions) ([]apiv1.Job, error) {
	var out []apiv1.Job
	for {
		page, err := c.ListJobs(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Jobs...)
		if page.Next == 0 {
			return out, nil
		}
		if page.Next <= opts.After {
			return nil, fmt.Errorf("client: the server returned a page cursor that does not advance (%d)", page.Next)
		}
		opts.After = page.Next
	}
}

// UpdateJob replaces the spec of a job. spec.Version must be the version
// the change was based on (Job.Version): if the job changed since, the
// answer is a 409 *APIError whose CurrentVersion is the job's version.
func (c *Client) UpdateJob(ctx context.Context, id int64, spec apiv1.JobSpec) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPut, jobPath(id), nil, spec)
}

// DeleteJob deletes a job.
func (c *Client) DeleteJob(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, jobPath(id), nil, nil, nil)
}

// EnableJob enables a job and returns it.
func (c *Client) EnableJob(ctx context.Context, id int64) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPost, jobPath(id)+"/enable", nil, nil)
}

// DisableJob disables a job and returns it.
func (c *Client) DisableJob(ctx context.Context, id int64) (*apiv1.Job, error) {
	return call[apiv1.Job](ctx, c, http.MethodPost, jobPath(id)+"/disable", nil, nil)
}

// TriggerJob starts a manual run of a job. When params is not nil it
// replaces the job's params for this run (an empty string included).
func (c *Client) TriggerJob(ctx context.Context, id int64, params *string) (*apiv1.Run, error) {
	return c.TriggerJobWith(ctx, id, apiv1.TriggerRequest{Params: params})
}

// TriggerJobWith triggers a job as req says: now or later (At, Delay),
// with other params, idempotently (IdempotencyKey: a repeat returns the
// run of the trigger it repeats).
func (c *Client) TriggerJobWith(ctx context.Context, id int64, req apiv1.TriggerRequest) (*apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodPost, jobPath(id)+"/trigger", nil, req)
}

// NextFires returns the next n fire times of a job; n <= 0 lets the server
// choose.
func (c *Client) NextFires(ctx context.Context, id int64, n int) (*apiv1.NextFires, error) {
	q := url.Values{}
	if n > 0 {
		q.Set("n", strconv.Itoa(n))
	}
	return call[apiv1.NextFires](ctx, c, http.MethodGet, jobPath(id)+"/next", q, nil)
}

// ListRuns reads one page of a job's runs, newest first. Pass the returned
// RunList.Next as opts.Before to read the next page; Next is 0 on the last page.
func (c *Client) ListRuns(ctx context.Context, jobID int64, opts ListRunsOptions) (*apiv1.RunList, error) {
	if opts.Limit < 0 {
		return nil, fmt.Errorf("client: negative limit %d", opts.Limit)
	}
	if opts.Before < 0 {
		return nil, fmt.Errorf("client: negative before %d", opts.Before)
	}
	return call[apiv1.RunList](ctx, c, http.MethodGet, jobPath(jobID)+"/runs", pageQuery("before", opts.Before, opts.Limit), nil)
}

// pageQuery is the query of a paged listing: the position named cursor
// and the limit, each left out when not above 0 (the server's defaults).
func pageQuery(cursor string, at int64, limit int) url.Values {
	q := url.Values{}
	if at > 0 {
		q.Set(cursor, strconv.FormatInt(at, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// SearchRunsOptions filters GET /runs. Zero values are left out of the
// query; Statuses and TriggerTypes match any of their values.
type SearchRunsOptions struct {
	JobID        int64
	Group        string
	Statuses     []string
	TriggerTypes []string
	// From and To bound the runs' scheduled time (From inclusive).
	From, To time.Time
	Limit    int
	// Cursor is RunList.Cursor of the previous page.
	Cursor string
}

// SearchRuns reads one page of runs matching opts, newest first by
// scheduled time. Pass the returned RunList.Cursor as opts.Cursor to read
// the next page; it is empty on the last page.
func (c *Client) SearchRuns(ctx context.Context, opts SearchRunsOptions) (*apiv1.RunList, error) {
	q := url.Values{}
	if opts.JobID != 0 {
		q.Set("job", strconv.FormatInt(opts.JobID, 10))
	}
	if opts.Group != "" {
		q.Set("group", opts.Group)
	}
	if len(opts.Statuses) > 0 {
		q.Set("status", strings.Join(opts.Statuses, ","))
	}
	if len(opts.TriggerTypes) > 0 {
		q.Set("trigger_type", strings.Join(opts.TriggerTypes, ","))
	}
	if !opts.From.IsZero() {
		q.Set("from", opts.From.Format(time.RFC3339Nano))
	}
	if !opts.To.IsZero() {
		q.Set("to", opts.To.Format(time.RFC3339Nano))
	}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Cursor != "" {
		q.Set("cursor", opts.Cursor)
	}
	return call[apiv1.RunList](ctx, c, http.MethodGet, "/runs", q, nil)
}

// StatsOptions selects the days (YYYY-MM-DD, UTC, inclusive; empty: the
// server's default of the last seven days) and optionally a job or group.
type StatsOptions struct {
	From, To string
	JobID    int64
	Group    string
}

// Stats reads the daily report.
func (c *Client) Stats(ctx context.Context, opts StatsOptions) (*apiv1.Stats, error) {
	q := url.Values{}
	if opts.From != "" {
		q.Set("from", opts.From)
	}
	if opts.To != "" {
		q.Set("to", opts.To)
	}
	if opts.JobID != 0 {
		q.Set("job", strconv.FormatInt(opts.JobID, 10))
	}
	if opts.Group != "" {
		q.Set("group", opts.Group)
	}
	return call[apiv1.Stats](ctx, c, http.MethodGet, "/stats", q, nil)
}

// GetRun reads one run.
func (c *Client) GetRun(ctx context.Context, id int64) (*apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodGet, runPath(id), nil, nil)
}

func jobPath(id int64) string { return "/jobs/" + strconv.FormatInt(id, 10) }

func runPath(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }

// call sends one request and returns its JSON answer as a new T: the
// body of every method that answers a document.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, in any) (*T, error) {
	var out T
	if err := c.do(ctx, method, path, query, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// callList reads a list the API answers as a bare JSON array (not a
// document with the list in a field) with a GET.
func callList[T any](ctx context.Context, c *Client, path string, query url.Values) ([]T, error) {
	var out []T
	if err := c.do(ctx, http.MethodGet, path, query, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// do sends one request. in, when not nil, is sent as JSON; out, when not
// nil, receives the JSON answer of a 2xx response.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	_, err := c.send(ctx, method, path, query, in, out)
	return err
}

// send is do, returning the response (its body consumed) for its headers.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, in, out any) (*http.Response, error) {
	target := c.base + apiPrefix + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("client: encoding %s %s request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err // *url.Error names the method and URL; wraps ctx errors
	}
	defer func() {
		// Drain a little so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, readAPIError(resp)
	}
	if out == nil {
		return resp, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("client: %s %s: empty response body (status %d)", method, path, resp.StatusCode)
		}
		return nil, fmt.Errorf("client: decoding %s %s response: %w", method, path, err)
	}
	return resp, nil
}

// authorize adds the client's credentials to req.
func (c *Client) authorize(req *http.Request) {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.AddCookie(&http.Cookie{Name: SessionCookie, Value: c.session})
	}
}

func readAPIError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{StatusCode: resp.StatusCode}
	var doc apiv1.Error
	if json.Unmarshal(raw, &doc) == nil && doc.Error != "" {
		e.Message, e.Permission, e.CurrentVersion = doc.Error, doc.Permission, doc.CurrentVersion
	} else {
		e.Message = strings.TrimSpace(string(raw))
	}
	return e
}

// RunLogs reads up to limit log lines of a run from cursor from (0: the
// first line; pass the answer's Next to read on).
func (c *Client) RunLogs(ctx context.Context, id int64, from uint64, limit int) (*apiv1.RunLogs, error) {
	q := url.Values{}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[apiv1.RunLogs](ctx, c, http.MethodGet, runPath(id)+"/logs", q, nil)
}

// FollowRunLogs streams a run's log lines from cursor from to emit as they
// arrive, until the run has ended and its last line was sent, ctx ends, or
// emit returns an error (which FollowRunLogs returns).
func (c *Client) FollowRunLogs(ctx context.Context, id int64, from uint64, emit func(apiv1.LogLine) error) error {
	q := url.Values{"follow": {"true"}}
	if from > 0 {
		q.Set("from", strconv.FormatUint(from, 10))
	}
	target := c.base + apiPrefix + runPath(id) + "/logs?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("client: follow logs of run %d: %w", id, err)
	}
	req.Header.Set("Accept", "application/x-ndjson")
	c.authorize(req)
	// A follow lasts as long as the run: no client-wide timeout applies.
	hc := *c.hc
	hc.Timeout = 0
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return readAPIError(resp)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var l apiv1.LogLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("client: follow logs of run %d: %w", id, err)
		}
		if err := emit(l); err != nil {
			return err
		}
	}
}

// ListWorkers lists the live workers of group ("" for all groups).
func (c *Client) ListWorkers(ctx context.Context, group string) (*apiv1.WorkerList, error) {
	q := url.Values{}
	if group != "" {
		q.Set("group", group)
	}
	return call[apiv1.WorkerList](ctx, c, http.MethodGet, "/workers", q, nil)
}

// KillRun stops a run wherever it is; the run ends CANCELLED (at once if it
// was not published yet, else when its worker reports).
func (c *Client) KillRun(ctx context.Context, id int64) (*apiv1.Run, error) {
	return call[apiv1.Run](ctx, c, http.MethodPost, runPath(id)+"/kill", nil, nil)
}

// DeleteRun deletes an ended run with its log lines (409 if it has not
// ended or belongs to a workflow run).
func (c *Client) DeleteRun(ctx context.Context, id int64) error {
	return c.do(ctx, http.MethodDelete, runPath(id), nil, nil, nil)
}

// BulkRuns applies a bulk action (apiv1.BulkKill, apiv1.BulkRerun, apiv1.BulkDelete) to up
// to 500 runs; each item is authorized and audited as alone, and its
// result says whether it was done.
func (c *Client) BulkRuns(ctx context.Context, action string, ids []int64) (*apiv1.RunsBulkResult, error) {
	return call[apiv1.RunsBulkResult](ctx, c, http.MethodPost, "/runs/bulk", nil, apiv1.RunsBulk{Action: action, IDs: ids})
}
