package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// request is what the fake API saw.
type request struct {
	Method, Path, Query, Auth, Body string
}

// fakeAPI is an httptest server answering a few /api/v1 endpoints with
// canned documents, recording every request.
type fakeAPI struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []request
	jobs []apiv1.Job
	runs []apiv1.Run
}

var (
	t0      = time.Date(2026, 3, 29, 0, 30, 0, 123456789, time.UTC)
	started = t0.Add(2 * time.Second)
	done    = started.Add(1500 * time.Millisecond)
)

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{}
	for i := 1; i <= 5; i++ {
		next := t0.Add(time.Duration(i) * time.Minute)
		f.jobs = append(f.jobs, apiv1.Job{
			ID: int64(i),
			JobSpec: apiv1.JobSpec{Group: "g", Name: "job" + strconv.Itoa(i), Handler: "shell",
				ScheduleType: "cron", ScheduleExpr: "0 * * * * *", Timezone: "Europe/Paris"},
			Enabled:    i != 2,
			NextFireAt: &next,
			CreatedAt:  t0,
			UpdatedAt:  t0,
		})
	}
	seq := uint64(77)
	f.runs = []apiv1.Run{
		{ID: 11, JobID: 1, Group: "g", TriggerType: "cron", Status: "SUCCEEDED", ScheduledAt: t0,
			StartedAt: &started, FinishedAt: &done, Attempt: 1, ShardTotal: 1, WorkerID: "w-1",
			Message: "line one\tand\x1b[31m red\nline two " + strings.Repeat("x", 100), StreamSeq: &seq},
		{ID: 10, JobID: 1, Group: "g", TriggerType: "manual", Status: "SCHEDULED", ScheduledAt: t0},
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit == 0 {
			limit = 100
		}
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		out := apiv1.JobList{Jobs: []apiv1.Job{}}
		for _, j := range f.jobs {
			if j.ID <= after {
				continue
			}
			if len(out.Jobs) == limit {
				out.Next = out.Jobs[len(out.Jobs)-1].ID
				break
			}
			out.Jobs = append(out.Jobs, j)
		}
		reply(w, http.StatusOK, out)
	})
	mux.HandleFunc("POST /api/v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		var spec apiv1.JobSpec
		if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
			reply(w, http.StatusBadRequest, apiv1.Error{Error: err.Error()})
			return
		}
		job := apiv1.Job{ID: 42, JobSpec: spec, Enabled: spec.Enabled == nil || *spec.Enabled, CreatedAt: t0, UpdatedAt: t0}
		job.JobSpec.Enabled = nil
		reply(w, http.StatusCreated, job)
	})
	mux.HandleFunc("GET /api/v1/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.Atoi(r.PathValue("id"))
		if id < 1 || id > len(f.jobs) {
			reply(w, http.StatusNotFound, apiv1.Error{Error: "job " + r.PathValue("id") + " not found"})
			return
		}
		reply(w, http.StatusOK, f.jobs[id-1])
	})
	mux.HandleFunc("GET /api/v1/jobs/{id}/next", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		out := apiv1.NextFires{}
		for i := range n {
			out.Times = append(out.Times, time.Date(2026, 3, 29, 0, 59, 0, 0, time.UTC).Add(time.Duration(i)*time.Hour))
		}
		reply(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /api/v1/jobs/{id}/runs", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, apiv1.RunList{Runs: f.runs, Next: 10})
	})
	mux.HandleFunc("GET /api/v1/runs", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, apiv1.RunList{Runs: f.runs, Cursor: "djEuMS4y"})
	})
	mux.HandleFunc("GET /api/v1/stats", func(w http.ResponseWriter, r *http.Request) {
		p50 := 1500.0
		reply(w, http.StatusOK, apiv1.Stats{From: "2026-03-28", To: "2026-03-29", Rows: []apiv1.StatsRow{
			{Day: "2026-03-28", JobID: 1, Group: "demo", Status: "SUCCEEDED", Runs: 42, TimedRuns: 42, P50MS: &p50, Source: "rollup"},
			{Day: "2026-03-29", JobID: 1, Group: "demo", Status: "FAILED", Runs: 3, Source: "live"},
		}})
	})
	mux.HandleFunc("GET /api/v1/runs/{id}", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, f.runs[0])
	})
	mux.HandleFunc("POST /api/v1/jobs/{id}/trigger", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusAccepted, f.runs[1])
	})
	mux.HandleFunc("GET /api/v1/workers", func(w http.ResponseWriter, r *http.Request) {
		sampled, oldest := time.Now().Add(-2*time.Second), t0
		l := apiv1.WorkerList{
			Workers: []apiv1.Worker{{ID: "w-1", Group: "ops", Host: "h1", PID: 42, Version: "v1", Handlers: []string{"shell"},
				Capacity: 2, Running: []int64{7, 8}, StartedAt: t0, BeatAt: time.Now()}},
			Groups: []apiv1.GroupBacklog{
				{Group: "idle", SampledAt: &sampled},
				{Group: "ops", LiveWorkers: 1, Slots: 2, Running: 2, Pending: 198, OldestPendingSeconds: 7.25,
					OldestPendingAt: &oldest, InFlight: 2, Redelivered: 1, SampledAt: &sampled},
			},
		}
		if g := r.URL.Query().Get("group"); g != "" {
			l.Groups = l.Groups[1:]
		}
		reply(w, http.StatusOK, l)
	})

	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.mu.Lock()
		f.reqs = append(f.reqs, request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body)})
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// ok runs the CLI against the fake with args, requires it to succeed and
// returns what it printed.
func (f *fakeAPI) ok(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := cli(t, append([]string{"--api", f.srv.URL}, args...)...)
	if code != exitOK {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	return stdout
}

// last is the latest request the fake served.
func (f *fakeAPI) last() request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reqs[len(f.reqs)-1]
}

