package alerts

import (
	"context"
	"fmt"
	"time"
)

// The SLA events are not ends of runs: nothing records them as they
// happen, so the engine sweeps for them every round. A run that has not
// started sla after its scheduled time is late_start; one still RUNNING
// sla after it started is running_long (a warning: nothing is killed).
// Each is raised at most once per (rule, run) (alert_sla), into the
// outbox for the one rule whose SLA passed, and from there it is an event
// like the others: counted by the rule's alert, closed by a success.

// Statuses of the outbox rows the sweep writes.
const (
	StatusLateStart   = "LATE_START"
	StatusRunningLong = "RUNNING_LONG"
)

// slaSweepSQL raises $2's event (late_start or running_long) for the runs
// whose SLA passed by $1 (the engine's clock).
const slaSweepSQL = `WITH due AS (
		SELECT ru.id AS rule_id, r.id AS run_id, r.job_id, r.group_name, r.attempt,
			CASE WHEN $2 = 'running_long' THEN r.started_at ELSE r.scheduled_at END + ru.sla_ms * interval '1 millisecond' AS at
		FROM alert_rules ru JOIN job_runs r
			ON ru.job_id = r.job_id OR (ru.job_id IS NULL AND (ru.group_name = r.group_name OR ru.group_name IS NULL))
		WHERE ru.enabled AND ru.sla_ms > 0 AND $2 = ANY (ru.events)
		  AND CASE WHEN $2 = 'running_long'
			THEN r.status = 'RUNNING' AND r.started_at + ru.sla_ms * interval '1 millisecond' <= $1
			ELSE r.status IN ('SCHEDULED', 'TRIGGERED') AND r.scheduled_at + ru.sla_ms * interval '1 millisecond' <= $1 END),
	seen AS (INSERT INTO alert_sla (rule_id, run_id, event) SELECT rule_id, run_id, $2 FROM due
		ON CONFLICT DO NOTHING RETURNING rule_id, run_id)
	INSERT INTO alert_outbox (rule_id, run_id, job_id, group_name, status, attempt, final, message, at)
	SELECT d.rule_id, d.run_id, d.job_id, d.group_name, $3, d.attempt, false, $4, d.at
	FROM due d JOIN seen s ON s.rule_id = d.rule_id AND s.run_id = d.run_id
	ORDER BY d.at, d.run_id`

// slaMemory is how long a raised SLA event is remembered: a run late or
// long for longer is raised again.
const slaMemory = 30 * 24 * time.Hour

// SweepSLA raises the late_start and running_long events whose time has
// come, when an enabled rule asks for either.
func (e *Engine) SweepSLA(ctx context.Context) error {
	var wanted bool
	if err := e.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM alert_rules WHERE enabled AND sla_ms > 0
		AND events && '{late_start,running_long}')`).Scan(&wanted); err != nil || !wanted {
		return err
	}
	now := e.now()
	for _, k := range []struct{ event, status, message string }{
		{"late_start", StatusLateStart, "not started within the rule's SLA of its scheduled time"},
		{"running_long", StatusRunningLong, "still running past the rule's SLA (not killed)"},
	} {
		if _, err := e.pool.Exec(ctx, slaSweepSQL, now, k.event, k.status, k.message); err != nil {
			return fmt.Errorf("sweep %s: %w", k.event, err)
		}
	}
	if _, err := e.pool.Exec(ctx, `DELETE FROM alert_sla WHERE at < $1`, now.Add(-slaMemory)); err != nil {
		return fmt.Errorf("forget old SLA events: %w", err)
	}
	return nil
}
