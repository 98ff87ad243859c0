package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/errcount"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/scheduler/internal/tuning"
)

// Config tunes the engine. Zero values mean the defaults.
type Config struct {
	// Interval between rounds (default 1 s).
	Interval time.Duration
	// Attempts per delivery before it is recorded failed (default 5).
	Attempts int
	// Backoff is the delay before a delivery's first retry, doubled each
	// time up to 10 minutes (default 5 s); a receiver's Retry-After
	// waits longer when it asks to.
	Backoff time.Duration
	// Parallel bounds the deliveries sent at once (default 8), so that a
	// dead channel's timeouts hold up at most one of them each.
	Parallel int
}

// Validate says which field is wrong.
func (c Config) Validate() error {
	return errors.Join(
		tuning.NotNegative("alerts", "Interval", c.Interval, "1s"),
		tuning.NotNegative("alerts", "Attempts", c.Attempts, "5"),
		tuning.NotNegative("alerts", "Backoff", c.Backoff, "5s"),
		tuning.NotNegative("alerts", "Parallel", c.Parallel, "8"),
	)
}

func (c Config) withDefaults() Config {
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	if c.Backoff == 0 {
		c.Backoff = 5 * time.Second
	}
	if c.Parallel == 0 {
		c.Parallel = 8
	}
	return c
}

// Deps are what the engine reads and sends with.
type Deps struct {
	Pool *pgxpool.Pool
	Log  *zap.Logger
	// Sender sends notices on channels (the egress policy, SMTP, the
	// console link).
	Sender *alarm.Sender
}

// Engine turns the outbox into alerts and deliveries, and sends them.
type Engine struct {
	cfg    Config
	pool   *pgxpool.Pool
	log    *zap.Logger
	sender *alarm.Sender
	// now is the rules' clock (tests set a fake one).
	now func() time.Time
}

// New validates cfg and returns an engine; Run drives it.
func New(cfg Config, deps Deps) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Pool == nil || deps.Sender == nil {
		return nil, errors.New("alerts: Deps.Pool and Deps.Sender are required")
	}
	return &Engine{cfg: cfg.withDefaults(), pool: deps.Pool, log: logging.Named(deps.Log, "alerts"),
		sender: deps.Sender, now: time.Now}, nil
}

