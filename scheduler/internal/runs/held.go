package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// Runs that wait for their group's resume (docs/flow-control.md, "Group
// pause, drain and resume"). While a group is paused or draining no new
// run of it starts: the planner plans none and a manual trigger is refused
// unless forced; the runs the system itself writes meanwhile — retries,
// child runs, workflow node runs — are still written (nothing is lost: they
// stay SCHEDULED), but they are not published until the group is active
// again. A run waits when
//
//   - its group is not active,
//   - its trigger type is one the system writes on its own (Waits), and
//   - it falls due after the pause began (job_groups.flow_at, which a
//     move from paused to draining or back keeps).
//
// A node run (or a node's retry) of a workflow run of its own group that
// fell due after the pause began does not wait either: only a forced
// trigger starts such a workflow run, and its nodes go ahead with it
// (Planned.WorkflowAt).
//
// A run due before the pause began is in flight, as every run already due
// at the pause is: it may be out on the wire while it still reads
// SCHEDULED (the deferred TRIGGERED write), so it goes ahead, and a drain
// waits for it. A waiting run is not in flight: a drain reports drained
// while it waits. Manual runs never wait here: the API decided at the
// trigger (refused, or forced), and schedule fires are never written for a
// paused group. Dispatch holds waiting runs back with an in-memory copy of
// the paused groups (Paused), the sweep and recovery leave them out in SQL
// (waitingSQL), and at the resume the shard owners' sweep hands them over.

// Waits reports whether runs of trigger type t wait for their group's
// resume (see above): retries, child runs, workflow node runs and the
// parts and reduce runs of map/reduce fires.
func Waits(t wire.TriggerType) bool {
	switch t {
	case wire.TriggerRetry, wire.TriggerParent, wire.TriggerWorkflow, wire.TriggerMap, wire.TriggerReduce:
		return true
	}
	return false
}

// waitsTypesSQL is Waits as an SQL list.
const waitsTypesSQL = `('retry', 'parent', 'workflow', 'map', 'reduce')`

// WaitingSQL is true for a run r (job_runs) that waits for the resume of
// its group g (job_groups, LEFT JOINed on r.group_name: a run without a
// group row never waits), as Paused.Holds decides it in memory.
const WaitingSQL = `COALESCE(g.flow_state <> 'active' AND r.trigger_type IN ` + waitsTypesSQL + `
		AND r.scheduled_at > g.flow_at AND NOT EXISTS (SELECT 1 FROM workflow_runs w
			WHERE w.id = r.workflow_run AND w.group_name = r.group_name AND w.scheduled_at > g.flow_at), false)`

// Paused is the groups that are not active, each with when its pause
// began: what dispatch holds runs back by. Nil or empty: none.
type Paused map[string]time.Time

// Holds reports whether run r waits for its group's resume. With no group
// paused it is one lookup in an empty map.
func (p Paused) Holds(r *Planned) bool {
	since, ok := p[r.Group]
	return ok && Waits(r.TriggerType) && r.ScheduledAt.After(since) && !r.WorkflowAt.After(since)
}

// LoadPaused reads the groups that are not active.
func LoadPaused(ctx context.Context, db DB) (Paused, error) {
	rows, _ := db.Query(ctx, `SELECT name, flow_at FROM job_groups WHERE flow_state <> 'active' AND flow_at IS NOT NULL`)
	p := Paused{}
	var (
		name string
		at   time.Time
	)
	if _, err := pgx.ForEachRow(rows, []any{&name, &at}, func() error { p[name] = at; return nil }); err != nil {
		return nil, fmt.Errorf("read the paused groups: %w", err)
	}
	return p, nil
}
