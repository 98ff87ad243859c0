package results

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/jetjob/jetjob/shared/wire"
)

// fillStartedSQL records start times that applySQL could not: a started
// event arriving after its run's finished one, or applied by another
// scheduler concurrently (applySQL then finds the run's status already as
// high and skips the row). A statement of its own, so it sees what the
// concurrent transaction committed.
const fillStartedSQL = `UPDATE job_runs r SET started_at = u.started_at
	FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS u(id, started_at, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.started_at IS NULL`

// lookupScheduledSQL finds the partition key of runs whose events did not
// carry it (workers older than wire.Event.ScheduledAt). It probes every
// partition's primary key, so it is only the fallback.
const lookupScheduledSQL = `SELECT id, scheduled_at FROM job_runs WHERE id = ANY($1::bigint[])`

// applySQL applies a batch of coalesced run updates in one statement, and
// in the same transaction does what follows a run's end:
//
//   - applied: runs whose status moves up in rank (wire.Status.Rank); the
//     condition is re-checked on the locked row, so a run changes status at
//     most once per status, whoever applies the event and however often.
//     started_at, finished_at and the message are filled once, and so are
//     the trigger's stream sequence and time when the dispatcher has not
//     recorded them yet (see dispatch.Config.TriggeredDelay). A run that
//     ends failed (FAILED, TIMED_OUT, LOST) with no retry left is marked
//     alarm_status = 'pending' for the alarm sender.
//   - retried: a failed run with attempts left gets a new run (trigger type
//     retry, attempt + 1, retry_of), scheduled after its backoff.
//   - children: a run that succeeded triggers its job's enabled children
//     (trigger type parent, parent_run), scheduled at its end.
//   - chained: a fix_delay job's next fire, the delay after its run ended.
//
// Runs are matched by (id, scheduled_at), so that each row is found in its
// one partition of job_runs (run-time pruning in the nested loop over u),
// and by group: an event counts only for a run of the group whose subject
// (jetjob.event.<group>) it came on, so a worker of one group, broken or
// hostile, cannot end another group's runs.
//

// The new runs are keyed like every run (job, scheduled_at, shard index,
// attempt) and derive from the run's finished_at, so applying the same
// event again can never create them twice.
const applySQL = `WITH u AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[],
				$7::timestamptz[], $8::bigint[], $9::timestamptz[], $10::text[])
			AS u(id, status, started_at, finished_at, message, worker_id, scheduled_at, stream_seq, triggered_at, group_name)),
	applied AS (UPDATE job_runs r SET
		status = u.status,
		started_at = COALESCE(r.started_at, u.started_at),
		stream_seq = COALESCE(r.stream_seq, u.stream_seq),
		triggered_at = COALESCE(r.triggered_at, u.triggered_at),
		finished_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN u.finished_at ELSE r.finished_at END,
		message = CASE WHEN jetjob_status_rank(u.status) = 3 THEN u.message ELSE r.message END,
		recorded_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() ELSE r.recorded_at END,
		worker_id = CASE WHEN u.worker_id <> '' THEN u.worker_id ELSE r.worker_id END,
		alarm_status = CASE WHEN u.status IN ('FAILED', 'TIMED_OUT', 'LOST')
				AND r.attempt >= COALESCE((SELECT max_retries FROM jobs WHERE id = r.job_id), 0)
			THEN 'pending' ELSE r.alarm_status END,
		alarm_next_at = CASE WHEN u.status IN ('FAILED', 'TIMED_OUT', 'LOST') THEN now() ELSE r.alarm_next_at END
	FROM u
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.group_name = u.group_name
	  AND jetjob_status_rank(u.status) > jetjob_status_rank(r.status)
	RETURNING r.id, r.job_id, r.group_name, r.shard, r.status, r.finished_at, r.trigger_type, r.attempt,
		r.shard_index, r.shard_total, r.params, r.started_at, r.scheduled_at),
	retried AS (INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			attempt, retry_of, shard_index, shard_total, params)
		SELECT a.job_id, a.group_name, a.shard, 'retry', 'SCHEDULED',
			a.finished_at + make_interval(secs => (CASE WHEN j.retry_backoff = 'fixed'
				THEN j.retry_initial_ms::float8
				ELSE least(j.retry_max_ms::float8, j.retry_initial_ms * power(2::float8, a.attempt)) * (1 + 0.2 * random())
			END) / 1000),
			a.attempt + 1, a.id, a.shard_index, a.shard_total, a.params
		FROM applied a JOIN jobs j ON j.id = a.job_id
		WHERE a.status IN ('FAILED', 'TIMED_OUT', 'LOST') AND a.attempt < j.max_retries
		ON CONFLICT DO NOTHING
		RETURNING id),
	children AS (INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, parent_run)
		SELECT c.id, c.group_name, c.shard, 'parent', 'SCHEDULED', a.finished_at, a.id
		FROM applied a JOIN jobs p ON p.id = a.job_id JOIN jobs c ON c.id = ANY (p.child_job_ids) AND c.enabled
		WHERE a.status = 'SUCCEEDED'
		ON CONFLICT DO NOTHING
		RETURNING id),
	chained AS (UPDATE jobs j SET next_fire_at = a.finished_at + j.delay_ms * interval '1 millisecond'
		FROM applied a
		WHERE j.id = a.job_id AND j.schedule_type = 'fix_delay' AND j.enabled AND j.next_fire_at IS NULL
		  AND jetjob_status_rank(a.status) = 3 AND a.trigger_type IN ('schedule', 'misfire'))
	SELECT id, job_id, status, 0, group_name, started_at, scheduled_at, finished_at FROM applied
	UNION ALL SELECT id, 0, 'SCHEDULED', 1, '', NULL, NULL, NULL FROM retried
	UNION ALL SELECT id, 0, 'SCHEDULED', 1, '', NULL, NULL, NULL FROM children`

