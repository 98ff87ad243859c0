// Package alertoutbox writes the alert outbox (docs/alerts.md, "Delivery
// guarantees"): the ends of runs an alert rule may follow from, in the
// statement or transaction that records them, so that an end is in the
// outbox exactly when it is recorded. Package alerts consumes it.
//
// It is its own package, importing nothing of jetjob's, because every
// writer of a run's end writes the outbox: the results applier (a
// worker's end), dispatch (a fire its misfire policy skips), the planner
// (missed fires it records SKIPPED) and the workflow engine (a workflow
// job's run that ends with its workflow run) — and runs, the lowest of
// them, may import no package above it.
package alertoutbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Run is the relation alias InsertFrom reads: a source's rows of
// job_runs, with at least the columns id, job_id, group_name, status,
// attempt, run_max_retries, message and finished_at.
const Run = "r"

// InsertFrom is the statement that writes to the outbox the rows of
// source (which names its relation Run) a rule may follow from: a
// failed, timed-out, lost, expired or skipped run of a job some enabled
// rule covers, and a success only where it can matter (the job has a
// live alert to close, or a rule covering it subscribes to succeeded),
// so that the paths that end runs pay for alerting only where someone is
// listening. A workflow job's run that ends FAILED is the event
// workflow_failed; final says no retry follows.
func InsertFrom(source string) string {
	return insertFrom(source+`
		LEFT JOIN jobs j ON j.id = r.job_id`, `r.attempt >= COALESCE(r.run_max_retries, j.max_retries, 0)`)
}

// insertFrom is InsertFrom with final, whether no retry follows an end,
// given as an expression over source.
func insertFrom(source, final string) string {
	return `INSERT INTO alert_outbox (run_id, job_id, group_name, status, attempt, final, message, at)
	SELECT r.id, r.job_id, r.group_name,
		CASE WHEN r.status = 'FAILED' AND EXISTS (SELECT 1 FROM workflows w WHERE w.job_id = r.job_id) THEN 'WORKFLOW_FAILED'
			ELSE r.status END,
		r.attempt, ` + final + `, left(r.message, 2000), COALESCE(r.finished_at, now())
	FROM ` + source + `
	WHERE r.status IN ('FAILED', 'TIMED_OUT', 'LOST', 'EXPIRED', 'SKIPPED', 'SUCCEEDED')
	  AND (EXISTS (SELECT 1 FROM alert_rules WHERE enabled) OR EXISTS (SELECT 1 FROM alerts WHERE state <> 'closed'))
	  AND (EXISTS (SELECT 1 FROM alert_rules ru WHERE ru.enabled
			AND (ru.job_id = r.job_id OR (ru.job_id IS NULL AND (ru.group_name = r.group_name OR ru.group_name IS NULL)))
			AND (r.status <> 'SUCCEEDED' OR 'succeeded' = ANY (ru.events)))
	   OR (r.status = 'SUCCEEDED' AND EXISTS (SELECT 1 FROM alerts a WHERE a.job_id = r.job_id AND a.state <> 'closed')))
	ORDER BY r.id`
}

// Returning are the columns an UPDATE of job_runs (aliased Run) returns
// for InsertFrom to read from it as a CTE named Run.
const Returning = `RETURNING r.id, r.job_id, r.group_name, r.status, r.attempt, r.run_max_retries, r.message, r.finished_at`

// activeSQL says whether any rule or open alert could take an end: the
// first clause of InsertFrom's condition, asked alone. RecordEnds asks it
// before the insert because the insert, with nothing to write, still cost
// PostgreSQL 34-38 ms a call under load (jetjob-bench --scenario steady,
// no rule at all: 45 % of PostgreSQL's statement time at 5,000 runs/s,
// its CPU per run doubled, and 10,000 runs/s no longer held), while this
// question costs a few hundredths of a millisecond. The answer is read in the same transaction, a
// statement before the insert would read it: a rule enabled between the
// two is one enabled a moment later, as for any end recorded just before it.
const activeSQL = `SELECT EXISTS (SELECT 1 FROM alert_rules WHERE enabled) OR EXISTS (SELECT 1 FROM alerts WHERE state <> 'closed')`

// End is a run's end as the transaction that records it has it (the
// results applier: runs.Moved), for RecordEnds.
type End struct {
	RunID, JobID int64
	Group        string
	Status       string
	Attempt      int
	// Final: no retry follows (meaningful for FAILED, TIMED_OUT, LOST).
	Final   bool
	Message string
	// At is when the run ended; zero: the transaction's time (now()).
	At time.Time
}

var recordEndsSQL = insertFrom(`unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bool[], $7::text[], $8::timestamptz[])
		AS r(id, job_id, group_name, status, attempt, final, message, finished_at)`, `r.final`)

// RecordEnds writes to the outbox, in tx (the transaction that records
// them), the ends a rule may follow from (InsertFrom's condition), from
// what the caller has of them (the results applier, the planner's SKIPPED
// fires) instead of reading their rows again: the insert that joined the
// given ids with job_runs cost PostgreSQL 35-43 ms a call under load where
// any rule existed (jetjob-bench --scenario steady --jobs 5000 with one
// rule: a third of its statement time). ends is called only when some rule
// or open alert could take an end, so that a caller pays for gathering
// them only then.
func RecordEnds(ctx context.Context, tx pgx.Tx, ends func() []End) error {
	active, err := anyRule(ctx, tx)
	if err != nil {
		return fmt.Errorf("record run ends for alerts: %w", err)
	}
	if !active {
		return nil
	}
	es := ends()
	n := len(es)
	if n == 0 {
		return nil
	}
	ids, jobs, attempts := make([]int64, n), make([]int64, n), make([]int32, n)
	groups, statuses, msgs := make([]string, n), make([]string, n), make([]string, n)
	finals, ats := make([]bool, n), make([]*time.Time, n)
	for i, e := range es {
		ids[i], jobs[i], groups[i], statuses[i] = e.RunID, e.JobID, e.Group, e.Status
		attempts[i], finals[i], msgs[i] = int32(e.Attempt), e.Final, e.Message
		if !e.At.IsZero() {
			ats[i] = &es[i].At
		}
	}
	if _, err := tx.Exec(ctx, recordEndsSQL, ids, jobs, groups, statuses, attempts, finals, msgs, ats); err != nil {
		return fmt.Errorf("record %d run ends for alerts: %w", n, err)
	}
	return nil
}

// anyRule asks activeSQL.
func anyRule(ctx context.Context, tx pgx.Tx) (bool, error) {
	var active bool
	if err := tx.QueryRow(ctx, activeSQL).Scan(&active); err != nil {
		return false, fmt.Errorf("any rule or open alert: %w", err)
	}
	return active, nil
}
