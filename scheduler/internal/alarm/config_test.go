package alarm

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/configtest"
	"github.com/jetjob/jetjob/internal/egress"
)

// newSender is New for tests that send without PostgreSQL to their own
// receivers on 127.0.0.1, which the egress policy allows for them (it
// denies loopback by default).
func newSender(t *testing.T, cfg Config) *Sender {
	t.Helper()
	return newEgressSender(t, cfg, egress.Config{Allow: []string{"127.0.0.1"}})
}

// newEgressSender is New with the egress policy of ecfg.
func newEgressSender(t *testing.T, cfg Config, ecfg egress.Config) *Sender {
	t.Helper()
	policy, err := egress.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, Deps{Log: zaptest.NewLogger(t), Egress: policy})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Validate refuses what could never deliver, naming the field, and lets
// zero values (the defaults) and working settings through.
func TestConfigValidate(t *testing.T) {
	cases := configtest.Cases[Config]{
		{"everything set", Config{Timeout: time.Second,
			ConsoleURL: "https://jetjob.example.com/", WebhookSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
			SMTP: SMTP{Host: "mail.example.com", Port: 465, User: "u", Password: "p", From: "Jetjob <jetjob@example.com>"}}, ""},
		{"plain secret", Config{WebhookSecret: "s3cret"}, ""},
		{"SMTP by IPv4", Config{SMTP: SMTP{Host: "127.0.0.1", Port: 2525}}, ""},
		{"SMTP by IPv6", Config{SMTP: SMTP{Host: "::1"}}, ""},
		{"port without host", Config{SMTP: SMTP{Port: 587}}, ""},
		{"negative timeout", Config{Timeout: -time.Second}, "alarm: Timeout must be ≥ 0 (0: 10s), got -1s"},
		{"host with scheme", Config{SMTP: SMTP{Host: "smtp://mail.example.com"}}, `alarm: SMTP.Host "smtp://mail.example.com": want a host name or IP address`},
		{"host with port", Config{SMTP: SMTP{Host: "mail.example.com:25"}}, `alarm: SMTP.Host "mail.example.com:25": want the host alone; the port goes in SMTP.Port`},
		{"port too large", Config{SMTP: SMTP{Host: "mail.example.com", Port: 70000}}, "alarm: SMTP.Port must be 1 to 65535 (0: 587), got 70000"},
		{"negative port", Config{SMTP: SMTP{Host: "mail.example.com", Port: -1}}, "alarm: SMTP.Port must be 1 to 65535 (0: 587), got -1"},
		{"bad from", Config{SMTP: SMTP{Host: "mail.example.com", From: "jetjob"}}, `alarm: SMTP.From "jetjob": not an email address`},
		{"console URL without scheme", Config{ConsoleURL: "jetjob.example.com"}, `alarm: ConsoleURL "jetjob.example.com": want an http or https URL`},
		{"console URL of another scheme", Config{ConsoleURL: "ftp://jetjob.example.com"}, `alarm: ConsoleURL "ftp://jetjob.example.com": want an http or https URL`},
		{"whsec secret not base64", Config{WebhookSecret: "whsec_!!"}, "alarm: WebhookSecret (JETJOB_WEBHOOK_SECRET): webhook secret starts with whsec_ but the rest is not base64"},
	}
	configtest.Run(t, cases, func(c Config) error { _, err := New(c, Deps{}); return err })
	for _, c := range cases {
		if err := c.Config.Validate(); err != nil && strings.Contains(err.Error(), "!!") {
			t.Errorf("%s: Validate() = %v: shows the secret", c.Name, err)
		}
	}
}
