package alerts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/pgerr"
)

// The statements on the alert tables for the API: channels, rules, alerts
// and their deliveries. Who may do what is the API's decision; this file
// holds the SQL and the checks of what a user wrote.

// DB is a pool, a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Errors the API maps to statuses.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
	ErrInvalid  = errors.New("invalid")
)

// ChannelInfo is a channel as stored, with who made it.
type ChannelInfo struct {
	alarm.Channel
	CreatedBy string
	CreatedAt time.Time
	// ManagedByJob is the job whose alarm fields (alarm_emails,
	// alarm_webhook) the channel is (0: a user's channel). Such a channel
	// is written by the job's row (migration 0027), never through the API.
	ManagedByJob int64
}

const channelColumns = `id, name, kind, COALESCE(group_name, ''), target, secret, template, created_by, created_at,
	COALESCE(managed_by_job, 0)`

// ErrManaged is an edit of a channel or rule that a job's alarm fields
// make: the job's fields are what changes it.
var ErrManaged = errors.New("managed by a job's alarm fields")

// managed is the refusal to edit what job's alarm fields make.
func managed(what string, id, job int64) error {
	return fmt.Errorf("%w: %s %d is job %d's alarm fields (alarm_emails / alarm_webhook): edit the job instead",
		ErrManaged, what, id, job)
}

func scanChannel(row pgx.Row) (ChannelInfo, error) {
	var c ChannelInfo
	var kind string
	err := row.Scan(&c.ID, &c.Name, &kind, &c.Group, &c.Target, &c.Secret, &c.Template, &c.CreatedBy, &c.CreatedAt, &c.ManagedByJob)
	c.Kind = alarm.Kind(kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, ErrNotFound
	}
	return c, err
}

// CheckName says what is wrong with a channel's or rule's name (the
// tables' CHECK, said in words before the database refuses it).
func CheckName(what, name string) error {
	ok := name != "" && len(name) <= 64
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-')
	}
	if !ok {
		return fmt.Errorf("%w: %s name %q: want 1 to 64 characters of A-Z a-z 0-9 _ . -", ErrInvalid, what, name)
	}
	return nil
}

