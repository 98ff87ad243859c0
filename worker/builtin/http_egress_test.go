package builtin_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/testdns"
	"github.com/jetjob/jetjob/worker/builtin"
)

// httpHandler is the handler of cfg, run once per call on params.
func httpHandler(cfg builtin.HTTPConfig) func(params string) error {
	h := builtin.HTTP(cfg)
	return func(params string) error { return h(context.Background(), directJob(zap.NewNop(), params)) }
}

// A wildcard or "*" allows names, not addresses: a name it matches that
// resolves to the worker's loopback, and the metadata endpoint, are
// refused before any connection.
func TestHTTPWildcardDoesNotReachInternalAddresses(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") })
	h := httpHandler(builtin.HTTPConfig{AllowHosts: []string{"*"}})
	for _, u := range []string{
		"http://localhost:" + srv.port() + "/admin",
		srv.URL + "/admin",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::ffff:127.0.0.1]:" + srv.port() + "/admin",
	} {
		err := h(fmt.Sprintf(`{"url": %q}`, u))
		if err == nil || !strings.Contains(err.Error(), "denied by egress policy") || !strings.Contains(err.Error(), "JETJOB_EGRESS_ALLOW") {
			t.Errorf("%s under \"*\": %v, want denied by the egress policy with the way to allow it", u, err)
		}
	}
	if got := srv.requests(); len(got) != 0 {
		t.Errorf("the internal server got %q", got)
	}
}

// An exact entry with a port trusts that address and port only: a
// redirect to another port of the same host is refused.
func TestHTTPRedirectToAnotherInternalPortRefused(t *testing.T) {
	inner := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal") })
	outer := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+inner.port()+"/steal", http.StatusFound)
	})
	h := httpHandler(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1:" + outer.port(), "*"}})
	err := h(fmt.Sprintf(`{"url": "%s/start"}`, outer.URL))
	if err == nil || !strings.Contains(err.Error(), "denied by egress policy") {
		t.Errorf("redirect to localhost:%s: %v, want denied by the egress policy", inner.port(), err)
	}
	if got := inner.requests(); len(got) != 0 {
		t.Errorf("the internal server got %q through a redirect", got)
	}
}

// A Host header may only name an allowed host: otherwise a job would
// reach, on an allowed server, a virtual host nobody allowed.
func TestHTTPHostHeaderMustBeAllowed(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Host) })
	h := httpHandler(builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1", "public.example.com"}})
	for _, host := range []string{"admin.internal", "metadata.google.internal", "127.0.0.1.nip.io", "localhost"} {
		err := h(fmt.Sprintf(`{"url": "%s/", "headers": {"host": %q}}`, srv.URL, host))
		if err == nil || !strings.Contains(err.Error(), "Host header") || !strings.Contains(err.Error(), "is not allowed") {
			t.Errorf("Host %s: %v, want refused as a host outside the allow-list", host, err)
		}
	}
	if got := srv.requests(); len(got) != 0 {
		t.Fatalf("requests sent with a disallowed Host header: %q", got)
	}
	for _, host := range []string{"public.example.com", "127.0.0.1"} {
		if err := h(fmt.Sprintf(`{"url": "%s/", "headers": {"Host": %q}}`, srv.URL, host)); err != nil {
			t.Errorf("Host %s (allowed): %v", host, err)
		}
	}
	if got := srv.requests(); len(got) != 2 {
		t.Errorf("%d requests with allowed Host headers, want 2", len(got))
	}
}

// What an allow-list entry trusts: an exact name may resolve to an
// internal address (the operator named it); a wildcard name may only when
// --egress-allow allows the range; the worker's own listener never.
func TestHTTPEgressPolicy(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	dns := testdns.Start(t)
	for _, name := range []string{"billing.internal.test", "api.svc.internal.test"} {
		dns.Set(name, netip.MustParseAddr("127.0.0.1"))
	}
	port := srv.port()
	cases := []struct {
		name   string
		cfg    builtin.HTTPConfig
		url    string
		denied string // "" succeeds
	}{
		{"exact name", builtin.HTTPConfig{AllowHosts: []string{"billing.internal.test"}},
			"http://billing.internal.test:" + port + "/", ""},
		{"exact name with its port", builtin.HTTPConfig{AllowHosts: []string{"billing.internal.test:" + port}},
			"http://billing.internal.test:" + port + "/", ""},
		{"exact localhost", builtin.HTTPConfig{AllowHosts: []string{"localhost"}}, "http://localhost:" + port + "/", ""},
		{"wildcard", builtin.HTTPConfig{AllowHosts: []string{"*.internal.test"}},
			"http://api.svc.internal.test:" + port + "/", "loopback address"},
		{"wildcard with the range allowed", builtin.HTTPConfig{AllowHosts: []string{"*.internal.test"},
			Egress: builtin.Egress{Allow: []string{"127.0.0.0/8"}}}, "http://api.svc.internal.test:" + port + "/", ""},
		{"wildcard with another range allowed", builtin.HTTPConfig{AllowHosts: []string{"*.internal.test"},
			Egress: builtin.Egress{Allow: []string{"10.0.0.0/8"}}}, "http://api.svc.internal.test:" + port + "/", "loopback address"},
		{"own listener", builtin.HTTPConfig{AllowHosts: []string{"127.0.0.1"},
			Egress: builtin.Egress{Self: []netip.AddrPort{netip.MustParseAddrPort(srv.Listener.Addr().String())}}},
			srv.URL + "/metrics", "own listener"},
	}
	for _, c := range cases {
		c.cfg.Egress.Resolver = dns.Resolver()
		before := len(srv.requests())
		err := httpHandler(c.cfg)(fmt.Sprintf(`{"url": %q}`, c.url))
		switch {
		case c.denied == "" && err != nil:
			t.Errorf("%s: %v, want success", c.name, err)
		case c.denied != "" && (err == nil || !strings.Contains(err.Error(), "denied by egress policy: ") || !strings.Contains(err.Error(), c.denied)):
			t.Errorf("%s: %v, want denied (%s)", c.name, err, c.denied)
		case c.denied != "" && len(srv.requests()) != before:
			t.Errorf("%s: denied, yet the server got the request", c.name)
		}
	}
	bad := httpHandler(builtin.HTTPConfig{AllowHosts: []string{"*"}, Egress: builtin.Egress{Allow: []string{"*.internal"}}})
	if err := bad(`{"url": "http://example.com/"}`); err == nil || !strings.Contains(err.Error(), "wildcards are not allowed") {
		t.Errorf("a handler with a bad egress allow-list: %v, want every run to fail naming the problem", err)
	}
}
