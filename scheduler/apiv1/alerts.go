package apiv1

import "time"

// Channel is where alert notices go (docs/alerts.md, "Channels").
type Channel struct {
	ID   int64  `json:"id,omitempty"`
	Name string `json:"name"`
	// Kind is email, webhook, slack, teams, dingtalk, feishu or wecom.
	Kind string `json:"kind"`
	// Group is the group whose channel it is; empty: global (admins).
	Group string `json:"group,omitempty"`
	// Target is the URL (email: comma-separated addresses). Answers show
	// a chat vendor's URL as its scheme and host only: it is the
	// credential. On update, an empty Target keeps the stored one.
	Target string `json:"target"`
	// Secret signs what the kind signs (webhook, dingtalk, feishu). It is
	// never answered; SecretSet says whether one is stored. On update,
	// an empty Secret keeps the stored one unless ClearSecret.
	Secret      string    `json:"secret,omitempty"`
	SecretSet   bool      `json:"secret_set,omitempty"`
	ClearSecret bool      `json:"clear_secret,omitempty"`
	Template    string    `json:"template,omitempty"`
	CreatedBy   string    `json:"created_by,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	// ManagedByJob is set on the channel of a job's alarm_emails or
	// alarm_webhook: read-only (409 on update and delete); editing the
	// job's fields changes it (docs/alerts.md, "Per-job alarm fields").
	ManagedByJob int64 `json:"managed_by_job,omitempty"`
}

// ChannelTest is the outcome of a channel's "send test".
type ChannelTest struct {
	Sent bool `json:"sent"`
	// Code is the receiver's HTTP status (0: none, or email).
	Code  int    `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
}

// AlertRule subscribes channels to events of a job (JobID), a group's
// jobs (Group) or every job (neither; admins) (docs/alerts.md, "Rules").
type AlertRule struct {
	ID    int64  `json:"id,omitempty"`
	Name  string `json:"name"`
	JobID int64  `json:"job_id,omitempty"`
	Group string `json:"group,omitempty"`
	// Events: failed, timed_out, lost, retries_exhausted, recovered,
	// succeeded, missed, workflow_failed.
	Events []string `json:"events"`
	// Threshold events within Window open an alert (defaults 1, 0: no
	// window); Renotify repeats an open alert's notice (0: never).
	Threshold int      `json:"threshold,omitempty"`
	Window    Duration `json:"window,omitzero"`
	Renotify  Duration `json:"renotify,omitzero"`
	// PauseAfter disables the job after this many consecutive problem
	// events the rule hears, with a note and a notice (0: never).
	PauseAfter int `json:"pause_after,omitempty"`
	// SLA is how late a start (late_start) or how long a run
	// (running_long) is tolerated before the event.
	SLA        Duration   `json:"sla,omitzero"`
	Channels   []int64    `json:"channels"`
	Enabled    bool       `json:"enabled"`
	MutedUntil *time.Time `json:"muted_until,omitempty"`
	MutedBy    string     `json:"muted_by,omitempty"`
	MuteReason string     `json:"mute_reason,omitempty"`
	CreatedBy  string     `json:"created_by,omitempty"`
	CreatedAt  time.Time  `json:"created_at,omitzero"`
	// ManagedByJob is set on the rule of a job's alarm fields: read-only
	// but for muting (409 on update and delete).
	ManagedByJob int64 `json:"managed_by_job,omitempty"`
}

// Mute silences a rule or an alert until a time (zero Until lifts it).
type Mute struct {
	Until  time.Time `json:"until"`
	Reason string    `json:"reason,omitempty"`
}

// Alert is a rule's alert on a job: one live at a time, counting its
// events, closed by a recovery.
type Alert struct {
	ID          int64      `json:"id"`
	RuleID      int64      `json:"rule_id"`
	Rule        string     `json:"rule"`
	JobID       int64      `json:"job_id"`
	Group       string     `json:"group"`
	State       string     `json:"state"` // pending, open, closed
	Count       int        `json:"count"`
	FirstAt     time.Time  `json:"first_at"`
	LastAt      time.Time  `json:"last_at"`
	OpenedAt    *time.Time `json:"opened_at,omitempty"`
	ClosedAt    *time.Time `json:"closed_at,omitempty"`
	NotifiedAt  *time.Time `json:"notified_at,omitempty"`
	LastRunID   int64      `json:"last_run_id,omitempty"`
	LastEvent   string     `json:"last_event,omitempty"`
	LastStatus  string     `json:"last_status,omitempty"`
	LastMessage string     `json:"last_message,omitempty"`
	AckedBy     string     `json:"acked_by,omitempty"`
	AckedAt     *time.Time `json:"acked_at,omitempty"`
	MutedUntil  *time.Time `json:"muted_until,omitempty"`
	MutedBy     string     `json:"muted_by,omitempty"`
	MuteReason  string     `json:"mute_reason,omitempty"`
	// Deliveries are the alert's notices (GET /api/v1/alerts/{id} only).
	Deliveries []Delivery `json:"deliveries,omitempty"`
}

// Delivery is one notice to one channel, with its attempts.
type Delivery struct {
	ID        int64             `json:"id"`
	ChannelID int64             `json:"channel_id"`
	Event     string            `json:"event"`
	State     string            `json:"state"` // pending, sending, sent, failed, unknown
	CreatedAt time.Time         `json:"created_at"`
	NextAt    *time.Time        `json:"next_at,omitempty"`
	Attempts  []DeliveryAttempt `json:"attempts"`
}

// DeliveryAttempt is one attempt: its result (sent, failed, unknown), the
// receiver's status code and the class of failure.
type DeliveryAttempt struct {
	N      int       `json:"n"`
	At     time.Time `json:"at"`
	Result string    `json:"result"`
	Code   int       `json:"code,omitempty"`
	Error  string    `json:"error,omitempty"`
}
