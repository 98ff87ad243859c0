// Package alarm tells people that a run failed for good: its last attempt
// ended FAILED, TIMED_OUT or LOST (the results applier marks such runs
// alarm_status = 'pending'). It sends a webhook (a JSON POST, optionally
// signed over id, timestamp and body with the group's own key, so it can be
// neither replayed nor forged by another group's receiver) and an email over
// SMTP (implicit TLS on port 465, else STARTTLS), per the job's targets, and
// records the outcome on the run: sent, failed (with the error), or none
// when the job has no target.
//
// The webhook URL is chosen by whoever may edit the job, so its connections
// go through the scheduler's egress policy (package internal/egress): by
// default no internal address is reached, redirects included, and what is
// recorded on the run, which every viewer reads, is a status code or a
// class of failure, never what the target answered. The SMTP server is the
// administrator's choice, not the job's, and is not subject to the policy.
//
// Sending runs apart from applying events, so a slow or failing mail
// server never delays results. Any scheduler may send: a run is claimed by
// moving its alarm_next_at forward under FOR UPDATE SKIP LOCKED, so two
// schedulers never send the same alarm at once. A failed channel is
// retried a few times with backoff; a channel already delivered is not
// sent again. The statements that claim and record alarms are package
// runs' (ClaimAlarms, SetAlarm), like every write of job_runs.
package alarm

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
)

// Config configures the sender. Zero values mean the defaults.
type Config struct {
	SMTP SMTP
	// WebhookSecret, when set, is the master key webhooks are signed
	// with, the Standard Webhooks way (headers webhook-id,
	// webhook-timestamp, webhook-signature; see VerifyWebhook), each
	// group's alarms with that group's own secret (GroupSecret). A
	// "whsec_" secret is base64 of the key; any other string is the key.
	WebhookSecret string
	// ConsoleURL is the base of the console link in alarms, e.g.
	// https://jetjob.example.com (the link is <base>/runs/<id>).
	ConsoleURL string
	// Attempts per channel before the alarm is recorded failed (default 3).
	Attempts int
	// Backoff is the delay before the first retry, doubled each time
	// (default 5 s).
	Backoff time.Duration
	// Interval between polls for pending alarms (default 1 s).
	Interval time.Duration
	// Timeout bounds one delivery (default 10 s).
	Timeout time.Duration
}

// SMTP is the mail server alarms go through. Host empty disables email.
type SMTP struct {
	Host     string
	Port     int // default 587
	User     string
	Password string
	From     string // default jetjob@<host>
	StartTLS bool
}

// Validate says which field is wrong: durations and counts must be
// positive, or 0 for their default; what is set of the SMTP server, the
// console URL and the webhook secret must be usable, so that a typo stops
// the scheduler at start instead of failing every alarm later.
func (c Config) Validate() error {
	if err := errors.Join(
		tuning.NotNegative("alarm", "Attempts", c.Attempts, "3"),
		tuning.NotNegative("alarm", "Backoff", c.Backoff, "5s"),
		tuning.NotNegative("alarm", "Interval", c.Interval, "1s"),
		tuning.NotNegative("alarm", "Timeout", c.Timeout, "10s"),
	); err != nil {
		return err
	}
	if err := c.SMTP.validate(); err != nil {
		return err
	}
	if c.ConsoleURL != "" {
		u, err := url.Parse(c.ConsoleURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("alarm: ConsoleURL %q: want an http or https URL such as https://jetjob.example.com", c.ConsoleURL)
		}
	}
	if _, err := webhookKey(c.WebhookSecret); err != nil {
		// The secret itself is never shown.
		return fmt.Errorf("alarm: WebhookSecret (JETJOB_WEBHOOK_SECRET): %w", err)
	}
	return nil
}

