package alarm

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/testdns"
)

// internalBody is what an internal service answers: it must never reach
// alarm_error, which every viewer reads.
const internalBody = "postgres-password=hunter2 INTERNAL-ONLY"

// internalServer is a service on 127.0.0.1 that answers status with a body
// only the scheduler's host should see.
func internalServer(t *testing.T, status int) (*httptest.Server, *hook) {
	h := &hook{status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.bodies = append(h.bodies, nil)
		h.mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprint(w, internalBody)
	}))
	t.Cleanup(h.srv.Close)
	return h.srv, h
}

func hostPort(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	return srv.Listener.Addr().String()
}

// By default an alarm webhook reaches no internal address: not a loopback
// URL, not a name that resolves to loopback (from /etc/hosts or DNS), not
// the metadata endpoint, and not through a redirect from a public-looking
// target. Nothing reaches the internal service, and the recorded error
// says the policy refused, with no body.
func TestWebhookDefaultDeniesInternalTargets(t *testing.T) {
	srv, inner := internalServer(t, http.StatusOK)
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	dns := testdns.Start(t)
	dns.Set("alerts.example.test", netip.MustParseAddr("127.0.0.1"))
	s := newEgressSender(t, Config{}, egress.Config{Resolver: dns.Resolver()})

	for _, url := range []string{
		srv.URL + "/hook",
		"http://localhost:" + port + "/hook",
		"http://alerts.example.test:" + port + "/hook",
		"http://[::ffff:127.0.0.1]:" + port + "/hook",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
	} {
		p := &pending{alarm: *testAlarm(), webhook: url}
		status, _, msg := s.send(t.Context(), p)
		if status != "pending" || !strings.Contains(msg, "denied by egress policy") {
			t.Errorf("webhook %s: %s %q, want pending with the egress policy's refusal", url, status, msg)
		}
		if strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "alerts.example.test") {
			t.Errorf("webhook %s: error %q names the target or what it resolved to", url, msg)
		}
	}
	if n := len(inner.posts()); n != 0 {
		t.Errorf("the internal service got %d requests", n)
	}
}

// A redirect from an allowed target to an internal one is refused: the
// hop is checked like the first request.
func TestWebhookRedirectToInternalTargetRefused(t *testing.T) {
	srv, inner := internalServer(t, http.StatusOK)
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	for _, to := range []string{srv.URL + "/steal", "http://localhost:" + port + "/steal"} {
		redirector := httptest.NewServer(http.RedirectHandler(to, http.StatusTemporaryRedirect))
		// The operator allowed the redirector (say, a relay on the
		// private network), not what it points to.
		s := newEgressSender(t, Config{}, egress.Config{Allow: []string{hostPort(t, redirector)}})
		err := s.webhook(t.Context(), redirector.URL, testAlarm())
		redirector.Close()
		if !errors.Is(err, egress.ErrDenied) {
			t.Errorf("redirect to %s: %v, want denied by the egress policy", to, err)
		}
		if err != nil && strings.Contains(err.Error(), "INTERNAL") {
			t.Errorf("redirect to %s: error %q quotes the target's body", to, err)
		}
	}
	if n := len(inner.posts()); n != 0 {
		t.Errorf("the internal service got %d requests through redirects", n)
	}
}

// An allowed internal receiver that fails is recorded with its status
// code alone: none of its body, whatever the status.
func TestAlarmErrorHasNoBody(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusNotFound, http.StatusFound, http.StatusUnauthorized} {
		srv, _ := internalServer(t, status)
		s := newEgressSender(t, Config{}, egress.Config{Allow: []string{hostPort(t, srv)}})
		p := &pending{alarm: *testAlarm(), webhook: srv.URL}
		_, _, msg := s.send(t.Context(), p)
		want := fmt.Sprintf("webhook: HTTP %d %s", status, http.StatusText(status))
		if msg != want {
			t.Errorf("receiver answering %d: alarm error %q, want %q", status, msg, want)
		}
	}
}

// Connection failures are recorded as a class, never with the target's
// address.
func TestAlarmErrorOfAFailedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := newEgressSender(t, Config{}, egress.Config{Allow: []string{addr}})
	_, _, msg := s.send(t.Context(), &pending{alarm: *testAlarm(), webhook: "http://" + addr + "/x"})
	if msg != "webhook: connection refused" {
		t.Errorf("alarm error %q, want %q", msg, "webhook: connection refused")
	}
}
