// Package alarm sends notices on channels: email over SMTP (implicit TLS
// on port 465, else STARTTLS), a generic webhook (a JSON POST signed the
// Standard Webhooks way, with the channel's secret or its group's own key,
// so it can be neither replayed nor forged by another group's receiver),
// and the chat vendors' webhooks (Slack, Teams, DingTalk, Feishu, WeCom),
// each rendered from a template. Package alerts decides what is sent and
// when (its rules, outbox and deliveries); a job's alarm_emails and
// alarm_webhook are channels and a rule of that model (docs/alerts.md,
// "Per-job alarm fields").
//
// Every URL a channel names is a user's choice, so its connections go
// through the scheduler's egress policy (package internal/egress): by
// default no internal address is reached, and what an attempt records,
// which every viewer of the alert reads, is a status code or a class of
// failure, never what the target answered. The SMTP server is the
// administrator's choice, not the channel's, and is not subject to the
// policy.
package alarm

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/internal/logging"
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

// Validate says which field is wrong: the timeout must be positive, or 0
// for its default; what is set of the SMTP server, the
// console URL and the webhook secret must be usable, so that a typo stops
// the scheduler at start instead of failing every alarm later.
func (c Config) Validate() error {
	if err := tuning.NotNegative("alarm", "Timeout", c.Timeout, "10s"); err != nil {
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
	// Log is the parent logger; nil logs nothing.
	Log *zap.Logger
	// Egress decides which webhook targets may be reached (nil: the
	// default policy, no internal address). The scheduler gives every
	// component that connects where a user says the same policy.
	Egress *egress.Policy
}

// Sender sends notices on channels.
type Sender struct {
	cfg Config
	log *zap.Logger
	// notifyHTTP sends channels' notices through the egress policy,
	// following no redirects.
	notifyHTTP *http.Client
	// rootCAs verifies the mail server's certificate (nil: the system's
	// roots). Only tests set it, to trust a certificate they made.
	rootCAs *x509.CertPool
	// deliveries counts attempts per channel and result: failing notices
	// are what tells nobody that jobs fail, so they need a metric.
	deliveries *prometheus.CounterVec
	// now is the signatures' clock (tests set a fake one).
	now func() time.Time
}

// New validates cfg and returns a sender.
func New(cfg Config, deps Deps) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	policy := deps.Egress
	if policy == nil {
		policy = egress.Default()
	}
	nc := &http.Client{Transport: policy.Transport(), Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &Sender{cfg: cfg, log: logging.Named(deps.Log, "alarm"), notifyHTTP: nc, now: time.Now,
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "jetjob_alarm_deliveries_total",
			Help: "Alert delivery attempts by channel kind (webhook, email, slack, teams, dingtalk, feishu, wecom) and result (sent, failed).",
		}, []string{"channel", "result"})}, nil
}

// Collector is the sender's metric, for the scheduler's registry.
func (s *Sender) Collector() prometheus.Collector { return s.deliveries }