// validate checks the server's settings when email is on (Host set).
func (s SMTP) validate() error {
	if s.Host == "" {
		return nil
	}
	if strings.ContainsAny(s.Host, "/ \t\r\n") {
		return fmt.Errorf("alarm: SMTP.Host %q: want a host name or IP address, without scheme or path", s.Host)
	}
	if _, _, err := net.SplitHostPort(s.Host); err == nil {
		return fmt.Errorf("alarm: SMTP.Host %q: want the host alone; the port goes in SMTP.Port", s.Host)
	}
	if s.Port < 0 || s.Port > 65535 {
		return fmt.Errorf("alarm: SMTP.Port must be 1 to 65535 (0: 587), got %d", s.Port)
	}
	if s.From != "" {
		if _, err := mail.ParseAddress(s.From); err != nil {
			return fmt.Errorf("alarm: SMTP.From %q: not an email address: %w", s.From, err)
		}
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Attempts == 0 {
		c.Attempts = 3
	}
	if c.Backoff == 0 {
		c.Backoff = 5 * time.Second
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.SMTP.Port == 0 {
		c.SMTP.Port = 587
	}
	if c.SMTP.From == "" {
		c.SMTP.From = "jetjob@" + c.SMTP.Host
	}
	return c
}

// Deps are what a Sender reads runs from and sends webhooks with: given to
// New and fixed from then on, never set on a running component. Config holds
// only what an operator tunes.
type Deps struct {
	// Pool holds the runs whose alarms are pending.
	Pool *pgxpool.Pool
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Egress decides which webhook targets may be reached (nil: the
	// default policy, no internal address). The scheduler gives every
	// component that connects where a user says the same policy.
	Egress *egress.Policy
}

// Sender delivers pending alarms.
type Sender struct {
	cfg  Config
	pool *pgxpool.Pool
	log  *zap.Logger
	http *http.Client
	// notifyHTTP sends channels' notices: the same egress policy, no
	// redirects followed.
	notifyHTTP *http.Client
	// rootCAs verifies the mail server's certificate (nil: the system's
	// roots). Only tests set it, to trust a certificate they made.
	rootCAs *x509.CertPool
	// deliveries counts attempts per channel and result: failing alarms
	// are what tells nobody that jobs fail, so they need a metric.
	deliveries *prometheus.CounterVec
	// now times the next attempt of a failed alarm (tests set a fake clock).
	now func() time.Time
}

// New validates cfg and returns a sender; Run drives it.
func New(cfg Config, deps Deps) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	policy := deps.Egress
	if policy == nil {
		policy = egress.Default()
	}
	hc := policy.Client(cfg.Timeout)
	nc := &http.Client{Transport: policy.Transport(), Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Sender{cfg: cfg, pool: deps.Pool, log: logging.Named(deps.Log, "alarm"), http: hc, notifyHTTP: nc, now: time.Now,
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_alarm_deliveries_total",
			Help: "Alarm and alert delivery attempts by channel kind (webhook, email, slack, teams, dingtalk, feishu, wecom) and result (sent, failed).",
		}, []string{"channel", "result"})}, nil
}

// Collector is the sender's metric, for the scheduler's registry.
func (s *Sender) Collector() prometheus.Collector { return s.deliveries }

// Alarm is what a webhook receives (and an email says), for one run.
type Alarm struct {
	V           int       `json:"v"`
	Event       string    `json:"event"` // "run.failed"
	JobID       int64     `json:"job_id"`
	JobName     string    `json:"job_name"`
	Group       string    `json:"group"`
	RunID       int64     `json:"run_id"`
	Status      string    `json:"status"`
	Message     string    `json:"message"`
	Attempt     int       `json:"attempt"`
	TriggerType string    `json:"trigger_type"`
	ScheduledAt time.Time `json:"scheduled_at"`
	FinishedAt  time.Time `json:"finished_at"`
	ConsoleLink string    `json:"console_link,omitempty"`
}

// pending is a claimed alarm on its way out.
type pending struct {
	alarm    Alarm
	webhook  string
	emails   []string
	sent     []string
	attempts int
}

// claimBatch is how many due alarms one round claims.
const claimBatch = 50

// Run sends due alarms every Interval until ctx ends.
func (s *Sender) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		if err := s.round(ctx); err != nil && ctx.Err() == nil {
			errcount.Postgres(errcount.Alarm)
			s.log.Warn("alarm round failed; retrying", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Sender) round(ctx context.Context) error {
	due, err := runs.ClaimAlarms(ctx, s.pool, claimBatch)
	if err != nil {
		return err
	}
	for _, d := range due {
		s.deliver(ctx, pendingOf(d))
	}
	return nil
}

// pendingOf is what sending a claimed alarm starts from.
func pendingOf(d runs.DueAlarm) *pending {
	return &pending{
		alarm: Alarm{JobID: d.JobID, JobName: d.JobName, Group: d.Group, RunID: d.RunID, Status: d.Status,
			Message: d.Message, Attempt: d.Attempt, TriggerType: d.TriggerType, ScheduledAt: d.ScheduledAt, FinishedAt: d.FinishedAt},
		webhook: d.Webhook, emails: d.Emails, sent: d.Sent, attempts: d.Attempts,
	}
}

// send sends p's alarm on each of its job's channels not yet delivered,
// adding those it delivers to p.sent, and returns the outcome to record:
// the alarm status (none: no target; sent; pending: a channel failed and
// is tried again at next; failed: it failed Attempts times) and the
// channels' errors.
func (s *Sender) send(ctx context.Context, p *pending) (status string, next *time.Time, msg string) {
	a := &p.alarm
	a.V, a.Event = 1, "run.failed"
	if s.cfg.ConsoleURL != "" {
		a.ConsoleLink = strings.TrimRight(s.cfg.ConsoleURL, "/") + fmt.Sprintf("/runs/%d", a.RunID)
	}
	if p.sent == nil {
		p.sent = []string{}
	}
	sent := map[string]bool{}
	for _, ch := range p.sent {
		sent[ch] = true
	}
	var errs []error
	try := func(channel string, f func(context.Context) error) {
		if sent[channel] {
			return
		}
		c, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		defer cancel()
		if err := f(c); err != nil {
			s.deliveries.WithLabelValues(channel, "failed").Inc()
			errs = append(errs, fmt.Errorf("%s: %w", channel, err))
			return
		}
		s.deliveries.WithLabelValues(channel, "sent").Inc()
		p.sent = append(p.sent, channel)
	}
	targets := 0
	if p.webhook != "" {
		targets++
		try("webhook", func(c context.Context) error { return s.webhook(c, p.webhook, a) })
	}
	if len(p.emails) > 0 {
		targets++
		if s.cfg.SMTP.Host == "" {
			s.deliveries.WithLabelValues("email", "failed").Inc()
			errs = append(errs, errors.New("email: no SMTP server configured (JETJOB_SMTP_HOST)"))
		} else {
			try("email", func(c context.Context) error { return s.email(c, p.emails, a) })
		}
	}
	status = "sent"
	switch {
	case targets == 0:
		status = "none"
	case len(errs) > 0:
		msg = errors.Join(errs...).Error()
		p.attempts++
		if p.attempts >= s.cfg.Attempts {
			status = "failed"
		} else {
			status = "pending"
			t := s.now().Add(backoff.Backoff{Initial: s.cfg.Backoff}.Delay(p.attempts))
			next = &t
		}
	}
	return status, next, msg
}

// deliver sends one run's alarm on each channel not yet delivered and
// records the outcome.
func (s *Sender) deliver(ctx context.Context, p *pending) {
	a := &p.alarm
	status, next, msg := s.send(ctx, p)
	log := s.log.With(logging.Run(a.RunID), logging.Job(a.JobID))
	switch status {
	case "sent":
		log.Info("alarm sent", zap.Strings("channels", p.sent))
	case "failed":
		log.Error("alarm failed for good", zap.Int("attempts", p.attempts), zap.String("error", msg))
	case "pending":
		log.Warn("alarm failed; will retry", zap.Int("attempts", p.attempts), zap.String("error", msg))
	}
	err := runs.SetAlarm(context.WithoutCancel(ctx), s.pool, runs.AlarmOutcome{RunID: a.RunID, ScheduledAt: a.ScheduledAt,
		Status: status, Error: msg, Sent: p.sent, Attempts: p.attempts, Next: next})
	if err != nil {
		log.Warn("recording alarm outcome failed; it may be sent again", zap.Error(err))
	}
}
