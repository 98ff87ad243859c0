package egress_test

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

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/testdns"
)

// waitLimit bounds waits for what must happen (a loaded machine is slow,
// never this slow).
const waitLimit = 30 * time.Second

// listener is a TCP listener on 127.0.0.1 that records the remote address
// of every connection it accepts.
type listener struct {
	net.Listener
	accepted chan string
}

func listen(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{Listener: ln, accepted: make(chan string, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted <- c.RemoteAddr().String()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

func (l *listener) addrPort() netip.AddrPort { return l.Addr().(*net.TCPAddr).AddrPort() }

// noConnectionBefore proves that nothing connected to l before now: a
// plain connection made now must be the first l accepts (connect(2) of a
// refused dial never ran, so it cannot be queued ahead of this one).
func (l *listener) noConnectionBefore(t *testing.T) {
	t.Helper()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case got := <-l.accepted:
		if got != c.LocalAddr().String() {
			t.Errorf("the listener accepted a connection from %s before the test's own: a refused dial connected", got)
		}
	case <-time.After(waitLimit):
		t.Fatal("the test's own connection was not accepted")
	}
}

func mustPolicy(t *testing.T, cfg egress.Config) *egress.Policy {
	t.Helper()
	p, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The default policy refuses a loopback listener by address and by a name
// that resolves to it, from /etc/hosts (localhost) or from DNS, before
// connect(2); allowing the address or the exact name lets it through.
func TestDialChecksTheAddressConnectedTo(t *testing.T) {
	l := listen(t)
	port := l.addrPort().Port()
	dns := testdns.Start(t)
	dns.Set("hook.example.test", netip.MustParseAddr("127.0.0.1"))
	def := mustPolicy(t, egress.Config{Resolver: dns.Resolver()})
	ctx := t.Context()

	for _, host := range []string{"127.0.0.1", "localhost", "hook.example.test"} {
		addr := net.JoinHostPort(host, fmt.Sprint(port))
		c, err := def.DialContext(ctx, "tcp", addr)
		var d *egress.DeniedError
		if err == nil {
			c.Close()
			t.Fatalf("dial %s: connected, want denied", addr)
		}
		if !errors.Is(err, egress.ErrDenied) || !errors.As(err, &d) || d.Reason != "loopback" {
			t.Errorf("dial %s: %v, want denied as loopback", addr, err)
		}
		l.noConnectionBefore(t)
	}
	if n := dns.Lookups("hook.example.test"); n == 0 {
		t.Error("hook.example.test was never looked up: the test DNS server was not used")
	}

	for _, allow := range []string{"127.0.0.1:" + fmt.Sprint(port), "127.0.0.0/8", "hook.example.test"} {
		p := mustPolicy(t, egress.Config{Allow: []string{allow}, Resolver: dns.Resolver()})
		host := "127.0.0.1"
		if allow == "hook.example.test" {
			host = allow
		}
		c, err := p.DialContext(ctx, "tcp", net.JoinHostPort(host, fmt.Sprint(port)))
		if err != nil {
			t.Fatalf("allow %s: %v", allow, err)
		}
		select {
		case got := <-l.accepted:
			if got != c.LocalAddr().String() {
				t.Errorf("allow %s: accepted %s, want %s", allow, got, c.LocalAddr())
			}
		case <-time.After(waitLimit):
			t.Fatalf("allow %s: not accepted", allow)
		}
		c.Close()
	}
}

// A name allowed exactly trusts what it resolves to; DNS cannot lend that
// trust to another name, and a name that changes its answer is checked
// again on the next connection (there is no window between a check and
// the connection it is about).
func TestDialRechecksEveryConnection(t *testing.T) {
	l := listen(t)
	addr := l.addrPort()
	dns := testdns.Start(t)
	dns.Set("flip.example.test", netip.MustParseAddr("192.0.2.10")) // documentation: denied, never connected
	p := mustPolicy(t, egress.Config{Allow: []string{"127.0.0.1:" + fmt.Sprint(addr.Port())}, Resolver: dns.Resolver()})
	target := net.JoinHostPort("flip.example.test", fmt.Sprint(addr.Port()))
	if _, err := p.DialContext(t.Context(), "tcp", target); !errors.Is(err, egress.ErrDenied) {
		t.Fatalf("while it resolves to 192.0.2.10: %v, want denied", err)
	}
	dns.Set("flip.example.test", netip.MustParseAddr("127.0.0.1"))
	c, err := p.DialContext(t.Context(), "tcp", target)
	if err != nil {
		t.Fatalf("after it resolves to the allowed 127.0.0.1: %v", err)
	}
	c.Close()
	if _, err := p.DialContext(t.Context(), "udp", target); err == nil || !strings.Contains(err.Error(), "only TCP") {
		t.Errorf("UDP: %v, want refused", err)
	}
}

// The process's own listener is refused even inside an allowed range.
func TestDialRefusesOwnListener(t *testing.T) {
	own, other := listen(t), listen(t)
	p := mustPolicy(t, egress.Config{Allow: []string{"127.0.0.0/8", "localhost"}, Self: []netip.AddrPort{own.addrPort()}})
	for _, host := range []string{"127.0.0.1", "localhost"} {
		_, err := p.DialContext(t.Context(), "tcp", net.JoinHostPort(host, fmt.Sprint(own.addrPort().Port())))
		if !errors.Is(err, egress.ErrDenied) || !strings.Contains(err.Error(), "own listener") {
			t.Errorf("own listener by %s: %v, want denied as the process's own", host, err)
		}
	}
	own.noConnectionBefore(t)
	c, err := p.DialContext(t.Context(), "tcp", other.Addr().String())
	if err != nil {
		t.Fatalf("another allowed listener: %v", err)
	}
	c.Close()
}

// hookServer is an HTTP server on 127.0.0.1 counting its requests.
type hookServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits int
}

func newHookServer(t *testing.T, h http.HandlerFunc) *hookServer {
	s := &hookServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits++
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hookServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits
}

func (s *hookServer) port() uint16 { return s.Listener.Addr().(*net.TCPAddr).AddrPort().Port() }

// A client of the policy follows a redirect only to an allowed target:
// one to a denied address or to a name resolving to one is refused before
// any request reaches it, and a chain ends after MaxRedirects hops.
func TestClientRedirects(t *testing.T) {
	inner := newHookServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal secret") })
	var to string
	outer := newHookServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/loop" {
			http.Redirect(w, r, "/loop", http.StatusFound)
			return
		}
		http.Redirect(w, r, to, http.StatusTemporaryRedirect)
	})
	// Only the redirecting server is allowed.
	p := mustPolicy(t, egress.Config{Allow: []string{fmt.Sprintf("127.0.0.1:%d", outer.port())}})
	client := p.Client(waitLimit)

	for _, target := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", inner.port()),
		fmt.Sprintf("http://localhost:%d/", inner.port()),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", inner.port()),
		"http://169.254.169.254/latest/meta-data/",
	} {
		to = target
		resp, err := client.Post(outer.URL+"/hook", "application/json", strings.NewReader("{}"))
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Fatalf("redirect to %s: HTTP %d %q, want refused", target, resp.StatusCode, body)
		}
		if !errors.Is(err, egress.ErrDenied) {
			t.Errorf("redirect to %s: %v, want denied by the egress policy", target, err)
		}
	}
	if n := inner.requests(); n != 0 {
		t.Errorf("the internal server got %d requests through redirects", n)
	}

	before := outer.requests()
	_, err := client.Get(outer.URL + "/loop")
	if !errors.Is(err, egress.ErrTooManyRedirects) {
		t.Errorf("redirect loop: %v, want ErrTooManyRedirects", err)
	}
	if n := outer.requests() - before; n != egress.MaxRedirects+1 {
		t.Errorf("redirect loop: %d requests, want the first and %d redirects", n, egress.MaxRedirects)
	}
	if _, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", inner.port())); !errors.Is(err, egress.ErrDenied) {
		t.Errorf("direct request to the internal server: %v, want denied", err)
	}
}

