package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/smtptest"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// The per-job alarm fields (alarm_emails, alarm_webhook) as channels and a
// rule of the alert model (migration 0027, docs/alerts.md "Per-job alarm
// fields").

// alarmEngine is an engine whose sender has cfg (SMTP, webhook secret),
// on a clock a second later at each of its rounds.
func (w *world) alarmEngine(cfg alarm.Config) (*Engine, func()) {
	w.t.Helper()
	policy, err := egress.New(egress.Config{Allow: []string{"127.0.0.1"}})
	if err != nil {
		w.t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	sender, err := alarm.New(cfg, alarm.Deps{Log: zaptest.NewLogger(w.t), Egress: policy})
	if err != nil {
		w.t.Fatal(err)
	}
	e, err := New(Config{Backoff: time.Minute}, Deps{Pool: w.pool, Log: zaptest.NewLogger(w.t), Sender: sender})
	if err != nil {
		w.t.Fatal(err)
	}
	clk := fakeclock.New(time.Now())
	e.now = clk.Now
	return e, func() { clk.Advance(time.Second); e.Round(w.ctx) }
}

// setAlarm writes the job's alarm fields the way every writer of jobs
// does (the API, import and apply go through UpdateJob).
func (w *world) setAlarm(emails []string, webhook string) {
	w.t.Helper()
	j, err := w.st.GetJob(w.ctx, w.jobID)
	if err != nil {
		w.t.Fatal(err)
	}
	j.AlarmEmails, j.AlarmWebhook = emails, webhook
	if _, err := w.st.UpdateJob(w.ctx, store.System, j); err != nil {
		w.t.Fatal(err)
	}
}

// managedObjects are a job's managed channels (kind -> target) and rule.
type managedObjects struct {
	channels map[string]string
	rule     *RuleInfo
}

func readManaged(t *testing.T, ctx context.Context, db DB, job int64) managedObjects {
	t.Helper()
	out := managedObjects{channels: map[string]string{}}
	chs, err := Channels(ctx, db, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chs {
		if c.ManagedByJob == job {
			out.channels[string(c.Kind)] = c.Target
		}
	}
	rules, err := Rules(ctx, db, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rules {
		if rules[i].ManagedByJob == job {
			out.rule = &rules[i]
		}
	}
	return out
}

// A job with alarm_emails, failing with no retry left, sends one email
// per failure through the outbox (the managed rule: retries_exhausted,
// threshold 1): two failures, two emails; a failure a retry follows and
// a success send none.
func TestJobAlarmEmailsSendOncePerFailure(t *testing.T) {
	w := newWorld(t)
	srv := smtptest.Start(t, smtptest.Options{})
	w.setAlarm([]string{"ops@example.com", "oncall@example.com"}, "")
	_, round := w.alarmEngine(alarm.Config{SMTP: alarm.SMTP{Host: srv.IP.String(), Port: srv.Port, From: "jetjob@example.com"}})

	w.end(wire.StatusFailed)
	round()
	round() // nothing more to send
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d emails after one failure, want 1", len(msgs))
	}
	m, err := mail.ReadMessage(strings.NewReader(msgs[0].Data))
	if err != nil {
		t.Fatal(err)
	}
	to, err := m.Header.AddressList("To")
	if err != nil || len(to) != 2 || to[0].Address != "ops@example.com" || to[1].Address != "oncall@example.com" {
		t.Errorf("To %v (%v), want the job's alarm_emails", to, err)
	}
	if subj := m.Header.Get("Subject"); !strings.Contains(subj, "retries_exhausted: job nightly-export") {
		t.Errorf("Subject %q", subj)
	}

	w.end(wire.StatusFailed)
	round()
	if n := len(srv.Messages()); n != 2 {
		t.Fatalf("%d emails after two failures, want 2 (one per failure, as before)", n)
	}

	// A failure with a retry to follow is not the alarm's event.
	if _, err := w.pool.Exec(w.ctx, `UPDATE jobs SET max_retries = 1 WHERE id = $1`, w.jobID); err != nil {
		t.Fatal(err)
	}
	w.end(wire.StatusFailed)
	if _, err := w.pool.Exec(w.ctx, `UPDATE jobs SET max_retries = 0 WHERE id = $1`, w.jobID); err != nil {
		t.Fatal(err)
	}
	w.end(wire.StatusSucceeded)
	round()
	round()
	if n := len(srv.Messages()); n != 2 {
		t.Fatalf("%d emails after a retried failure and a success, want still 2", n)
	}
	if n := w.count(`SELECT count(*) FROM alert_deliveries WHERE state = 'sent'`); n != 2 {
		t.Errorf("%d sent deliveries, want 2", n)
	}
	if n := w.count(`SELECT count(*) FROM alerts WHERE job_id = $1 AND state = 'closed'`, w.jobID); n != 1 {
		t.Errorf("the success closed %d alerts, want 1", n)
	}
}

// signedHook is a receiver that verifies the Standard Webhooks signature
// with one group's secret and keeps the notices it verified.
type signedHook struct {
	srv     *httptest.Server
	mu      sync.Mutex
	notices []alarm.Notice
	ids     []string
	errs    []error
}

func startSignedHook(t *testing.T, secret string) *signedHook {
	h := &signedHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := alarm.VerifyWebhook(secret, r.Header, body, time.Minute); err != nil {
			h.errs = append(h.errs, err)
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var n alarm.Notice
		if err := json.Unmarshal(body, &n); err != nil {
			h.errs = append(h.errs, err)
		}
		h.notices, h.ids = append(h.notices, n), append(h.ids, r.Header.Get(alarm.IDHeader))
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// A job with alarm_webhook gets its failure as a webhook signed with its
// group's secret, derived from JETJOB_WEBHOOK_SECRET as before: a
// receiver holding that secret verifies it.
func TestJobAlarmWebhookIsSigned(t *testing.T) {
	w := newWorld(t)
	const master = "s3cret"
	secret, err := alarm.GroupSecret(master, pgtest.Group)
	if err != nil {
		t.Fatal(err)
	}
	h := startSignedHook(t, secret)
	w.setAlarm(nil, h.srv.URL+"/jetjob")
	_, round := w.alarmEngine(alarm.Config{WebhookSecret: master, ConsoleURL: "https://jetjob.example.com"})

	w.end(wire.StatusTimedOut)
	round()
	round()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.errs) != 0 || len(h.notices) != 1 {
		t.Fatalf("verified %d notices, errors %v; want 1 verified", len(h.notices), h.errs)
	}
	n := h.notices[0]
	if n.Event != alarm.EventRetriesExhausted || n.JobID != w.jobID || n.JobName != "nightly-export" || n.Group != pgtest.Group ||
		n.Status != "TIMED_OUT" || n.RunID == 0 || !strings.HasPrefix(n.ConsoleLink, "https://jetjob.example.com/runs/") {
		t.Errorf("notice %+v", n)
	}
	if !strings.HasPrefix(h.ids[0], "jetjob-alert-delivery-") {
		t.Errorf("webhook-id %q", h.ids[0])
	}
}

// The job's fields are what its managed channels and rule are, in the
// job's own transaction: set, changed, cleared, the job deleted. The API's
// statements refuse to edit or delete them, and a user's rule may not
// name them; silence is allowed.
func TestJobAlarmFieldsAreManagedObjects(t *testing.T) {
	w := newWorld(t)
	w.setAlarm([]string{"ops@example.com"}, "https://hooks.example.com/a")
	got := readManaged(t, w.ctx, w.pool, w.jobID)
	if got.channels["email"] != "ops@example.com" || got.channels["webhook"] != "https://hooks.example.com/a" || len(got.channels) != 2 {
		t.Fatalf("managed channels %v", got.channels)
	}
	r := got.rule
	if r == nil || r.JobID != w.jobID || r.Group != pgtest.Group || !slices.Equal(r.Events, []alarm.Event{alarm.EventRetriesExhausted}) ||
		r.Threshold != 1 || r.Window != 0 || r.Renotify != time.Millisecond || len(r.Channels) != 2 || !r.Enabled {
		t.Fatalf("managed rule %+v", r)
	}

	// Changed: the channel is updated in place, the rule kept.
	w.setAlarm([]string{"ops@example.com", "dba@example.com"}, "https://hooks.example.com/a")
	again := readManaged(t, w.ctx, w.pool, w.jobID)
	if again.channels["email"] != "ops@example.com, dba@example.com" || again.rule == nil || again.rule.ID != r.ID {
		t.Fatalf("after an edit: %v, rule %+v", again.channels, again.rule)
	}

	// The API's statements refuse to edit them.
	var emailID int64
	if err := w.pool.QueryRow(w.ctx, `SELECT id FROM alert_channels WHERE managed_by_job = $1 AND kind = 'email'`, w.jobID).Scan(&emailID); err != nil {
		t.Fatal(err)
	}
	admin := &auth.Principal{Name: "admin", Admin: true}
	if _, err := UpdateChannel(w.ctx, w.pool, alarm.Channel{ID: emailID, Name: "mine", Target: "x@example.com"}, true); !errors.Is(err, ErrManaged) {
		t.Errorf("update of a managed channel: %v, want ErrManaged", err)
	}
	if err := DeleteChannel(w.ctx, w.pool, emailID); !errors.Is(err, ErrManaged) {
		t.Errorf("delete of a managed channel: %v, want ErrManaged", err)
	}
	if err := DeleteRule(w.ctx, w.pool, r.ID); !errors.Is(err, ErrManaged) {
		t.Errorf("delete of a managed rule: %v, want ErrManaged", err)
	}
	err := pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		_, err := UpdateRule(w.ctx, tx, Rule{ID: r.ID, Name: "x", Events: []alarm.Event{alarm.EventFailed}, Channels: r.Channels}, admin)
		return err
	})
	if !errors.Is(err, ErrManaged) {
		t.Errorf("update of a managed rule: %v, want ErrManaged", err)
	}
	err = pgx.BeginFunc(w.ctx, w.pool, func(tx pgx.Tx) error {
		_, err := CreateRule(w.ctx, tx, Rule{Name: "mine", Group: pgtest.Group, Events: []alarm.Event{alarm.EventFailed},
			Channels: []int64{emailID}}, admin)
		return err
	})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(fmt.Sprint(err), "alarm fields") {
		t.Errorf("a user's rule naming a managed channel: %v, want refused", err)
	}
	if err := Mute(w.ctx, w.pool, "alert_rules", r.ID, time.Now().Add(time.Hour), "admin", "maintenance"); err != nil {
		t.Errorf("muting a managed rule: %v", err)
	}

	// A user's channel may carry a managed one's name: names do not clash.
	if _, err := CreateChannel(w.ctx, w.pool, alarm.Channel{Name: fmt.Sprintf("job-%d-alarm-email", w.jobID), Kind: alarm.KindEmail,
		Group: pgtest.Group, Target: "me@example.com"}, "admin"); err != nil {
		t.Errorf("a user's channel named like a managed one: %v", err)
	}

	// Cleared one by one: the channel goes, then the rule with the last.
	w.setAlarm(nil, "https://hooks.example.com/a")
	if got := readManaged(t, w.ctx, w.pool, w.jobID); len(got.channels) != 1 || got.rule == nil || len(got.rule.Channels) != 1 {
		t.Fatalf("after clearing alarm_emails: %v, rule %+v", got.channels, got.rule)
	}
	w.setAlarm(nil, "")
	if got := readManaged(t, w.ctx, w.pool, w.jobID); len(got.channels) != 0 || got.rule != nil {
		t.Fatalf("after clearing both: %v, rule %+v", got.channels, got.rule)
	}

	// Deleting the job deletes them, pending deliveries included.
	w.setAlarm([]string{"ops@example.com"}, "https://hooks.example.com/a")
	w.end(wire.StatusFailed)
	e := w.engine(5 * time.Second)
	if _, err := e.Process(w.ctx); err != nil {
		t.Fatal(err)
	}
	if n := w.count(`SELECT count(*) FROM alert_deliveries`); n != 2 {
		t.Fatalf("%d deliveries queued, want 2 (email and webhook)", n)
	}
	if err := w.st.DeleteJob(w.ctx, store.System, w.jobID); err != nil {
		t.Fatal(err)
	}
	if n := w.count(`SELECT count(*) FROM alert_channels WHERE managed_by_job IS NOT NULL`) +
		w.count(`SELECT count(*) FROM alert_rules WHERE managed_by_job IS NOT NULL`) +
		w.count(`SELECT count(*) FROM alert_deliveries`); n != 0 {
		t.Fatalf("%d managed objects or deliveries left after the job was deleted", n)
	}
}

// A job that had alarm fields before the upgrade gets its managed channels
// and rule from the migration itself.
func TestMigrationManagesExistingJobsAlarms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := pgtest.Server(t)
	name := fmt.Sprintf("premigrate_%d", time.Now().UnixNano())
	if err := srv.CreateDatabase(ctx, name, ""); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, srv.URL(name))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ms, err := store.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var mine *store.Migration
	for i := range ms {
		if ms[i].Name == "alarms_managed" {
			mine = &ms[i]
			break
		}
		if _, err := pool.Exec(ctx, ms[i].SQL); err != nil {
			t.Fatalf("migration %d: %v", ms[i].Version, err)
		}
	}
	if mine == nil {
		t.Fatal("no migration alarms_managed")
	}
	// Jobs as a scheduler before the upgrade left them.
	if _, err := pool.Exec(ctx, `INSERT INTO job_groups (name) VALUES ('billing')`); err != nil {
		t.Fatal(err)
	}
	var both, hookOnly, none int64
	for _, j := range []struct {
		id      *int64
		name    string
		emails  []string
		webhook string
	}{
		{&both, "both", []string{"ops@example.com", "dba@example.com"}, "https://hooks.example.com/x"},
		{&hookOnly, "hook", nil, "https://hooks.example.com/y"},
		{&none, "none", nil, ""},
	} {
		if err := pool.QueryRow(ctx, `INSERT INTO jobs (group_name, name, handler, schedule_type, misfire_policy,
				route_strategy, block_strategy, shard, alarm_emails, alarm_webhook)
			VALUES ('billing', $1, 'h', 'none', 'skip', 'any', 'serial', 0, $2, $3) RETURNING id`, j.name, append([]string{}, j.emails...), j.webhook).Scan(j.id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, mine.SQL); err != nil {
		t.Fatalf("migration %d: %v", mine.Version, err)
	}
	got := readManaged(t, ctx, pool, both)
	if got.channels["email"] != "ops@example.com, dba@example.com" || got.channels["webhook"] != "https://hooks.example.com/x" ||
		got.rule == nil || got.rule.Group != "billing" || len(got.rule.Channels) != 2 {
		t.Errorf("job with both fields: %v, rule %+v", got.channels, got.rule)
	}
	if got := readManaged(t, ctx, pool, hookOnly); len(got.channels) != 1 || got.rule == nil || len(got.rule.Channels) != 1 {
		t.Errorf("job with a webhook: %v, rule %+v", got.channels, got.rule)
	}
	if got := readManaged(t, ctx, pool, none); len(got.channels) != 0 || got.rule != nil {
		t.Errorf("job without alarm fields: %v, rule %+v", got.channels, got.rule)
	}
}