// Row kinds of applySQL's result.
const (
	rowApplied = 0 // a run whose status the batch moved
	rowSpawned = 1 // a run the batch created (retry, child)
)

// ignoredSQL reads the status of the runs of the updates applySQL did not
// apply (empty when the group of the events' subject has no such run), for
// Ignored. A statement of its own, run only when some update did not
// apply (a duplicate, a late or a foreign event): the usual batch, where
// every update applies, pays nothing. (An anti-join against applySQL's
// updated rows inside that statement was planned as a nested loop over
// the whole batch: quadratic in its size, and it tipped the benchmark at
// 7,000 runs/s over.)
const ignoredSQL = `SELECT COALESCE(r.status, '')
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) WITH ORDINALITY AS q(id, scheduled_at, group_name, i)
	LEFT JOIN job_runs r ON r.id = q.id AND r.scheduled_at = q.scheduled_at AND r.group_name = q.group_name
	ORDER BY q.i`

// runUpdate is the coalesced effect of a batch's events on one run.
type runUpdate struct {
	status     wire.Status
	startedAt  *time.Time
	finishedAt *time.Time
	message    string
	workerID   string
	// seq and triggeredAt place the run's trigger in JETJOB_TRIGGERS (0
	// and zero when no event said).
	seq         uint64
	triggeredAt *time.Time
	// scheduledAt is the run's partition key from its events; zero when
	// none carried it.
	scheduledAt time.Time
	// from are the messages that carried the run's events, for the log
	// when the update changes nothing (one each: a duplicate is a message
	// of its own).
	from []source
}

// runKey identifies an update: a run, as named by events on one group's
// subject.
type runKey struct {
	id    int64
	group string
}

// source is where an event came from: its message's subject and stream
// sequence in JETJOB_EVENTS, and the group the subject names.
type source struct {
	subject string
	seq     uint64
	group   string
}

// sourcedEvent is an event with the message it came in.
type sourcedEvent struct {
	wire.Event
	from source
}

// Ignored is an update of a batch that changed no run: the run does not
// exist in the group of the subject it came on (Status empty), or it is
// already at or past the status the events said (a duplicate, or an event
// that arrived after a later one).
type Ignored struct {
	RunID  int64
	Group  string
	Status wire.Status // the run's current status; empty if no such run in Group
	// From are the messages the update's events came in.
	From []source
}