// isolate clears the environment the CLI reads and points JETJOB_CONFIG
// at a file that does not exist; it returns that path.
func isolate(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cli.json")
	t.Setenv("JETJOB_CONFIG", path)
	t.Setenv(envAPI, "")
	t.Setenv(envToken, "")
	return path
}

// cli runs the jetjob root command in-process.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestResolutionOrder(t *testing.T) {
	flagSrv, envSrv, fileSrv := newFakeAPI(t), newFakeAPI(t), newFakeAPI(t)
	servers := map[string]*fakeAPI{"flag": flagSrv, "env": envSrv, "file": fileSrv}

	cases := []struct {
		name                 string
		flagAPI, flagToken   bool
		envAPI, envToken     bool
		fileAPI, fileToken   bool
		wantServer, wantAuth string
	}{
		{"flag beats env and file", true, true, true, true, true, true, "flag", "Bearer flag-token"},
		{"env beats file", false, false, true, true, true, true, "env", "Bearer env-token"},
		{"file alone", false, false, false, false, true, true, "file", "Bearer file-token"},
		{"each value on its own", true, false, false, true, true, true, "flag", "Bearer env-token"},
		{"file address, env token", false, false, false, true, true, true, "file", "Bearer env-token"},
		{"env address, file token for another address", false, false, true, false, true, true, "env", ""},
		{"no token anywhere", false, false, true, false, false, false, "env", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := isolate(t)
			var cfg client.Config
			if tc.fileAPI {
				cfg.API = fileSrv.srv.URL
			}
			if tc.fileToken {
				cfg.Token = "file-token"
			}
			if err := client.SaveConfig(path, cfg); err != nil {
				t.Fatal(err)
			}
			if tc.envAPI {
				t.Setenv(envAPI, envSrv.srv.URL)
			}
			if tc.envToken {
				t.Setenv(envToken, "env-token")
			}
			var args []string
			if tc.flagAPI {
				args = append(args, "--api", flagSrv.srv.URL)
			}
			if tc.flagToken {
				args = append(args, "--token", "flag-token")
			}
			before := map[string]int{}
			for name, s := range servers {
				before[name] = len(s.requests())
			}

			code, _, stderr := cli(t, append(args, "jobs", "get", "1")...)
			if code != exitOK {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			for name, s := range servers {
				reqs := s.requests()[before[name]:]
				if name != tc.wantServer {
					if len(reqs) != 0 {
						t.Errorf("server %q got %d requests, want none", name, len(reqs))
					}
					continue
				}
				if len(reqs) != 1 {
					t.Fatalf("server %q got %d requests, want 1", name, len(reqs))
				}
				if reqs[0].Auth != tc.wantAuth || reqs[0].Path != "/api/v1/jobs/1" {
					t.Errorf("request = %+v, want Authorization %q", reqs[0], tc.wantAuth)
				}
			}
		})
	}
}