// Summary gives a class of failure and never what the target sent or
// what a name resolved to.
func TestSummary(t *testing.T) {
	l := listen(t)
	closed := l.Addr().String()
	l.Close()
	dns := testdns.Start(t)
	dns.Set("private.example.test", netip.MustParseAddr("10.1.2.3"))
	p := mustPolicy(t, egress.Config{Allow: []string{"127.0.0.1"}, Resolver: dns.Resolver()})
	client := p.Client(waitLimit)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for url, want := range map[string]string{
		"http://private.example.test/":   "denied by egress policy (private address)",
		"http://169.254.169.254/":        "denied by egress policy (cloud metadata address)",
		"http://" + closed + "/":         "connection refused",
		"http://no-such.example.test/":   "host name did not resolve",
		"https://" + closed + "/x?token": "connection refused",
	} {
		_, err := client.Get(url)
		if got := egress.Summary(err); got != want {
			t.Errorf("%s: Summary(%v) = %q, want %q", url, err, got, want)
		}
		if strings.Contains(egress.Summary(err), "10.1.2.3") {
			t.Errorf("%s: the summary shows the resolved address", url)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+closed+"/", nil)
	if _, err := client.Do(req); egress.Summary(err) != "cancelled" {
		t.Errorf("cancelled request: %q", egress.Summary(err))
	}
}