// Run processes the outbox and sends due deliveries every Interval until
// ctx ends.
func (e *Engine) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		e.Round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round processes the outbox until it is empty (or another scheduler
// holds it), then sends the due deliveries once.
func (e *Engine) Round(ctx context.Context) {
	if err := e.SweepSLA(ctx); err != nil && ctx.Err() == nil {
		errcount.Postgres(errcount.Alarm)
		e.log.Warn("SLA sweep failed; retrying", zap.Error(err))
	}
	for ctx.Err() == nil {
		n, err := e.Process(ctx)
		if err != nil {
			if ctx.Err() == nil {
				errcount.Postgres(errcount.Alarm)
				e.log.Warn("alert processing failed; retrying", zap.Error(err))
			}
			break
		}
		if n < outboxBatch {
			break
		}
	}
	if _, err := e.Deliver(ctx); err != nil && ctx.Err() == nil {
		errcount.Postgres(errcount.Alarm)
		e.log.Warn("alert delivery round failed; retrying", zap.Error(err))
	}
}

// outboxBatch is how many outbox rows one transaction takes.
const outboxBatch = 200

// engineLockKey is the advisory lock of the outbox's one processor: rules
// see a job's ends in order, whichever scheduler processes them.
const engineLockKey = 0x6a6a616c657274 // "jjalert"

// liveKey names a rule's live alert on a job.
type liveKey struct{ rule, job int64 }

// Process applies up to outboxBatch outbox rows to rules and alerts, and
// queues their deliveries, in one transaction that deletes the rows: each
// end is applied once. It returns how many rows it took (0 also when
// another scheduler holds the outbox).
func (e *Engine) Process(ctx context.Context) (int, error) {
	var n int
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		n = 0
		var got bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, engineLockKey).Scan(&got); err != nil || !got {
			return err
		}
		ends, err := loadEnds(ctx, tx)
		if err != nil || len(ends) == 0 {
			return err
		}
		n = len(ends)
		rules, err := loadRules(ctx, tx, ends)
		if err != nil {
			return err
		}
		live, err := loadLive(ctx, tx, ends)
		if err != nil {
			return err
		}
		now := e.now()
		ids := make([]int64, 0, len(ends))
		for _, end := range ends {
			ids = append(ids, end.ID)
			for i := range rules {
				r := &rules[i]
				if !r.Covers(end.JobID, end.Group) || (end.RuleID != 0 && end.RuleID != r.ID) {
					continue
				}
				k := liveKey{r.ID, end.JobID}
				a, notify := Decide(r, live[k], end, now)
				if a != nil && a.Changed {
					if err := saveAlert(ctx, tx, r, end, a); err != nil {
						return err
					}
					a.Changed = false
				}
				if notify != nil {
					if err := e.queue(ctx, tx, r, end, a, notify.Event, end.ID); err != nil {
						return err
					}
				}
				if a != nil && a.Pause {
					if err := e.pause(ctx, tx, r, end, a); err != nil {
						return err
					}
				}
				if a != nil && a.State == StateClosed {
					a = nil // the next problem begins a new alert
				}
				live[k] = a
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM alert_outbox WHERE id = ANY ($1)`, ids); err != nil {
			return fmt.Errorf("delete %d outbox rows: %w", len(ids), err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("process the alert outbox: %w", err)
	}
	return n, nil
}

func loadEnds(ctx context.Context, tx pgx.Tx) ([]End, error) {
	rows, _ := tx.Query(ctx, `SELECT o.id, COALESCE(o.rule_id, 0), o.run_id, o.job_id, COALESCE(j.name, ''), COALESCE(j.owner, ''),
			o.group_name, o.status, o.attempt, o.final, o.message, o.at
		FROM alert_outbox o LEFT JOIN jobs j ON j.id = o.job_id ORDER BY o.id LIMIT $1`, outboxBatch)
	ends, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (End, error) {
		var e End
		err := r.Scan(&e.ID, &e.RuleID, &e.RunID, &e.JobID, &e.JobName, &e.Owner, &e.Group, &e.Status, &e.Attempt, &e.Final, &e.Message, &e.At)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the alert outbox: %w", err)
	}
	return ends, nil
}

// loadRules reads the enabled rules that may cover the ends' jobs, with
// their channels.
func loadRules(ctx context.Context, tx pgx.Tx, ends []End) ([]Rule, error) {
	var jobs []int64
	var groups []string
	for _, e := range ends {
		jobs, groups = append(jobs, e.JobID), append(groups, e.Group)
	}
	rows, _ := tx.Query(ctx, `SELECT r.id, r.name, COALESCE(r.job_id, 0), COALESCE(r.group_name, ''), r.events, r.threshold,
			r.window_ms, r.renotify_ms, r.pause_after, r.muted_until,
			ARRAY(SELECT channel_id FROM alert_rule_channels c WHERE c.rule_id = r.id ORDER BY channel_id)
		FROM alert_rules r
		WHERE r.enabled AND (r.job_id = ANY ($1) OR (r.job_id IS NULL AND (r.group_name = ANY ($2) OR r.group_name IS NULL)))
		ORDER BY r.id`, jobs, groups)
	rules, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Rule, error) {
		var r Rule
		var events []string
		var window, renotify int64
		var muted *time.Time
		err := row.Scan(&r.ID, &r.Name, &r.JobID, &r.Group, &events, &r.Threshold, &window, &renotify, &r.PauseAfter, &muted, &r.Channels)
		for _, ev := range events {
			r.Events = append(r.Events, alarm.Event(ev))
		}
		r.Window, r.Renotify = time.Duration(window)*time.Millisecond, time.Duration(renotify)*time.Millisecond
		if muted != nil {
			r.MutedUntil = *muted
		}
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read alert rules: %w", err)
	}
	return rules, nil
}

const alertColumns = `id, rule_id, job_id, state, count, recent, first_at, last_at, opened_at, closed_at, notified_at,
	last_run_id, last_event, last_status, last_message, acked_at, muted_until`

// loadLive reads, and locks, the live alerts of the ends' jobs.
func loadLive(ctx context.Context, tx pgx.Tx, ends []End) (map[liveKey]*Alert, error) {
	var jobs []int64
	for _, e := range ends {
		jobs = append(jobs, e.JobID)
	}
	rows, _ := tx.Query(ctx, `SELECT `+alertColumns+` FROM alerts WHERE state <> 'closed' AND job_id = ANY ($1)
		ORDER BY id FOR UPDATE`, jobs)
	live := map[liveKey]*Alert{}
	var rule, job int64
	defer rows.Close()
	for rows.Next() {
		a, err := scanAlert(rows, &rule, &job)
		if err != nil {
			return nil, fmt.Errorf("read live alerts: %w", err)
		}
		live[liveKey{rule, job}] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read live alerts: %w", err)
	}
	return live, nil
}

func scanAlert(row pgx.Row, rule, job *int64) (*Alert, error) {
	a := &Alert{}
	var opened, closed, notified, acked, muted *time.Time
	var event string
	err := row.Scan(&a.ID, rule, job, &a.State, &a.Count, &a.Recent, &a.FirstAt, &a.LastAt, &opened, &closed, &notified,
		&a.LastRunID, &event, &a.LastStatus, &a.LastMessage, &acked, &muted)
	a.LastEvent = alarm.Event(event)
	for _, p := range []struct {
		from *time.Time
		to   *time.Time
	}{{opened, &a.OpenedAt}, {closed, &a.ClosedAt}, {notified, &a.NotifiedAt}, {acked, &a.AckedAt}, {muted, &a.MutedUntil}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
	return a, err
}

// orNull is a time as a nullable column.
func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// saveAlert writes a, inserting it (and setting its ID) when new.
func saveAlert(ctx context.Context, tx pgx.Tx, r *Rule, e End, a *Alert) error {
	recent := a.Recent
	if recent == nil {
		recent = []time.Time{}
	}
	if a.ID == 0 {
		err := tx.QueryRow(ctx, `INSERT INTO alerts (rule_id, job_id, group_name, state, count, recent, first_at, last_at,
				opened_at, closed_at, notified_at, last_run_id, last_event, last_status, last_message)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
			r.ID, e.JobID, e.Group, a.State, a.Count, recent, a.FirstAt, a.LastAt, orNull(a.OpenedAt), orNull(a.ClosedAt),
			orNull(a.NotifiedAt), a.LastRunID, string(a.LastEvent), a.LastStatus, a.LastMessage).Scan(&a.ID)
		if err != nil {
			return fmt.Errorf("create the alert of rule %d on job %d: %w", r.ID, e.JobID, err)
		}
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE alerts SET state = $2, count = $3, recent = $4, last_at = $5, opened_at = $6,
			closed_at = $7, notified_at = $8, last_run_id = $9, last_event = $10, last_status = $11, last_message = $12
		WHERE id = $1`, a.ID, a.State, a.Count, recent, a.LastAt, orNull(a.OpenedAt), orNull(a.ClosedAt),
		orNull(a.NotifiedAt), a.LastRunID, string(a.LastEvent), a.LastStatus, a.LastMessage)
	if err != nil {
		return fmt.Errorf("update alert %d: %w", a.ID, err)
	}
	return nil
}

// pause disables the job whose alert reached the rule's PauseAfter, in
// the transaction that counted the failure, with a note naming the rule
// and the job's latest failed runs, and tells the rule's channels (event
// id -end.ID: the failure's own notice keeps end.ID).
func (e *Engine) pause(ctx context.Context, tx pgx.Tx, r *Rule, end End, a *Alert) error {
	var runIDs []int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM (SELECT id FROM job_runs
			WHERE job_id = $1 AND status IN ('FAILED', 'TIMED_OUT', 'LOST', 'EXPIRED') ORDER BY id DESC LIMIT $2) f`,
		end.JobID, min(a.Count, 10)).Scan(&runIDs); err != nil {
		return fmt.Errorf("read the failed runs of job %d: %w", end.JobID, err)
	}
	note := fmt.Sprintf("paused by alert rule %q (%d) after %d consecutive failures; latest runs %v", r.Name, r.ID, a.Count, runIDs)
	actor := store.Actor{Name: "alerts", Auth: fmt.Sprintf("rule:%d", r.ID), Client: "scheduler"}
	if _, err := store.DisableJobTx(ctx, tx, actor, end.JobID, note); errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile: nothing to pause
	} else if err != nil {
		return err
	}
	e.log.Warn("job paused by an alert rule", zap.Int64("job", end.JobID), zap.Int64("rule", r.ID), zap.Int("failures", a.Count))
	end.Message = note
	return e.queue(ctx, tx, r, end, a, alarm.EventPaused, -end.ID)
}