func TestNoAddress(t *testing.T) {
	path := isolate(t)
	t.Setenv(envToken, "tok") // a token alone is not enough
	code, stdout, stderr := cli(t, "jobs", "list")
	if code != exitError || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"no API address", "jetjob-scheduler dev", "--api", path} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not mention %q", stderr, want)
		}
	}

	// A broken config file is reported, not ignored.
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := cli(t, "jobs", "list"); code != exitError || !strings.Contains(stderr, path) {
		t.Fatalf("broken config: exit %d, stderr %q", code, stderr)
	}
}

func TestBadAPIFlagIsUsageError(t *testing.T) {
	isolate(t)
	code, _, stderr := cli(t, "--api", "localhost:8080", "jobs", "list")
	if code != exitUsage || !strings.Contains(stderr, "missing http:// or https://") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// The same address from the environment is a plain error naming its source.
	t.Setenv(envAPI, "localhost:8080")
	code, _, stderr = cli(t, "jobs", "list")
	if code != exitError || !strings.Contains(stderr, "from JETJOB_API") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestJobsCreateScheduleFlags(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	base := []string{"--api", f.srv.URL, "jobs", "create", "--group", "g", "--name", "n", "--handler", "h"}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--cron", "* * * * *", "--every", "30s"}, "only one schedule flag may be given, got --cron and --every"},
		{[]string{"--every", "30s", "--delay", "1m"}, "--every and --delay"},
		{[]string{"--delay", "1m", "--at", "2026-05-01T09:30:00Z"}, "--delay and --at"},
		{[]string{"--cron", "@hourly", "--at", "2026-05-01T09:30:00Z"}, "--cron and --at"},
		{[]string{"--every", "soon"}, `--every "soon": want a duration`},
		{[]string{"--delay", "-5s"}, "must be positive"},
		{[]string{"--at", "tomorrow"}, "RFC 3339"},
		{[]string{"--tz", "Mars/Olympus"}, "unknown time zone"},
		{[]string{"--params", "a", "--params-file", "x"}, "not both"},
		{[]string{"--max-retries", "-1"}, "must not be negative"},
	}
	for _, b := range bad {
		code, stdout, stderr := cli(t, append(append([]string{}, base...), b.args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, b.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", b.args, code, stdout, stderr, b.want)
		}
	}
	code, _, stderr := cli(t, "--api", f.srv.URL, "jobs", "create", "--name", "n", "--cron", "@hourly")
	if code != exitUsage || !strings.Contains(stderr, "missing required flag --group, --handler") {
		t.Errorf("missing flags: exit %d, stderr %q", code, stderr)
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("rejected commands sent %d requests", n)
	}
}

func TestJobsCreateSendsSpec(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	paramsFile := filepath.Join(t.TempDir(), "params.json")
	if err := os.WriteFile(paramsFile, []byte(`{"cmd":"echo hi"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string // JSON body sent
	}{
		{[]string{"--every", "30s", "--disabled", "--timeout", "5m", "--max-retries", "2", "--params-file", paramsFile},
			`{"group":"g","name":"n","handler":"h","params":"{\"cmd\":\"echo hi\"}","schedule_type":"fix_rate","schedule_expr":"30s","timeout":"5m0s","max_retries":2,"enabled":false}`},
		{[]string{"--cron", "0 0 9 * * MON", "--tz", "Europe/Paris", "--misfire", "fire_once", "--route", "round", "--block", "serial", "--description", "d"},
			`{"group":"g","name":"n","description":"d","handler":"h","schedule_type":"cron","schedule_expr":"0 0 9 * * MON","timezone":"Europe/Paris","misfire_policy":"fire_once","route_strategy":"round","block_strategy":"serial"}`},
		{[]string{"--delay", "1m"}, `{"group":"g","name":"n","handler":"h","schedule_type":"fix_delay","schedule_expr":"1m"}`},
		{[]string{"--at", "2026-05-01T09:30:00+02:00"}, `{"group":"g","name":"n","handler":"h","schedule_type":"once","schedule_expr":"2026-05-01T09:30:00+02:00"}`},
		{[]string{"--params", "p"}, `{"group":"g","name":"n","handler":"h","params":"p","schedule_type":"none"}`},
	}
	for _, tc := range cases {
		n := len(f.requests())
		args := append([]string{"--api", f.srv.URL, "-o", "json", "jobs", "create", "--group", "g", "--name", "n", "--handler", "h"}, tc.args...)
		code, stdout, stderr := cli(t, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
		reqs := f.requests()[n:]
		if len(reqs) != 1 || reqs[0].Method != http.MethodPost || reqs[0].Path != "/api/v1/jobs" {
			t.Fatalf("%v: requests %+v", tc.args, reqs)
		}
		if got := strings.TrimSpace(reqs[0].Body); got != tc.want {
			t.Errorf("%v: sent\n%s\nwant\n%s", tc.args, got, tc.want)
		}
		var job apiv1.Job
		if err := json.Unmarshal([]byte(stdout), &job); err != nil || job.ID != 42 {
			t.Errorf("%v: -o json printed %q (%v)", tc.args, stdout, err)
		}
		if !strings.Contains(stdout, "\n  \"id\": 42,") {
			t.Errorf("-o json output is not indented: %q", stdout)
		}
	}
}

func TestJobsListAllTable(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	stdout := f.ok(t, "jobs", "list", "--all", "--limit", "2")
	var queries []string
	for _, r := range f.requests() {
		queries = append(queries, r.Query)
	}
	if got := strings.Join(queries, " "); got != "limit=2 after=2&limit=2 after=4&limit=2" {
		t.Fatalf("queries = %q", got)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 6 {
		t.Fatalf("got %d lines, want header + 5:\n%s", len(lines), stdout)
	}
	if fields := strings.Fields(lines[0]); strings.Join(fields, " ") != "ID GROUP NAME HANDLER SCHEDULE ENABLED NEXT FIRE" {
		t.Fatalf("header = %q", lines[0])
	}
	want := "2   g      job2  shell    cron 0 * * * * * (Europe/Paris)  no       2026-03-29T00:32:00.123Z"
	if lines[2] != want {
		t.Fatalf("row 2 =\n%q\nwant\n%q", lines[2], want)
	}

	// One page without --all: the rest is announced on stderr.
	code, stdout, stderr := cli(t, "--api", f.srv.URL, "jobs", "list", "--limit", "2")
	if code != exitOK || strings.Count(stdout, "\n") != 3 || !strings.Contains(stderr, "--all") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestRunsOutput(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	code, stdout, stderr := cli(t, "--api", f.srv.URL, "runs", "list", "--job", "1", "--limit", "2")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if last := f.last(); last.Path != "/api/v1/runs" || last.Query != "job=1&limit=2" {
		t.Fatalf("request = %+v", last)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header + 2 rows:\n%s", stdout)
	}
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "ID JOB TRIGGER STATUS SCHEDULED STARTED DURATION WORKER MESSAGE" {
		t.Fatalf("header = %q", got)
	}
	row := lines[1]
	for _, want := range []string{"SUCCEEDED", "2026-03-29T00:30:00.123Z", "2026-03-29T00:30:02.123Z", "1.5s", "w-1", "line one and?[31m red line two xxx", "…"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}
	msg := row[strings.Index(row, "line one"):]
	if n := len([]rune(msg)); n != messageWidth {
		t.Errorf("message cell has %d characters, want %d: %q", n, messageWidth, msg)
	}
	if !strings.Contains(stderr, "--cursor djEuMS4y") {
		t.Errorf("stderr %q does not announce the next page", stderr)
	}

	code, stdout, _ = cli(t, "--api", f.srv.URL, "runs", "get", "11")
	if code != exitOK {
		t.Fatalf("runs get: exit %d", code)
	}
	for _, want := range []string{
		"ID:         11\n",
		"Status:     SUCCEEDED\n",
		"Duration:   1.5s\n",
		"Stream seq: 77\n",
		"Attempt:    2\n",                   // its API attempt 1, counted from 1
		"Shard:      - (not a broadcast)\n", // shard 0 of 1: no broadcast
		"Message:    line one and?[31m red\n            line two xxx",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("runs get output lacks %q:\n%s", want, stdout)
		}
	}

	code, _, stderr = cli(t, "--api", f.srv.URL, "runs", "list", "--group", "demo", "--status", "FAILED,LOST",
		"--status", "TIMED_OUT", "--trigger-type", "retry", "--from", "2026-03-28T00:00:00Z", "--cursor", "abc")
	if code != exitOK {
		t.Fatalf("runs list with filters: exit %d, stderr %q", code, stderr)
	}
	if q := f.last().Query; q != "cursor=abc&from=2026-03-28T00%3A00%3A00Z&group=demo&status=FAILED%2CLOST%2CTIMED_OUT&trigger_type=retry" {
		t.Errorf("runs list with filters sent %q", q)
	}
	if code, _, stderr := cli(t, "--api", f.srv.URL, "runs", "list", "--from", "yesterday"); code != exitUsage || !strings.Contains(stderr, "--from") {
		t.Errorf("runs list --from yesterday: exit %d, stderr %q", code, stderr)
	}
}

func TestStatsOutput(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	stdout := f.ok(t, "stats", "--from", "2026-03-28", "--job", "1")
	if last := f.last(); last.Path != "/api/v1/stats" || last.Query != "from=2026-03-28&job=1" {
		t.Fatalf("request = %+v", last)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "DAY JOB GROUP STATUS RUNS P50 MS P95 MS P99 MS MAX MS SOURCE" {
		t.Fatalf("stats table:\n%s", stdout)
	}
	if got := strings.Join(strings.Fields(lines[1]), " "); got != "2026-03-28 1 demo SUCCEEDED 42 1500 - - - rollup" {
		t.Errorf("row = %q", got)
	}
	if stdout := f.ok(t, "stats", "-o", "json"); !strings.Contains(stdout, `"source": "live"`) {
		t.Errorf("stats -o json printed\n%s", stdout)
	}
}

func TestJobsNextAndTrigger(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	stdout := f.ok(t, "jobs", "next", "3", "-n", "2")
	// 2026-03-29 is the day Paris moves from +01:00 to +02:00.
	want := "#  UTC                       LOCAL (Europe/Paris)\n" +
		"1  2026-03-29T00:59:00.000Z  2026-03-29T01:59:00.000+01:00\n" +
		"2  2026-03-29T01:59:00.000Z  2026-03-29T03:59:00.000+02:00\n"
	if stdout != want {
		t.Fatalf("jobs next printed\n%s\nwant\n%s", stdout, want)
	}
	if q := f.requests()[0].Query; q != "n=2" {
		t.Fatalf("query = %q", q)
	}

	n := len(f.requests())
	f.ok(t, "jobs", "trigger", "1", "--params", "")
	f.ok(t, "jobs", "trigger", "1")
	reqs := f.requests()[n:]
	if len(reqs) != 2 || strings.TrimSpace(reqs[0].Body) != `{"params":""}` || strings.TrimSpace(reqs[1].Body) != `{}` {
		t.Fatalf("trigger requests = %+v", reqs)
	}
}

func TestErrorsAndUsage(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	code, stdout, stderr := cli(t, "--api", f.srv.URL, "jobs", "get", "9")
	if code != exitError || stdout != "" || stderr != "Error: api: 404 Not Found: job 9 not found\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	usage := [][]string{
		{"jobs", "frobnicate"},
		{"nope"},
		{"jobs", "get"},
		{"jobs", "get", "1", "2"},
		{"jobs", "get", "x"},
		{"jobs", "get", "0"},
		{"-o", "yaml", "jobs", "get", "1"},
		{"jobs", "list", "--limit", "many"},
		{"jobs", "list", "--bogus"},
		{"jobs", "next", "1", "-n", "0"},
	}
	for _, args := range usage {
		code, _, stderr := cli(t, append([]string{"--api", f.srv.URL}, args...)...)
		if code != exitUsage || !strings.Contains(stderr, "--help' for usage") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2", args, code, stderr)
		}
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("usage errors sent requests: %d in all, want 1", n)
	}
	if code, stdout, _ := cli(t, "jobs"); code != exitOK || !strings.Contains(stdout, "Available Commands") {
		t.Fatalf("jobs without subcommand: exit %d, stdout %q", code, stdout)
	}
}

// "jetjob workers" lists (it used to print its help), "workers list"
// still does, and both show each group's backlog before the workers.
func TestWorkersOutput(t *testing.T) {
	isolate(t)
	f := newFakeAPI(t)
	for _, args := range [][]string{{"workers"}, {"workers", "list"}, {"worker"}} {
		code, stdout, stderr := cli(t, append([]string{"--api", f.srv.URL}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		reqs := f.requests()
		if len(reqs) == 0 {
			t.Fatalf("%v: no API request; printed %q", args, stdout)
		}
		if last := reqs[len(reqs)-1]; last.Path != "/api/v1/workers" || last.Query != "" {
			t.Fatalf("%v: request %+v", args, last)
		}
		tables := strings.Split(strings.TrimRight(stdout, "\n"), "\n\n")
		if len(tables) != 2 {
			t.Fatalf("%v: want two tables separated by a blank line:\n%s", args, stdout)
		}
		groups := strings.Split(tables[0], "\n")
		if len(groups) != 3 {
			t.Fatalf("%v: groups table, want header + 2 rows:\n%s", args, tables[0])
		}
		if got := strings.Join(strings.Fields(groups[0]), " "); got != "GROUP WORKERS SLOTS RUNNING PENDING OLDEST PENDING IN FLIGHT REDELIVERED SAMPLED" {
			t.Errorf("groups header = %q", got)
		}
		if got := strings.Join(strings.Fields(groups[1]), " "); got != "idle 0 0 0 0 - 0 0 2s ago" {
			t.Errorf("idle group row = %q", got)
		}
		if got := strings.Join(strings.Fields(groups[2]), " "); got != "ops 1 2 2 198 7.3s 2 1 2s ago" {
			t.Errorf("ops group row = %q", got)
		}
		workers := strings.Split(tables[1], "\n")
		if len(workers) != 2 || !strings.HasPrefix(workers[0], "GROUP") ||
			strings.Join(strings.Fields(workers[1]), " ") != "ops w-1 h1 42 v1 [shell] 2/2 0s ago" {
			t.Errorf("%v: workers table:\n%s", args, tables[1])
		}
	}

	// --group on either form; -o json prints the API's document.
	for _, args := range [][]string{{"workers", "--group", "ops"}, {"workers", "list", "--group", "ops"}} {
		code, stdout, stderr := cli(t, append([]string{"--api", f.srv.URL, "-o", "json"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		if last := f.last(); last.Query != "group=ops" {
			t.Errorf("%v: query %q, want group=ops", args, last.Query)
		}
		var l apiv1.WorkerList
		if err := json.Unmarshal([]byte(stdout), &l); err != nil {
			t.Fatalf("%v: -o json printed %q: %v", args, stdout, err)
		}
		if len(l.Groups) != 1 || l.Groups[0].Pending != 198 || l.Groups[0].OldestPendingSeconds != 7.25 || len(l.Workers) != 1 {
			t.Errorf("%v: document %+v", args, l)
		}
	}

	// A stray argument is a usage error, not a silent listing.
	if code, _, stderr := cli(t, "--api", f.srv.URL, "workers", "lsit"); code != exitUsage || !strings.Contains(stderr, "lsit") {
		t.Errorf("workers lsit: exit %d, stderr %q; want exit %d naming the argument", code, stderr, exitUsage)
	}
}