// coalesce folds the events of one batch per run (and group), so a run
// that started and finished within one batch costs one row update, not two.
func coalesce(events []sourcedEvent) map[runKey]*runUpdate {
	out := make(map[runKey]*runUpdate, len(events))
	for i := range events {
		e := &events[i]
		k := runKey{e.RunID, e.from.group}
		u := out[k]
		if u == nil {
			u = &runUpdate{}
			out[k] = u
		}
		if n := len(u.from); n == 0 || u.from[n-1] != e.from {
			u.from = append(u.from, e.from)
		}
		if u.scheduledAt.IsZero() {
			u.scheduledAt = e.ScheduledAt
		}
		if u.seq == 0 && e.TriggerSeq != 0 && !e.TriggeredAt.IsZero() {
			u.seq, u.triggeredAt = e.TriggerSeq, &e.TriggeredAt
		}
		at := e.At
		if e.Kind == wire.EventStarted && (u.startedAt == nil || at.Before(*u.startedAt)) {
			u.startedAt = &at
		}
		if e.Status.Rank() > u.status.Rank() {
			u.status = e.Status
			u.workerID = storable(e.WorkerID)
			if e.Status.Terminal() {
				u.finishedAt = &at
				u.message = storable(wire.TruncateMessage(e.Message))
			}
		}
	}
	return out
}

// storable replaces NUL bytes, which PostgreSQL refuses in text: a handler
// error quoting binary output must not make its batch fail forever and hold
// up every result behind it.
func storable(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// apply applies events and returns the status changes, the ids of the
// runs it created (retries, child runs) and the updates that changed nothing.
func apply(ctx context.Context, pool *pgxpool.Pool, events []sourcedEvent) ([]Change, []int64, []Ignored, error) {
	ups := coalesce(events)
	// In id order: concurrent appliers and dispatch's TRIGGERED writes then
	// lock rows in the same order and do not deadlock.
	order := make([]runKey, 0, len(ups))
	for k := range ups {
		order = append(order, k)
	}
	slices.SortFunc(order, func(a, b runKey) int {
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return strings.Compare(a.group, b.group)
	})
	var (
		changes []Change
		spawned []int64
		ignored []Ignored
		c       Change
		kind    int
		group   string
		// The run's times after the change; NULL for spawned rows.
		started, sched, finished *time.Time
	)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		changes, spawned, ignored = changes[:0], spawned[:0], ignored[:0]
		keys, err := scheduledTimes(ctx, tx, ups, order)
		if err != nil {
			return err
		}
		var (
			ids                 = make([]int64, 0, len(ups))
			statuses, msgs, wks = make([]string, 0, len(ups)), make([]string, 0, len(ups)), make([]string, 0, len(ups))
			starts, ends        = make([]*time.Time, 0, len(ups)), make([]*time.Time, 0, len(ups))
			scheds              = make([]time.Time, 0, len(ups))
			seqs                = make([]*int64, 0, len(ups))
			triggered           = make([]*time.Time, 0, len(ups))
			groups              = make([]string, 0, len(ups))
		)
		for _, k := range order {
			u := ups[k]
			at, ok := keys[k]
			if !ok {
				// No run has this id: nothing to apply.
				ignored = append(ignored, Ignored{RunID: k.id, Group: k.group, From: u.from})
				continue
			}
			ids = append(ids, k.id)
			statuses = append(statuses, string(u.status))
			starts = append(starts, u.startedAt)
			ends = append(ends, u.finishedAt)
			msgs = append(msgs, u.message)
			wks = append(wks, u.workerID)
			scheds = append(scheds, at)
			groups = append(groups, k.group)
			var seq *int64
			if u.seq != 0 {
				v := int64(u.seq)
				seq = &v
			}
			seqs, triggered = append(seqs, seq), append(triggered, u.triggeredAt)
		}
		rows, _ := tx.Query(ctx, applySQL, ids, statuses, starts, ends, msgs, wks, scheds, seqs, triggered, groups)
		applied := make(map[runKey]bool, len(ids))
		_, err = pgx.ForEachRow(rows, []any{&c.RunID, &c.JobID, &c.Status, &kind, &group, &started, &sched, &finished}, func() error {
			if kind == rowSpawned {
				spawned = append(spawned, c.RunID)
				return nil
			}
			k := runKey{c.RunID, group}
			applied[k] = true
			c.Triggered = ups[k] != nil && ups[k].seq != 0
			c.Group, c.StartApplied = group, ups[k] != nil && ups[k].startedAt != nil
			c.StartedAt, c.ScheduledAt, c.FinishedAt = deref(started), deref(sched), deref(finished)
			changes = append(changes, c)
			return nil
		})
		if err != nil {
			return err
		}
		if ignored, err = ignoredUpdates(ctx, tx, ups, ignored, ids, scheds, groups, applied); err != nil {
			return err
		}
		// Runs applySQL moved have their start time already (COALESCE):
		// only the others of a known run need the second statement.
		moved := make(map[int64]bool, len(changes))
		for _, ch := range changes {
			moved[ch.RunID] = true
		}
		unknown := make(map[runKey]bool)
		for _, ig := range ignored {
			if ig.Status == "" {
				unknown[runKey{ig.RunID, ig.Group}] = true
			}
		}
		var sIDs []int64
		var sAts, sScheds []time.Time
		for i, at := range starts {
			if at != nil && !moved[ids[i]] && !unknown[runKey{ids[i], groups[i]}] {
				sIDs, sAts, sScheds = append(sIDs, ids[i]), append(sAts, *at), append(sScheds, scheds[i])
			}
		}
		if len(sIDs) > 0 {
			_, err = tx.Exec(ctx, fillStartedSQL, sIDs, sAts, sScheds)
		}
		return err
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("apply %d events to %d runs: %w", len(events), len(ups), err)
	}
	return changes, spawned, ignored, nil
}

