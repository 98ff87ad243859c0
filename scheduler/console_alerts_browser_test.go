package scheduler_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// hookServer is a webhook receiver that keeps the event of every notice
// it is sent.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	events []string
}

func newHookServer(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n struct {
			Event string `json:"event"`
		}
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		h.mu.Lock()
		h.events = append(h.events, n.Event)
		h.mu.Unlock()
	}))
	t.Cleanup(h.Close)
	return h
}

// got is the events received so far, in order.
func (h *hookServer) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// An admin makes a webhook channel in the console and sends it a test:
// the test server receives it and the page says it was sent with the
// receiver's status. A rule made with the form on a failing job opens an
// alert, delivered to the same server; its page lists the delivery and
// its attempt, and muting it until a time with a reason shows it muted.
func TestConsoleAlerts(t *testing.T) {
	t.Parallel()
	hook := newHookServer(t)
	sys := startConsole(t, allowEgress(hook.Listener.Addr().String()))
	b := signedInTab(t, sys, "/channels/new", "ada")

	b.do("create a webhook channel",
		chromedp.WaitVisible(chromedp.ID("channel-form")),
		chromedp.SendKeys(chromedp.ID("ch-name"), "ops-hook"),
		chromedp.SetValue(chromedp.ID("ch-kind"), "webhook"),
		chromedp.SetValue(chromedp.ID("ch-group"), "g"),
		chromedp.SendKeys(chromedp.ID("ch-target"), hook.URL+"/jetjob"),
		chromedp.Click(chromedp.ID("ch-save")),
		chromedp.WaitVisible(chromedp.ID("channels-table")),
	)
	if got := b.text("#channels-table"); !strings.Contains(got, "ops-hook") {
		t.Fatalf("channels table after creating: %q", got)
	}
	b.do("send a test", chromedp.Click(chromedp.CSS(`#channels-table form[id^="test-"] button`)),
		chromedp.WaitVisible(chromedp.ID("test-result")))
	if got := hook.got(); len(got) != 1 || got[0] != "test" {
		t.Fatalf("the test server received %q, want one test notice", got)
	}
	if got := b.text("#test-result"); !strings.Contains(got, "sent") || !strings.Contains(got, "HTTP 200") {
		t.Fatalf("the test's outcome on the page: %q", got)
	}
	shots := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS")
	if shots != "" {
		b.screenshot(filepath.Join(shots, "console-channels.png"))
	}

	// A rule through the form: failed and recovered of group g's jobs.
	b.open("/alert-rules/new")
	b.do("create a rule",
		chromedp.WaitVisible(chromedp.ID("rule-form")),
		chromedp.SendKeys(chromedp.ID("ru-name"), "g-failures"),
		chromedp.SetValue(chromedp.ID("ru-group"), "g"),
		chromedp.Click(chromedp.CSS(`#rule-form input[name="channels"]`)),
		chromedp.Click(chromedp.ID("ru-save")),
		chromedp.WaitVisible(chromedp.ID("rules-table")),
	)
	if got := b.text("#rules-table"); !strings.Contains(got, "g-failures") || !strings.Contains(got, "ops-hook") {
		t.Fatalf("rules table after creating: %q", got)
	}

	// A failing job opens an alert, delivered to the hook.
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "broken", Handler: "broken", ScheduleType: "none"})
	trigger(t, sys.api, job.ID, nil)
	testwait.Eventually(t, 60*time.Second, "the failure's notice at the test server", func() bool {
		got := hook.got()
		return len(got) == 2 && got[1] == "failed"
	})
	b.open("/alerts")
	b.do("open the alert", chromedp.Click(chromedp.CSS(`#alerts-table a[href^="/alerts/"]`)), chromedp.WaitVisible(chromedp.ID("alert-title")))
	if got := b.text("#deliveries-table"); !strings.Contains(got, "ops-hook") || !strings.Contains(got, "sent") || !strings.Contains(got, "HTTP 200") {
		t.Fatalf("the alert's deliveries: %q", got)
	}
	b.do("mute it", chromedp.SendKeys(chromedp.ID("mute-reason"), "deploy in progress"),
		chromedp.Click(chromedp.ID("mute")), chromedp.WaitVisible(chromedp.ID("alert-muted")))
	if got := b.text("#alert-muted"); !strings.Contains(got, "by ada: deploy in progress") {
		t.Fatalf("the muted alert says %q", got)
	}
	as, err := sys.api.ListAlerts(t.Context(), "g", true, 0)
	if err != nil || len(as) != 1 || as[0].MutedUntil == nil || !as[0].MutedUntil.After(time.Now().Add(50*time.Minute)) ||
		as[0].MuteReason != "deploy in progress" {
		t.Fatalf("the alert after muting: %+v, %v", as, err)
	}
	if shots != "" {
		b.screenshot(filepath.Join(shots, "console-alert.png"))
	}
	if got := hook.got(); len(got) != 2 {
		t.Fatalf("the test server received %q, want the test and one failure", got)
	}
}

// alertOfPhone makes, for the phone's layout check, a channel and a rule
// with long names and an open alert of the rule on job with a delivery
// and an attempt (written as the engine would), and returns their ids.
func alertOfPhone(t *testing.T, sys *system, job int64) (channel, rule, alert int64) {
	t.Helper()
	ch, err := sys.api.CreateChannel(t.Context(), apiv1.Channel{Name: "the-settlement-teams-incident-webhook-channel", Kind: "webhook", Group: "g",
		Target: "https://alerts.example.com/hooks/jetjob/settlement-reconciliation-team-incident-room"})
	if err != nil {
		t.Fatal(err)
	}
	ru, err := sys.api.CreateAlertRule(t.Context(), apiv1.AlertRule{Name: "settlement-reconciliation-failures-in-the-night", Group: "g",
		Events: []string{"failed", "timed_out", "lost", "retries_exhausted", "recovered"}, Threshold: 3, Window: apiv1.Duration(10 * time.Minute),
		Renotify: apiv1.Duration(time.Hour), PauseAfter: 20, Channels: []int64{ch.ID}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := sys.pool.QueryRow(ctx, `INSERT INTO alerts (rule_id, job_id, group_name, state, count, first_at, last_at, opened_at,
			last_event, last_status, last_message, muted_until, muted_by, mute_reason)
		VALUES ($1, $2, 'g', 'open', 12, now(), now(), now(), 'failed', 'FAILED',
			'connection to settlement-db-primary.internal.example.com:5432 refused after 3 attempts', now() + interval '1 hour', 'ada',
			'the accounting warehouse migrates to the new cluster tonight (ticket FIN-20931)') RETURNING id`, ru.ID, job).Scan(&alert); err != nil {
		t.Fatal(err)
	}
	var delivery int64
	if err := sys.pool.QueryRow(ctx, `INSERT INTO alert_deliveries (alert_id, rule_id, channel_id, event_id, notice, state, attempts)
		VALUES ($1, $2, $3, 1, '{"event":"failed"}', 'failed', 5) RETURNING id`, alert, ru.ID, ch.ID).Scan(&delivery); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.pool.Exec(ctx, `INSERT INTO alert_attempts (delivery_id, n, result, code, error)
		VALUES ($1, 1, 'failed', 503, 'HTTP 503 Service Unavailable (retry after 120s)')`, delivery); err != nil {
		t.Fatal(err)
	}
	return ch.ID, ru.ID, alert
}