// queue writes one delivery of the notice per channel of the rule, at
// most once per (rule, channel, event).
func (e *Engine) queue(ctx context.Context, tx pgx.Tx, r *Rule, end End, a *Alert, ev alarm.Event, eventID int64) error {
	n := alarm.Notice{V: 1, Event: ev, Rule: r.Name, JobID: end.JobID, JobName: end.JobName, Owner: end.Owner, Group: end.Group,
		RunID: end.RunID, Status: end.Status, Message: end.Message, Attempt: end.Attempt, Count: 1, FirstAt: end.At,
		At: end.At, ConsoleLink: e.sender.ConsoleLink(end.RunID)}
	var alertID *int64
	if a != nil {
		n.AlertID, n.State, n.Count, n.FirstAt = a.ID, a.State, a.Count, a.FirstAt
		alertID = &a.ID
	}
	body, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("encode notice: %w", err)
	}
	for _, ch := range r.Channels {
		if _, err := tx.Exec(ctx, `INSERT INTO alert_deliveries (alert_id, rule_id, channel_id, event_id, notice)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, alertID, r.ID, ch, eventID, body); err != nil {
			return fmt.Errorf("queue the notice of rule %d on channel %d: %w", r.ID, ch, err)
		}
	}
	return nil
}

// claimed is a delivery this scheduler is sending.
type claimed struct {
	id, attempt int64
	notice      alarm.Notice
	channel     alarm.Channel
}

// deliverBatch is how many due deliveries one round claims.
const deliverBatch = 50

// leaseMargin is how much longer than one attempt's timeout a claim
// holds: past it, the attempt is taken for interrupted.
const leaseMargin = 30 * time.Second

// Deliver sends the due deliveries: first it records unknown those whose
// claim ran out (their scheduler stopped during the attempt; they are not
// repeated), then claims up to deliverBatch, sends them, Parallel at a
// time, and records each attempt. It returns how many it sent or tried.
func (e *Engine) Deliver(ctx context.Context) (int, error) {
	if _, err := e.pool.Exec(ctx, `WITH x AS (UPDATE alert_deliveries SET state = 'unknown', lease_until = NULL,
			last_error = 'the scheduler stopped during the attempt; not repeated'
			WHERE state = 'sending' AND lease_until < now() RETURNING id, attempts)
		INSERT INTO alert_attempts (delivery_id, n, result, error)
		SELECT id, attempts, 'unknown', 'the scheduler stopped during the attempt; not repeated' FROM x
		ON CONFLICT DO NOTHING`); err != nil {
		return 0, fmt.Errorf("settle interrupted deliveries: %w", err)
	}
	lease := e.sender.Timeout() + leaseMargin
	rows, _ := e.pool.Query(ctx, `UPDATE alert_deliveries d SET state = 'sending', attempts = d.attempts + 1,
			lease_until = now() + $2 * interval '1 millisecond'
		FROM alert_channels c
		WHERE d.id IN (SELECT id FROM alert_deliveries WHERE state = 'pending' AND next_at <= now()
				ORDER BY next_at LIMIT $1 FOR UPDATE SKIP LOCKED)
		  AND c.id = d.channel_id
		RETURNING d.id, d.attempts, d.notice, c.id, c.name, c.kind, COALESCE(c.group_name, ''), c.target, c.secret, c.template`,
		deliverBatch, lease.Milliseconds())
	due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		var raw []byte
		var kind string
		err := r.Scan(&c.id, &c.attempt, &raw, &c.channel.ID, &c.channel.Name, &kind, &c.channel.Group,
			&c.channel.Target, &c.channel.Secret, &c.channel.Template)
		c.channel.Kind = alarm.Kind(kind)
		if err == nil {
			err = json.Unmarshal(raw, &c.notice)
		}
		return c, err
	})
	if err != nil {
		return 0, fmt.Errorf("claim deliveries: %w", err)
	}
	sem := make(chan struct{}, e.cfg.Parallel)
	var wg sync.WaitGroup
	for _, c := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			e.send(ctx, c)
		}()
	}
	wg.Wait()
	return len(due), nil
}

// send makes one attempt of a claimed delivery and records it, fenced by
// the attempt's number: a claim that ran out and was settled by another
// scheduler is not overwritten.
func (e *Engine) send(ctx context.Context, c claimed) {
	res := e.sender.Notify(ctx, c.channel, &c.notice, fmt.Sprintf("jetjob-alert-delivery-%d", c.id))
	state, next, msg := "sent", (*time.Time)(nil), ""
	log := e.log.With(zap.Int64("delivery", c.id), zap.Int64("channel", c.channel.ID), zap.Int64("attempt", c.attempt))
	if res.Err != nil {
		msg = res.Err.Error()
		state = "failed"
		if int(c.attempt) < e.cfg.Attempts {
			state = "pending"
			wait := max(backoff.Backoff{Initial: e.cfg.Backoff, Max: 10 * time.Minute}.Delay(int(c.attempt)), res.RetryAfter)
			t := e.now().Add(wait)
			next = &t
			log.Warn("alert delivery failed; will retry", zap.String("error", msg), zap.Duration("in", wait))
		} else {
			log.Error("alert delivery failed for good", zap.String("error", msg))
		}
	}
	result := "sent"
	if state != "sent" {
		result = "failed"
	}
	tag, err := e.pool.Exec(context.WithoutCancel(ctx), `WITH d AS (UPDATE alert_deliveries SET state = $3,
			next_at = COALESCE($4, next_at), last_code = $5, last_error = $6, lease_until = NULL,
			sent_at = CASE WHEN $3 = 'sent' THEN now() END
			WHERE id = $1 AND state = 'sending' AND attempts = $2 RETURNING id)
		INSERT INTO alert_attempts (delivery_id, n, result, code, error) SELECT id, $2, $7, $5, $6 FROM d`,
		c.id, c.attempt, state, next, res.Code, msg, result)
	switch {
	case err != nil:
		log.Warn("recording the delivery failed; it will be settled unknown", zap.Error(err))
	case tag.RowsAffected() == 0:
		log.Warn("the delivery's claim ran out before its attempt was recorded")
	}
}
