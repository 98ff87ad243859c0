package alarm

import (
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Kind is a channel's kind: the vendor format its notices are sent in.
type Kind string

// The channel kinds (docs/alerts.md shows each one's setup).
const (
	KindEmail    Kind = "email"
	KindWebhook  Kind = "webhook"  // JSON, signed the Standard Webhooks way
	KindSlack    Kind = "slack"    // incoming webhook, blocks
	KindTeams    Kind = "teams"    // incoming webhook / workflow, an Adaptive Card
	KindDingTalk Kind = "dingtalk" // custom robot, markdown, signed in the query
	KindFeishu   Kind = "feishu"   // custom bot (Feishu / Lark), a card, signed in the body
	KindWeCom    Kind = "wecom"    // group robot, markdown
)

// Kinds are every channel kind, in the order the docs list them.
var Kinds = []Kind{KindEmail, KindWebhook, KindSlack, KindTeams, KindDingTalk, KindFeishu, KindWeCom}

// Channel is where a notice goes.
type Channel struct {
	ID   int64
	Name string
	Kind Kind
	// Group is the group whose channel it is ("" for a global one).
	Group string
	// Target is the URL, or for email the comma-separated addresses.
	Target string
	// Secret signs what needs signing (webhook: Standard Webhooks;
	// DingTalk and Feishu: their HMAC sign). Never shown back.
	Secret string
	// Template replaces the kind's default body template when set.
	Template string
}

// Redacted is the target as the API shows it: a chat vendor's webhook URL
// is its credential, so only its scheme and host are shown; a generic
// webhook's path is shown without its query.
func (c Channel) Redacted() string {
	if c.Kind == KindEmail {
		return c.Target
	}
	u, err := url.Parse(c.Target)
	if err != nil {
		return "(invalid URL)"
	}
	if c.Kind == KindWebhook {
		return u.Scheme + "://" + u.Host + u.Path
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// Validate says what is wrong with a channel as a user wrote it.
func (c Channel) Validate() error {
	known := false
	for _, k := range Kinds {
		known = known || k == c.Kind
	}
	if !known {
		return fmt.Errorf("channel kind %q: want one of email, webhook, slack, teams, dingtalk, feishu, wecom", c.Kind)
	}
	if c.Kind == KindEmail {
		if _, err := c.Addresses(); err != nil {
			return err
		}
		if c.Secret != "" {
			return fmt.Errorf("channel kind email takes no secret")
		}
	} else {
		u, err := url.Parse(c.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("channel target: want the %s webhook's http or https URL", c.Kind)
		}
		if u.User != nil {
			return fmt.Errorf("channel target: credentials in the URL are not allowed; use the secret")
		}
	}
	switch c.Kind {
	case KindWebhook:
		if _, err := webhookKey(c.Secret); err != nil {
			return fmt.Errorf("channel secret: %w", err)
		}
	case KindSlack, KindTeams, KindWeCom:
		if c.Secret != "" {
			return fmt.Errorf("channel kind %s takes no secret: its URL is its credential", c.Kind)
		}
	}
	if c.Template != "" {
		if _, err := parseBody(c.Template); err != nil {
			return err
		}
	}
	return nil
}

// OwnerRecipient, among an email channel's addresses, stands for the
// owner of the job or workflow a notice is about (docs/alerts.md, "The
// owner as recipient"): a rule then routes to whoever owns each job
// without naming them.
const OwnerRecipient = "owner"

// Addresses are an email channel's recipients as written: its addresses,
// and OwnerRecipient when the channel names it.
func (c Channel) Addresses() ([]string, error) {
	var out []string
	for _, a := range strings.Split(c.Target, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if a == OwnerRecipient {
			out = append(out, a)
			continue
		}
		if _, err := mail.ParseAddress(a); err != nil {
			return nil, fmt.Errorf("channel target: %q is not an email address (or %q: the job's owner)", a, OwnerRecipient)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("channel target: want one or more email addresses, comma-separated (%q: the job's owner)", OwnerRecipient)
	}
	return out, nil
}

// Recipients are where an email channel sends n: its addresses, with
// OwnerRecipient replaced by n's owner when the owner is a plain email
// address, and left out when it is not (a team name, no owner) — an
// error when nobody is left.
func (c Channel) Recipients(n *Notice) ([]string, error) {
	as, err := c.Addresses()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, a := range as {
		if a != OwnerRecipient {
			out = append(out, a)
			continue
		}
		if o := OwnerAddress(n.Owner); o != "" && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("channel target: %q, and job %d's owner %q is not an email address", c.Target, n.JobID, n.Owner)
	}
	return out, nil
}

// OwnerAddress is owner when it is a plain email address
// (ana@example.com, not "Ana <ana@example.com>"), else "".
func OwnerAddress(owner string) string {
	if a, err := mail.ParseAddress(owner); err == nil && a.Address == owner {
		return owner
	}
	return ""
}

// Event is what a notice is about.
type Event string

// The events rules subscribe to (docs/alerts.md, "Events").
const (
	EventFailed           Event = "failed"
	EventTimedOut         Event = "timed_out"
	EventLost             Event = "lost"
	EventRetriesExhausted Event = "retries_exhausted"
	EventRecovered        Event = "recovered"
	EventSucceeded        Event = "succeeded"
	EventMissed           Event = "missed"
	EventWorkflowFailed   Event = "workflow_failed"
	EventLateStart        Event = "late_start"
	EventRunningLong      Event = "running_long"
	// EventTest is a channel's "send test".
	EventTest Event = "test"
	// EventPaused says a rule's pause after consecutive failures
	// disabled the job (sent to the rule's channels, not subscribed to).
	EventPaused Event = "paused"
)

// Events are the events a rule may subscribe to.
var Events = []Event{EventFailed, EventTimedOut, EventLost, EventRetriesExhausted, EventRecovered,
	EventSucceeded, EventMissed, EventWorkflowFailed, EventLateStart, EventRunningLong}

// Notice is what a channel is told: the data its template renders, and
// the JSON body of a generic webhook.
type Notice struct {
	V       int    `json:"v"`
	Event   Event  `json:"event"`
	AlertID int64  `json:"alert_id,omitempty"`
	Rule    string `json:"rule,omitempty"`
	// State is the alert's: open, or closed for a recovery.
	State   string `json:"state,omitempty"`
	JobID   int64  `json:"job_id"`
	JobName string `json:"job_name"`
	// Owner is the job's (or workflow's) owner, for OwnerRecipient.
	Owner   string `json:"owner,omitempty"`
	Group   string `json:"group"`
	RunID   int64  `json:"run_id"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Attempt int    `json:"attempt"`
	// Count is the alert's events so far; FirstAt and At the first and
	// latest.
	Count       int       `json:"count"`
	FirstAt     time.Time `json:"first_at"`
	At          time.Time `json:"at"`
	ConsoleLink string    `json:"console_link,omitempty"`
}

// Title is the notice's one-line summary, for subjects and headers.
func (n *Notice) Title() string {
	name := strings.NewReplacer("\r", " ", "\n", " ").Replace(n.JobName)
	switch n.Event {
	case EventTest:
		return "[jetjob] test notice"
	case EventRecovered:
		return fmt.Sprintf("[jetjob] recovered: job %s (%d)", name, n.JobID)
	case EventSucceeded:
		return fmt.Sprintf("[jetjob] succeeded: job %s (%d) run %d", name, n.JobID, n.RunID)
	case EventPaused:
		return fmt.Sprintf("[jetjob] paused: job %s (%d) after %d failures", name, n.JobID, n.Count)
	}
	if n.Count > 1 {
		return fmt.Sprintf("[jetjob] %s: job %s (%d), %d times", n.Event, name, n.JobID, n.Count)
	}
	return fmt.Sprintf("[jetjob] %s: job %s (%d) run %d", n.Event, name, n.JobID, n.RunID)
}
