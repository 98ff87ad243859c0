package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
)

// TestMain starts the throwaway PostgreSQL the real API servers of these
// tests run on (one database per server).
func TestMain(m *testing.M) { pgtest.Main(m) }

// bootstrapToken is the real servers' JETJOB_API_TOKEN: the admin
// "bootstrap", the way in before any user exists.
const bootstrapToken = "cli-test-bootstrap-token"

// realAPI is jetjob's API server (package api, with access control) over a
// fresh PostgreSQL database. It counts the requests it serves, so that a
// test can tell a command refused on the command line sent none.
type realAPI struct {
	URL  string
	reqs atomic.Int64
}

func newRealAPI(t *testing.T) *realAPI { return newRealAPIWith(t, nil) }

// isolatedAPI is how most tests start: the CLI isolated from the user's
// configuration (isolate), a fresh real server, and groups created on it.
func isolatedAPI(t *testing.T, groups ...string) *realAPI {
	t.Helper()
	isolate(t)
	r := newRealAPI(t)
	for _, g := range groups {
		r.admin(t, "", "groups", "create", g)
	}
	return r
}

// newRealAPIWith is newRealAPI with its configuration changed by edit.
// newRealAPIWithSender is newRealAPI with an alert sender for "channels
// test", allowed to reach receivers on 127.0.0.1.
func newRealAPIWithSender(t *testing.T) *realAPI {
	t.Helper()
	policy, err := egress.New(egress.Config{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	sender, err := alarm.New(alarm.Config{}, alarm.Deps{Log: zaptest.NewLogger(t), Egress: policy})
	if err != nil {
		t.Fatal(err)
	}
	return newRealAPIWith(t, func(c *api.Config) { c.SendTest = sender.SendTest })
}

func newRealAPIWith(t *testing.T, edit func(*api.Config)) *realAPI {
	t.Helper()
	st, _ := apitest.Store(t)
	cfg := apitest.Config()
	cfg.Token = bootstrapToken
	cfg.InsecureCookies = true // the test server speaks plain HTTP, like dev
	if edit != nil {
		edit(&cfg)
	}
	h, err := api.New(cfg, st, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	r := &realAPI{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.reqs.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// result is what one CLI invocation did.
type result struct {
	code           int
	stdout, stderr string
}

// as runs the CLI against the server with token ("" for none: the config
// file, if any, gives it) and stdin.
func (r *realAPI) as(t *testing.T, token, stdin string, args ...string) result {
	t.Helper()
	full := []string{"--api", r.URL}
	if token != "" {
		full = append(full, "--token", token)
	}
	return runCLI(t, stdin, append(full, args...)...)
}

// admin runs the CLI as the bootstrap admin and requires success.
func (r *realAPI) admin(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	res := r.as(t, bootstrapToken, stdin, args...)
	if res.code != exitOK {
		t.Fatalf("%v: exit %d, stderr %q", args, res.code, res.stderr)
	}
	return res.stdout
}

// adminJSON runs the CLI as the bootstrap admin with -o json, requires
// success, and decodes what it printed.
func adminJSON[T any](t *testing.T, r *realAPI, args ...string) T {
	t.Helper()
	return decodeJSON[T](t, must(t, r.as(t, bootstrapToken, "", append([]string{"-o", "json"}, args...)...), strings.Join(args, " ")))
}

// runCLI runs the jetjob root command in-process with stdin.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// printed fails the test (going on) for each of wants that what's output
// out lacks.
func printed(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s printed\n%s\nwithout %q", what, out, w)
		}
	}
}

// must fails the test unless res succeeded.
func must(t *testing.T, res result, what string) result {
	t.Helper()
	if res.code != exitOK {
		t.Fatalf("%s: exit %d, stdout %q, stderr %q", what, res.code, res.stdout, res.stderr)
	}
	return res
}
