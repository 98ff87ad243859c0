package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/testdns"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// server is an httptest server on 127.0.0.1 that records its requests.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []string // "METHOD path header-X body"
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, fmt.Sprintf("%s %s %s %s", r.Method, r.URL.Path, r.Header.Get("X-Test"), body))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...)
}

// port is the server's port, to build URLs naming other hosts.
func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

func TestHTTPAllowedHostSucceeds(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "created ok")
	})
	e := newEnv(t, map[string]worker.HandlerFunc{"http": builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1"}})})
	e.Publish(trigger(1, "http", fmt.Sprintf(
		`{"method": "post", "url": "%s/hook", "headers": {"X-Test": "yes"}, "body": "payload", "expect_status": [200, 201]}`, srv.URL)))
	e.Publish(trigger(2, "http", fmt.Sprintf(`{"url": "%s/plain"}`, srv.URL)))
	for _, id := range []int64{1, 2} {
		if f := e.finished(id); f.Status != wire.StatusSucceeded {
			t.Errorf("run %d finished %+v", id, f)
		}
	}
	if got, want := srv.requests(), []string{"POST /hook yes payload", "GET /plain  "}; !sameSet(got, want) {
		t.Errorf("server saw %q, want %q", got, want)
	}
	var logged bool
	for _, l := range e.logLines(1) {
		logged = logged || (l.Level == "info" && l.Msg == `HTTP response {"status":201,"body":"created ok"}`)
	}
	if !logged {
		t.Errorf("response not in the run log: %+v", e.logLines(1))
	}
}

func TestHTTPUnexpectedStatusFails(t *testing.T) {
	long := "service down " + strings.Repeat("x", 3000)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, long)
	})
	e := newEnv(t, map[string]worker.HandlerFunc{"http": builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1"}})})
	e.Publish(trigger(1, "http", fmt.Sprintf(`{"url": "%s/down", "expect_status": [200]}`, srv.URL)))
	e.Publish(trigger(2, "http", fmt.Sprintf(`{"url": "%s/missing"}`, srv.URL)))
	e.Publish(trigger(3, "http", fmt.Sprintf(`{"url": "%s/down", "expect_status": [503]}`, srv.URL)))

	want := fmt.Sprintf("HTTP 503 from %s/down: %s", srv.URL, long[:1024])
	if f := e.finished(1); f.Status != wire.StatusFailed || f.Message != want {
		t.Errorf("finished %+v, want FAILED with %q", f, want)
	}
	want = fmt.Sprintf("HTTP 404 from %s/missing: 404 page not found", srv.URL)
	if f := e.finished(2); f.Status != wire.StatusFailed || f.Message != want {
		t.Errorf("finished %+v, want FAILED with %q", f, want)
	}
	if f := e.finished(3); f.Status != wire.StatusSucceeded {
		t.Errorf("expected 503: finished %+v", f)
	}
	var logged bool
	for _, l := range e.logLines(1) {
		logged = logged || (l.Level == "warn" && strings.HasPrefix(l.Msg, `HTTP response {"status":503,"body":"service down xxx`))
	}
	if !logged {
		t.Errorf("response not in the run log: %+v", e.logLines(1))
	}
}

// A host outside the allow-list is refused before any request is sent,
// also when a redirect leads there.
func TestHTTPDisallowedHost(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+r.Host[strings.LastIndexByte(r.Host, ':')+1:]+"/elsewhere", http.StatusFound)
	})
	local := "http://localhost:" + srv.port() + "/x"
	for _, c := range []struct {
		allow []string
		url   string
		want  []string
	}{
		{[]string{"127.0.0.1"}, local, []string{`host "localhost:` + srv.port() + `" is not allowed`, "--http-allow-hosts", "JETJOB_HTTP_ALLOW_HOSTS", "currently 127.0.0.1"}},
		{nil, srv.URL, []string{`host "127.0.0.1:` + srv.port() + `" is not allowed`, "empty: every request is refused"}},
		{[]string{"127.0.0.1:1"}, srv.URL, []string{"is not allowed"}},
		{[]string{"*.example.com"}, "http://example.com/", []string{`host "example.com" is not allowed`}},
		{[]string{"*.example.com"}, "http://evil-example.com/", []string{`host "evil-example.com" is not allowed`}},
	} {
		h := builtin.HTTP(builtin.HTTPConfig{AllowHosts: c.allow})
		err := h(context.Background(), directJob(zap.NewNop(), fmt.Sprintf(`{"url": %q}`, c.url)))
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("allow %q, url %s: %v, want an error containing %q", c.allow, c.url, err, w)
			}
		}
	}
	if got := srv.requests(); len(got) != 0 {
		t.Fatalf("requests sent to disallowed hosts: %q", got)
	}

	h := builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1"}})
	err := h(context.Background(), directJob(zap.NewNop(), fmt.Sprintf(`{"url": "%s/start"}`, srv.URL)))
	if err == nil || !strings.Contains(err.Error(), "redirect to http://localhost:"+srv.port()+"/elsewhere refused") {
		t.Errorf("redirect to a disallowed host: %v", err)
	}
	if got := srv.requests(); len(got) != 1 || !strings.HasPrefix(got[0], "GET /start") {
		t.Errorf("server saw %q, want only the first request", got)
	}
}