// CreateChannel stores a channel after checking it.
func CreateChannel(ctx context.Context, db DB, ch alarm.Channel, by string) (ChannelInfo, error) {
	if err := CheckName("channel", ch.Name); err != nil {
		return ChannelInfo{}, err
	}
	if err := ch.Validate(); err != nil {
		return ChannelInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out, err := scanChannel(db.QueryRow(ctx, `INSERT INTO alert_channels (name, kind, group_name, target, secret, template, created_by)
		VALUES ($1, $2, NULLIF($3, ''), $4, $5, $6, $7) RETURNING `+channelColumns,
		ch.Name, string(ch.Kind), ch.Group, ch.Target, ch.Secret, ch.Template, by))
	return out, storeErr("create channel "+ch.Name, err)
}

// UpdateChannel replaces a channel's name, target, template and secret
// (kept as it is with keepSecret). Its kind and group stay. An empty
// target keeps the stored one: the API shows a chat vendor's URL only as
// its host, so an edit that does not retype it must not lose it.
func UpdateChannel(ctx context.Context, db DB, ch alarm.Channel, keepSecret bool) (ChannelInfo, error) {
	old, err := Channel(ctx, db, ch.ID)
	if err != nil {
		return ChannelInfo{}, err
	}
	if old.ManagedByJob != 0 {
		return ChannelInfo{}, managed("channel", ch.ID, old.ManagedByJob)
	}
	if keepSecret {
		ch.Secret = old.Secret
	}
	if ch.Target == "" {
		ch.Target = old.Target
	}
	ch.Kind, ch.Group = old.Kind, old.Group
	if err := CheckName("channel", ch.Name); err != nil {
		return ChannelInfo{}, err
	}
	if err := ch.Validate(); err != nil {
		return ChannelInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	out, err := scanChannel(db.QueryRow(ctx, `UPDATE alert_channels SET name = $2, target = $3, secret = $4, template = $5,
		updated_at = now() WHERE id = $1 RETURNING `+channelColumns, ch.ID, ch.Name, ch.Target, ch.Secret, ch.Template))
	return out, storeErr(fmt.Sprintf("update channel %d", ch.ID), err)
}

// Channel reads one channel.
func Channel(ctx context.Context, db DB, id int64) (ChannelInfo, error) {
	c, err := scanChannel(db.QueryRow(ctx, `SELECT `+channelColumns+` FROM alert_channels WHERE id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("read channel %d: %w", id, err)
	}
	return c, err
}

// Channels lists the channels, all of them (all) or the global ones and
// those of groups.
func Channels(ctx context.Context, db DB, all bool, groups []string) ([]ChannelInfo, error) {
	rows, _ := db.Query(ctx, `SELECT `+channelColumns+` FROM alert_channels
		WHERE $1 OR group_name IS NULL OR group_name = ANY ($2) ORDER BY id`, all, groups)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ChannelInfo, error) { return scanChannel(r) })
	if err != nil {
		return nil, fmt.Errorf("list channels: %w", err)
	}
	return out, nil
}

// DeleteChannel deletes a channel no rule names, unless a job's alarm
// fields make it.
func DeleteChannel(ctx context.Context, db DB, id int64) error {
	var job int64
	err := db.QueryRow(ctx, `SELECT COALESCE(managed_by_job, 0) FROM alert_channels WHERE id = $1`, id).Scan(&job)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read channel %d: %w", id, err)
	}
	if job != 0 {
		return managed("channel", id, job)
	}
	tag, err := db.Exec(ctx, `DELETE FROM alert_channels WHERE id = $1`, id)
	if pgerr.ForeignKey(err) {
		return fmt.Errorf("%w: channel %d is named by a rule: remove it from the rule first", ErrConflict, id)
	}
	if err != nil {
		return fmt.Errorf("delete channel %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// RuleInfo is a rule as stored.
type RuleInfo struct {
	Rule
	Enabled    bool
	MutedBy    string
	MuteReason string
	CreatedBy  string
	CreatedAt  time.Time
	// ManagedByJob is the job whose alarm fields the rule is (0: a
	// user's rule): read-only but for silence, like its channels.
	ManagedByJob int64
}

// CheckRule says what is wrong with a rule as a user wrote it.
func CheckRule(r Rule) error {
	if len(r.Events) == 0 {
		return errors.New("events: want one or more of failed, timed_out, lost, retries_exhausted, recovered, succeeded, missed, workflow_failed, late_start, running_long")
	}
	for _, e := range r.Events {
		if !slices.Contains(alarm.Events, e) {
			return fmt.Errorf("event %q: want one of failed, timed_out, lost, retries_exhausted, recovered, succeeded, missed, workflow_failed, late_start, running_long", e)
		}
	}
	if r.Threshold < 0 || r.Threshold > 10000 {
		return fmt.Errorf("threshold %d: want 1 to 10000 (0: 1)", r.Threshold)
	}
	if r.Window < 0 || r.Renotify < 0 {
		return errors.New("window and renotify must not be negative")
	}
	if _, sla := r.Wants(alarm.EventLateStart, alarm.EventRunningLong); sla && r.SLA <= 0 {
		return errors.New("sla: late_start and running_long need how late or how long (sla, e.g. \"10m\")")
	}
	if r.SLA < 0 {
		return errors.New("sla must not be negative")
	}
	if r.PauseAfter < 0 || r.PauseAfter > 10000 {
		return fmt.Errorf("pause_after %d: want 0 (never) to 10000", r.PauseAfter)
	}
	if len(r.Channels) == 0 {
		return errors.New("channels: want one or more channel ids")
	}
	return nil
}

const ruleColumns = `r.id, r.name, COALESCE(r.job_id, 0), COALESCE(r.group_name, ''), r.events, r.threshold, r.window_ms,
	r.renotify_ms, r.pause_after, r.sla_ms, r.enabled, r.muted_until, r.muted_by, r.mute_reason, r.created_by, r.created_at,
	ARRAY(SELECT channel_id FROM alert_rule_channels c WHERE c.rule_id = r.id ORDER BY channel_id),
	COALESCE(r.managed_by_job, 0)`

func scanRule(row pgx.Row) (RuleInfo, error) {
	var r RuleInfo
	var events []string
	var window, renotify, sla int64
	var muted *time.Time
	err := row.Scan(&r.ID, &r.Name, &r.JobID, &r.Group, &events, &r.Threshold, &window, &renotify, &r.PauseAfter, &sla, &r.Enabled, &muted,
		&r.MutedBy, &r.MuteReason, &r.CreatedBy, &r.CreatedAt, &r.Channels, &r.ManagedByJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	for _, e := range events {
		r.Events = append(r.Events, alarm.Event(e))
	}
	r.Window, r.Renotify = time.Duration(window)*time.Millisecond, time.Duration(renotify)*time.Millisecond
	r.SLA = time.Duration(sla) * time.Millisecond
	if muted != nil {
		r.MutedUntil = *muted
	}
	return r, err
}

// CreateRule stores a rule and its channels, in tx, as p's act: p must
// be allowed to name each channel (MayName; the one place a rule's
// reference to a channel is made). A job rule's group is its job's.
func CreateRule(ctx context.Context, tx pgx.Tx, r Rule, p *auth.Principal) (RuleInfo, error) {
	if err := CheckRule(r); err != nil {
		return RuleInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if r.JobID != 0 {
		if err := tx.QueryRow(ctx, `SELECT group_name FROM jobs WHERE id = $1`, r.JobID).Scan(&r.Group); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return RuleInfo{}, fmt.Errorf("%w: job %d does not exist", ErrInvalid, r.JobID)
			}
			return RuleInfo{}, fmt.Errorf("read job %d: %w", r.JobID, err)
		}
	}
	if err := authorizeChannels(ctx, tx, p, r.Group, r.Channels); err != nil {
		return RuleInfo{}, err
	}
	by := ""
	if p != nil {
		by = p.Name
	}
	events := make([]string, len(r.Events))
	for i, e := range r.Events {
		events[i] = string(e)
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO alert_rules (name, job_id, group_name, events, threshold, window_ms, renotify_ms,
			pause_after, sla_ms, created_by)
		VALUES ($1, NULLIF($2, 0), NULLIF($3, ''), $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		r.Name, r.JobID, r.Group, events, max(r.Threshold, 1), r.Window.Milliseconds(), r.Renotify.Milliseconds(),
		r.PauseAfter, r.SLA.Milliseconds(), by).Scan(&id)
	if err != nil {
		return RuleInfo{}, storeErr("create rule "+r.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO alert_rule_channels (rule_id, channel_id) SELECT $1, unnest($2::bigint[])
		ON CONFLICT DO NOTHING`, id, r.Channels); err != nil {
		return RuleInfo{}, storeErr(fmt.Sprintf("name the channels of rule %d", id), err)
	}
	return ReadRule(ctx, tx, id)
}

// UpdateRule replaces a rule's name, events, threshold, window,
// renotify, pause_after, sla and channels, in tx, as p's act. Its scope
// (job or group) stays, as a channel's kind and group do. Only the
// channels the rule did not name before are asked of MayName: a
// reference is authorized once, when it is made, so that an operator may
// tune a rule an admin pointed at a global channel without losing it.
func UpdateRule(ctx context.Context, tx pgx.Tx, r Rule, p *auth.Principal) (RuleInfo, error) {
	old, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleColumns+` FROM alert_rules r WHERE r.id = $1 FOR UPDATE`, r.ID))
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return RuleInfo{}, err
		}
		return RuleInfo{}, fmt.Errorf("read rule %d: %w", r.ID, err)
	}
	if old.ManagedByJob != 0 {
		return RuleInfo{}, managed("rule", r.ID, old.ManagedByJob)
	}
	r.JobID, r.Group = old.JobID, old.Group
	if err := CheckRule(r); err != nil {
		return RuleInfo{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var added []int64
	for _, id := range r.Channels {
		if !slices.Contains(old.Channels, id) {
			added = append(added, id)
		}
	}
	if err := authorizeChannels(ctx, tx, p, r.Group, added); err != nil {
		return RuleInfo{}, err
	}
	events := make([]string, len(r.Events))
	for i, e := range r.Events {
		events[i] = string(e)
	}
	if _, err := tx.Exec(ctx, `UPDATE alert_rules SET name = $2, events = $3, threshold = $4, window_ms = $5, renotify_ms = $6,
			pause_after = $7, sla_ms = $8 WHERE id = $1`,
		r.ID, r.Name, events, max(r.Threshold, 1), r.Window.Milliseconds(), r.Renotify.Milliseconds(), r.PauseAfter,
		r.SLA.Milliseconds()); err != nil {
		return RuleInfo{}, storeErr(fmt.Sprintf("update rule %d", r.ID), err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM alert_rule_channels WHERE rule_id = $1 AND channel_id <> ALL ($2)`, r.ID, r.Channels); err != nil {
		return RuleInfo{}, fmt.Errorf("update the channels of rule %d: %w", r.ID, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO alert_rule_channels (rule_id, channel_id) SELECT $1, unnest($2::bigint[])
		ON CONFLICT DO NOTHING`, r.ID, added); err != nil {
		return RuleInfo{}, storeErr(fmt.Sprintf("name the channels of rule %d", r.ID), err)
	}
	return ReadRule(ctx, tx, r.ID)
}

// ReadRule reads one rule.
func ReadRule(ctx context.Context, db DB, id int64) (RuleInfo, error) {
	r, err := scanRule(db.QueryRow(ctx, `SELECT `+ruleColumns+` FROM alert_rules r WHERE r.id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("read rule %d: %w", id, err)
	}
	return r, err
}

// Rules lists the rules, all (all) or the global ones and those of groups.
func Rules(ctx context.Context, db DB, all bool, groups []string) ([]RuleInfo, error) {
	rows, _ := db.Query(ctx, `SELECT `+ruleColumns+` FROM alert_rules r
		WHERE $1 OR r.group_name IS NULL OR r.group_name = ANY ($2) ORDER BY r.id`, all, groups)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RuleInfo, error) { return scanRule(row) })
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return out, nil
}

// DeleteRule deletes a rule and its alerts, unless a job's alarm fields
// make it.
func DeleteRule(ctx context.Context, db DB, id int64) error {
	var job int64
	err := db.QueryRow(ctx, `SELECT COALESCE(managed_by_job, 0) FROM alert_rules WHERE id = $1`, id).Scan(&job)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("read rule %d: %w", id, err)
	}
	if job != 0 {
		return managed("rule", id, job)
	}
	tag, err := db.Exec(ctx, `DELETE FROM alert_rules WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete rule %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Mute silences a rule (table alert_rules) or an alert (alerts) until a
// time (zero: lifts the silence), saying who and why.
func Mute(ctx context.Context, db DB, table string, id int64, until time.Time, by, why string) error {
	if table != "alert_rules" && table != "alerts" {
		return fmt.Errorf("mute: unknown table %q", table)
	}
	tag, err := db.Exec(ctx, `UPDATE `+table+` SET muted_until = $2, muted_by = $3, mute_reason = $4 WHERE id = $1`,
		id, orNull(until), by, why)
	if err != nil {
		return fmt.Errorf("mute %s %d: %w", table, id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// AlertInfo is an alert as the API shows it.
type AlertInfo struct {
	Alert
	RuleID     int64
	RuleName   string
	JobID      int64
	Group      string
	AckedBy    string
	MutedBy    string
	MuteReason string
}

// Alerts lists alerts, newest first: open ones only (open), all groups'
// (all) or the given groups'.
func Alerts(ctx context.Context, db DB, open, all bool, groups []string, limit int) ([]AlertInfo, error) {
	rows, _ := db.Query(ctx, `SELECT a.id, a.rule_id, a.job_id, a.state, a.count, a.recent, a.first_at, a.last_at, a.opened_at,
			a.closed_at, a.notified_at, a.last_run_id, a.last_event, a.last_status, a.last_message, a.acked_at, a.muted_until,
			r.name, a.group_name, a.acked_by, a.muted_by, a.mute_reason
		FROM alerts a JOIN alert_rules r ON r.id = a.rule_id
		WHERE (NOT $1 OR a.state = 'open') AND ($2 OR a.group_name = ANY ($3))
		ORDER BY a.id DESC LIMIT $4`, open, all, groups, limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AlertInfo, error) { return scanAlertInfo(row) })
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return out, nil
}

func scanAlertInfo(row pgx.Row) (AlertInfo, error) {
	var ai AlertInfo
	a, err := scanAlert(rowWithExtra{row, []any{&ai.RuleName, &ai.Group, &ai.AckedBy, &ai.MutedBy, &ai.MuteReason}}, &ai.RuleID, &ai.JobID)
	if a != nil {
		ai.Alert = *a
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = ErrNotFound
	}
	return ai, err
}

// rowWithExtra scans the columns after an alert's into extra.
type rowWithExtra struct {
	pgx.Row
	extra []any
}

func (r rowWithExtra) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.extra...)...) }

// ReadAlert reads one alert.
func ReadAlert(ctx context.Context, db DB, id int64) (AlertInfo, error) {
	return scanAlertInfo(db.QueryRow(ctx, `SELECT a.id, a.rule_id, a.job_id, a.state, a.count, a.recent, a.first_at, a.last_at,
			a.opened_at, a.closed_at, a.notified_at, a.last_run_id, a.last_event, a.last_status, a.last_message, a.acked_at,
			a.muted_until, r.name, a.group_name, a.acked_by, a.muted_by, a.mute_reason
		FROM alerts a JOIN alert_rules r ON r.id = a.rule_id WHERE a.id = $1`, id))
}

// Acknowledge marks an open alert seen: it is not told again until it
// closes.
func Acknowledge(ctx context.Context, db DB, id int64, by string) error {
	tag, err := db.Exec(ctx, `UPDATE alerts SET acked_at = now(), acked_by = $2 WHERE id = $1 AND state <> 'closed'`, id, by)
	if err != nil {
		return fmt.Errorf("acknowledge alert %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: alert %d is not live", ErrNotFound, id)
	}
	return nil
}

// Attempt is one attempt of a delivery.
type Attempt struct {
	N      int
	At     time.Time
	Result string
	Code   int
	Error  string
}

// Delivery is a notice to one channel, with its attempts.
type Delivery struct {
	ID        int64
	ChannelID int64
	Event     string
	State     string
	Attempts  []Attempt
	NextAt    time.Time
	CreatedAt time.Time
}

// Deliveries are an alert's deliveries (or, with alert 0, a channel's
// latest), newest first.
func Deliveries(ctx context.Context, db DB, alertID, channelID int64, limit int) ([]Delivery, error) {
	rows, _ := db.Query(ctx, `SELECT d.id, d.channel_id, d.notice->>'event', d.state, d.next_at, d.created_at,
			COALESCE((SELECT jsonb_agg(jsonb_build_object('n', n, 'at', at, 'result', result, 'code', code, 'error', error) ORDER BY n)
				FROM alert_attempts t WHERE t.delivery_id = d.id), '[]')
		FROM alert_deliveries d
		WHERE ($1 = 0 OR d.alert_id = $1) AND ($2 = 0 OR d.channel_id = $2)
		ORDER BY d.id DESC LIMIT $3`, alertID, channelID, limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Delivery, error) {
		var d Delivery
		var attempts []struct {
			N      int       `json:"n"`
			At     time.Time `json:"at"`
			Result string    `json:"result"`
			Code   int       `json:"code"`
			Error  string    `json:"error"`
		}
		err := row.Scan(&d.ID, &d.ChannelID, &d.Event, &d.State, &d.NextAt, &d.CreatedAt, &attempts)
		for _, a := range attempts {
			d.Attempts = append(d.Attempts, Attempt(a))
		}
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("list deliveries: %w", err)
	}
	return out, nil
}

// storeErr maps a unique violation to ErrConflict and wraps the rest.
func storeErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case pgerr.Unique(err):
		return fmt.Errorf("%w: %s: the name is taken", ErrConflict, what)
	case pgerr.ForeignKey(err):
		return fmt.Errorf("%w: %s: a job, group or channel it names does not exist", ErrInvalid, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