// ignoredUpdates appends to ignored the updates among ids (with their
// partition keys and groups) that applySQL did not apply, each with its
// run's status read by ignoredSQL.
func ignoredUpdates(ctx context.Context, tx pgx.Tx, ups map[runKey]*runUpdate, ignored []Ignored,
	ids []int64, scheds []time.Time, groups []string, applied map[runKey]bool) ([]Ignored, error) {
	var qIDs []int64
	var qScheds []time.Time
	var qGroups []string
	for i, id := range ids {
		if !applied[runKey{id, groups[i]}] {
			qIDs, qScheds, qGroups = append(qIDs, id), append(qScheds, scheds[i]), append(qGroups, groups[i])
		}
	}
	if len(qIDs) == 0 {
		return ignored, nil
	}
	rows, _ := tx.Query(ctx, ignoredSQL, qIDs, qScheds, qGroups)
	sts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return ignored, fmt.Errorf("read the runs of %d updates that changed nothing: %w", len(qIDs), err)
	}
	for i, st := range sts {
		k := runKey{qIDs[i], qGroups[i]}
		ignored = append(ignored, Ignored{RunID: k.id, Group: k.group, Status: wire.Status(st), From: ups[k].from})
	}
	return ignored, nil
}

// scheduledTimes returns each run's partition key: from its events, or,
// for runs whose events did not carry it, looked up by id (unpruned, but
// still correct). A run missing from the result does not exist.
func scheduledTimes(ctx context.Context, tx pgx.Tx, ups map[runKey]*runUpdate, order []runKey) (map[runKey]time.Time, error) {
	keys := make(map[runKey]time.Time, len(ups))
	var missing []int64
	for _, k := range order {
		if at := ups[k].scheduledAt; !at.IsZero() {
			keys[k] = at
		} else {
			missing = append(missing, k.id)
		}
	}
	if len(missing) == 0 {
		return keys, nil
	}
	var (
		id int64
		at time.Time
	)
	found := make(map[int64]time.Time, len(missing))
	rows, _ := tx.Query(ctx, lookupScheduledSQL, missing)
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { found[id] = at; return nil }); err != nil {
		return nil, fmt.Errorf("look up scheduled times of %d runs: %w", len(missing), err)
	}
	for _, k := range order {
		if at, ok := found[k.id]; ok && ups[k].scheduledAt.IsZero() {
			keys[k] = at
		}
	}
	return keys, nil
}

// deref is *t, or the zero time for NULL.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
