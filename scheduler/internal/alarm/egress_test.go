package alarm

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/testdns"
)

// internalBody is what an internal service answers: it must never reach
// a delivery's recorded error, which every viewer of the alert reads.
const internalBody = "postgres-password=hunter2 INTERNAL-ONLY"

// hook is a webhook endpoint counting its requests.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

func (h *hook) posts() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bodies)
}

// internalServer is a service on 127.0.0.1 that answers status with a body
// only the scheduler's host should see.
func internalServer(t *testing.T, status int) (*httptest.Server, *hook) {
	h := &hook{}
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

// By default a webhook channel (a job's alarm_webhook) reaches no internal address: not a loopback
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
		err := webhookTo(s, url, testAlarm())
		msg := fmt.Sprint(err)
		if err == nil || !strings.Contains(msg, "denied by egress policy") {
			t.Errorf("webhook %s: %q, want the egress policy's refusal", url, msg)
		}
		if strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "alerts.example.test") {
			t.Errorf("webhook %s: error %q names the target or what it resolved to", url, msg)
		}
	}
	if n := len(inner.posts()); n != 0 {
		t.Errorf("the internal service got %d requests", n)
	}
}

// A redirect from an allowed target to an internal one is not followed:
// a channel's webhook answers where it is, so no redirect is.
func TestWebhookRedirectToInternalTargetRefused(t *testing.T) {
	srv, inner := internalServer(t, http.StatusOK)
	_, port, _ := net.SplitHostPort(hostPort(t, srv))
	for _, to := range []string{srv.URL + "/steal", "http://localhost:" + port + "/steal"} {
		redirector := httptest.NewServer(http.RedirectHandler(to, http.StatusTemporaryRedirect))
		// The operator allowed the redirector (say, a relay on the
		// private network), not what it points to.
		s := newEgressSender(t, Config{}, egress.Config{Allow: []string{hostPort(t, redirector)}})
		err := webhookTo(s, redirector.URL, testAlarm())
		redirector.Close()
		if want := "HTTP 307 Temporary Redirect (redirects are not followed)"; err == nil || err.Error() != want {
			t.Errorf("redirect to %s: %v, want %q", to, err, want)
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
		msg := fmt.Sprint(webhookTo(s, srv.URL, testAlarm()))
		want := fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
		if status == http.StatusFound {
			want += " (redirects are not followed)"
		}
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
	msg := fmt.Sprint(webhookTo(s, "http://"+addr+"/x", testAlarm()))
	if msg != "connection refused" {
		t.Errorf("alarm error %q, want %q", msg, "connection refused")
	}
}
