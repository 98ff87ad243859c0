package alarm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// hook is a webhook endpoint answering with a status the test sets.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int
	bodies [][]byte
}

func startHook(t *testing.T, status int) *hook {
	h := &hook{status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		h.bodies = append(h.bodies, body)
		http.Error(w, http.StatusText(h.status), h.status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) posts() [][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bodies)
}

func newClockedSender(t *testing.T, cfg Config) (*Sender, *fakeclock.Clock) {
	s := newSender(t, cfg)
	clk := fakeclock.New(time.Date(2026, 11, 22, 2, 31, 0, 0, time.UTC))
	s.now = clk.Now
	return s, clk
}

// A failing channel is tried again after 5 s, then 10 s (the default
// backoff, doubled), and the alarm is recorded failed at the third
// attempt (the default), with the receiver's answer as the error.
func TestFailingAlarmRetriesWithBackoffThenFails(t *testing.T) {
	h := startHook(t, http.StatusServiceUnavailable)
	s, clk := newClockedSender(t, Config{})
	p := &pending{alarm: *testAlarm(), webhook: h.srv.URL}

	for i, wantWait := range []time.Duration{5 * time.Second, 10 * time.Second} {
		status, next, msg := s.send(t.Context(), p)
		if status != "pending" || next == nil || !next.Equal(clk.Now().Add(wantWait)) {
			t.Fatalf("attempt %d: %s, next %v; want pending, next in %s", i+1, status, next, wantWait)
		}
		if !strings.Contains(msg, "webhook") || !strings.Contains(msg, "HTTP 503") {
			t.Errorf("attempt %d: error %q, want the channel and the receiver's HTTP 503", i+1, msg)
		}
		clk.Advance(wantWait)
	}
	status, next, msg := s.send(t.Context(), p)
	if status != "failed" || next != nil || p.attempts != 3 || msg == "" {
		t.Errorf("attempt 3: %s, next %v, attempts %d, error %q; want failed for good with the error", status, next, p.attempts, msg)
	}
	if n := len(h.posts()); n != 3 {
		t.Errorf("webhook received %d posts, want one per attempt (3)", n)
	}
}

// The retry schedule follows Attempts and Backoff.
func TestRetryScheduleFollowsTheConfig(t *testing.T) {
	h := startHook(t, http.StatusInternalServerError)
	s, clk := newClockedSender(t, Config{Attempts: 5, Backoff: time.Second})
	p := &pending{alarm: *testAlarm(), webhook: h.srv.URL}
	var waits []time.Duration
	for {
		status, next, _ := s.send(t.Context(), p)
		if status != "pending" {
			if status != "failed" {
				t.Fatalf("status %s, want pending until failed", status)
			}
			break
		}
		waits = append(waits, next.Sub(clk.Now()))
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}; !slices.Equal(waits, want) {
		t.Errorf("waits %v before failing, want %v", waits, want)
	}
}

// A channel that delivered is not sent again when another channel of the
// same alarm fails and is retried; email without an SMTP server fails
// naming the setting to fix.
func TestDeliveredChannelIsNotSentAgain(t *testing.T) {
	h := startHook(t, http.StatusNoContent)
	s, _ := newClockedSender(t, Config{})
	p := &pending{alarm: *testAlarm(), webhook: h.srv.URL, emails: []string{"oncall@example.com"}}

	status, next, msg := s.send(t.Context(), p)
	if status != "pending" || next == nil || !strings.Contains(msg, "JETJOB_SMTP_HOST") {
		t.Errorf("first round: %s, next %v, error %q; want pending, naming JETJOB_SMTP_HOST", status, next, msg)
	}
	if !slices.Equal(p.sent, []string{"webhook"}) {
		t.Errorf("sent %v, want [webhook]", p.sent)
	}
	if status, _, _ := s.send(t.Context(), p); status != "pending" {
		t.Errorf("second round: %s, want pending", status)
	}
	if n := len(h.posts()); n != 1 {
		t.Errorf("webhook received %d posts over two rounds, want 1: it was delivered in the first", n)
	}
}

// The webhook receives the run's alarm, with a link to the run in the
// console; a run whose job has no target is recorded none, and nothing
// is sent or retried.
func TestAlarmContentAndNoTarget(t *testing.T) {
	h := startHook(t, http.StatusOK)
	s, _ := newClockedSender(t, Config{ConsoleURL: "https://jetjob.example.com/"})
	p := &pending{alarm: *testAlarm(), webhook: h.srv.URL}
	if status, next, msg := s.send(t.Context(), p); status != "sent" || next != nil || msg != "" {
		t.Errorf("send = %s, %v, %q; want sent", status, next, msg)
	}
	posts := h.posts()
	if len(posts) != 1 {
		t.Fatalf("%d posts, want 1", len(posts))
	}
	var got Alarm
	if err := json.Unmarshal(posts[0], &got); err != nil {
		t.Fatal(err)
	}
	if got.V != 1 || got.Event != "run.failed" || got.RunID != 1234 || got.JobName != "nightly-report" || got.Status != "FAILED" ||
		got.ConsoleLink != "https://jetjob.example.com/runs/1234" {
		t.Errorf("webhook body %s, want run 1234's run.failed alarm linking https://jetjob.example.com/runs/1234", posts[0])
	}

	none := &pending{alarm: *testAlarm()}
	if status, next, msg := s.send(t.Context(), none); status != "none" || next != nil || msg != "" || none.attempts != 0 {
		t.Errorf("no target: %s, %v, %q, attempts %d; want none, no retry", status, next, msg, none.attempts)
	}
}

// A claimed alarm (runs.ClaimAlarms) starts its delivery with every field
// the receiver is sent, its job's targets and what earlier attempts did.
func TestPendingOfCarriesTheClaim(t *testing.T) {
	want := testAlarm()
	d := runs.DueAlarm{RunID: want.RunID, JobID: want.JobID, JobName: want.JobName, Group: want.Group, Status: want.Status,
		Message: want.Message, Attempt: want.Attempt, TriggerType: want.TriggerType, ScheduledAt: want.ScheduledAt,
		FinishedAt: want.FinishedAt, Webhook: "https://hooks.example/x", Emails: []string{"ops@example.com"},
		Sent: []string{"webhook"}, Attempts: 2}
	p := pendingOf(d)
	want.V, want.Event = 0, "" // set when sent
	if p.alarm != *want {
		t.Errorf("alarm %+v, want %+v", p.alarm, *want)
	}
	if p.webhook != d.Webhook || !slices.Equal(p.emails, d.Emails) || !slices.Equal(p.sent, d.Sent) || p.attempts != 2 {
		t.Errorf("targets %q %v, sent %v, attempts %d; want the claim's", p.webhook, p.emails, p.sent, p.attempts)
	}
}