// Wildcards and host names: the names resolve to the test server (on
// 127.0.0.1, allowed to the egress policy explicitly), so the allow-list
// alone decides.
func TestHTTPWildcardAllowed(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Host) })
	dns := testdns.Start(t)
	for _, name := range []string{"api.example.com", "a.b.example.com", "exact.test", "sub.exact.test"} {
		dns.Set(name, netip.MustParseAddr("127.0.0.1"))
	}
	h := builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"*.Example.com", "exact.test"},
		Egress: builtin.Egress{Allow: []string{"127.0.0.1"}, Resolver: dns.Resolver()}})
	port := srv.port()
	for _, u := range []string{"http://api.example.com:" + port + "/", "http://a.b.EXAMPLE.com:" + port + "/", "http://exact.test:" + port + "/"} {
		core, logs := observer.New(zapcore.InfoLevel)
		if err := h(context.Background(), directJob(zap.New(core), fmt.Sprintf(`{"url": %q}`, u))); err != nil {
			t.Errorf("%s: %v", u, err)
		}
		if logs.FilterMessage("HTTP response").Len() != 1 {
			t.Errorf("%s: response not logged: %v", u, logs.All())
		}
	}
	if err := h(context.Background(), directJob(zap.NewNop(), `{"url": "http://sub.exact.test:`+port+`/"}`)); err == nil {
		t.Error("an exact host allowed its subdomain")
	}
	if n := len(srv.requests()); n != 3 {
		t.Errorf("%d requests, want 3", n)
	}
}

// The request is bound to the run's context.
func TestHTTPRequestBoundToContext(t *testing.T) {
	cancelled := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		close(cancelled)
	})
	h := builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := h(ctx, directJob(zap.NewNop(), fmt.Sprintf(`{"url": "%s/slow"}`, srv.URL)))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("handler: %v, want context.DeadlineExceeded", err)
	}
	select {
	case <-cancelled:
	case <-time.After(waitLimit):
		t.Error("the server's request was not cancelled")
	}
}

func TestHTTPBadParams(t *testing.T) {
	h := builtin.HTTP(builtin.HTTPConfig{AllowHosts: []string{"*"}})
	for params, want := range map[string]string{
		"GET http://x/":                                 "params must be a JSON object",
		`{"url": "http://x/", "retries": 3}`:            `unknown field "retries"`,
		`{"method": "GET"}`:                             `"url" is required`,
		`{"url": "ftp://x/"}`:                           "want an http or https URL",
		`{"url": "http:///path"}`:                       "has no host",
		`{"url": "http://x/", "expect_status": [42]}`:   "expect_status 42",
		`{"url": "http://x/", "headers": {"A b": "c"}}`: `header "A b"`,
		`{"url": "http://x/"} {}`:                       "data after the object",
	} {
		err := h(context.Background(), directJob(zap.NewNop(), params))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("params %s: %v, want an error containing %q", params, err, want)
		}
	}
}

func TestCheckAllowHosts(t *testing.T) {
	if err := builtin.CheckAllowHosts([]string{"a.example.com", "*.example.com", "10.0.0.1:8080", "*", "::1"}); err != nil {
		t.Errorf("valid list refused: %v", err)
	}
	for _, bad := range []string{"", "https://a.com", "a.com/path", "*.", "a.*.com", "foo*", "user@host"} {
		if err := builtin.CheckAllowHosts([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}
