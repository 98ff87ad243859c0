package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
)

// A group's flow state (issue #33, docs/flow-control.md): paused and
// draining start no new run of the group's jobs; draining reports drained
// once none of its runs is in flight.

// FlowState is a group's flow state as stored.
type FlowState string

const (
	FlowActive   FlowState = "active"
	FlowPaused   FlowState = "paused"
	FlowDraining FlowState = "draining"
)

// ErrGroupPaused refuses a manual trigger of a job whose group is paused
// or draining (the API answers 409; force overrides it).
var ErrGroupPaused = errors.New("group is paused")

// ParseFlowState reads a flow state ("" is not one).
func ParseFlowState(v string) (FlowState, error) {
	switch FlowState(v) {
	case FlowActive, FlowPaused, FlowDraining:
		return FlowState(v), nil
	}
	return "", fmt.Errorf("flow state %q: want active, paused or draining", v)
}

// Flow is a group's flow state with who set it, when and why.
type Flow struct {
	State FlowState
	Note  string
	By    string
	At    *time.Time
	// InFlight counts the group's runs that may be running: RUNNING,
	// TRIGGERED, or SCHEDULED and due (published, its TRIGGERED write
	// deferred), but for the runs that wait for the resume, which are
	// not published (runs.WaitingSQL, package runs' held.go). Read only
	// while the group is not active.
	InFlight int
}

// Drained reports a draining group with no run in flight.
func (f Flow) Drained() bool { return f.State == FlowDraining && f.InFlight == 0 }

// flowAudit is a group's flow state as the audit log keeps it.
type flowAudit struct {
	Name  string    `json:"name"`
	State FlowState `json:"flow_state"`
	Note  string    `json:"note,omitempty"`
}

// inFlightSQL is true for a run r of group g (job_groups) that may be
// running: RUNNING, TRIGGERED, or SCHEDULED and due (perhaps published,
// its TRIGGERED write deferred) unless it waits for the group's resume
// (runs.WaitingSQL). What a drain waits for and the queue view lists.
const inFlightSQL = `(r.status IN ('TRIGGERED', 'RUNNING')
	OR r.status = 'SCHEDULED' AND r.scheduled_at <= now() AND NOT ` + runs.WaitingSQL + `)`

// flowColumns are read with a group (g: job_groups). The in-flight count
// costs a look-up only for a group that is not active.
const flowColumns = `g.flow_state, g.flow_note, g.flow_by, g.flow_at,
	CASE WHEN g.flow_state = 'active' THEN 0 ELSE (SELECT count(*) FROM job_runs r
		WHERE r.group_name = g.name AND ` + inFlightSQL + `) END`

// GroupsChannel is the PostgreSQL NOTIFY channel on which a group's flow
// change is announced (its name as the payload), in the transaction that
// makes it: every scheduler reads the groups that are not active again
// (runs.LoadPaused), so that dispatch holds back the runs that wait for
// a resume and publishes them again after it.
const GroupsChannel = "jetjob_groups"

// GetGroup returns a group with its flow state.
func (s *Store) GetGroup(ctx context.Context, name string) (Group, error) {
	gs, err := s.ListGroups(ctx, []string{name})
	if err != nil {
		return Group{}, err
	}
	if len(gs) == 0 {
		return Group{}, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	return gs[0], nil
}

// SetGroupFlow moves a group to state with a note, recorded as
// group.pause, group.drain or group.resume by a; asking for the state the
// group is in changes nothing and records nothing.
//
// Leaving active, every enabled job of the group loses its planned, not
// yet due runs and has its next fire rewound to the first of them, as a
// disabled job does (suspendPlanned), while the planner leaves the
// group's jobs out. Back to active, the planner finds them behind and
// plans the fires they missed by each job's misfire policy, as for a job
// enabled again; the pause is kept (last_pause_*) so that the runs it
// skips can name it. Runs already due when the group stops are left to go
// ahead: one may be out already (runs.DeletePlanned).
func (s *Store) SetGroupFlow(ctx context.Context, a Actor, name string, state FlowState, note string) (Group, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var cur FlowState
		var curNote string
		err := tx.QueryRow(ctx, `SELECT flow_state, flow_note FROM job_groups WHERE name = $1 FOR UPDATE`, name).Scan(&cur, &curNote)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("group %q: %w", name, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if cur == state {
			return nil
		}
		if cur == FlowActive {
			if err := suspendGroupJobs(ctx, tx, name); err != nil {
				return err
			}
		}
		if state == FlowActive {
			_, err = tx.Exec(ctx, `UPDATE job_groups SET flow_state = 'active',
				last_pause_from = flow_at, last_pause_until = now(), last_pause_note = flow_note,
				flow_note = $2, flow_by = $3, flow_at = now() WHERE name = $1`, name, note, a.Name)
		} else {
			// From paused to draining (or back) the pause goes on: it
			// began when the group left active.
			_, err = tx.Exec(ctx, `UPDATE job_groups SET flow_state = $2, flow_note = $3, flow_by = $4,
				flow_at = CASE WHEN flow_state = 'active' THEN now() ELSE flow_at END WHERE name = $1`,
				name, state, note, a.Name)
		}
		if err != nil {
			return fmt.Errorf("set flow state: %w", err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, GroupsChannel, name); err != nil {
			return fmt.Errorf("announce the flow change: %w", err)
		}
		action := map[FlowState]string{FlowActive: "group.resume", FlowPaused: "group.pause", FlowDraining: "group.drain"}[state]
		return writeAudit(ctx, tx, a, action, groupTarget(name), name,
			flowAudit{Name: name, State: cur, Note: curNote}, flowAudit{Name: name, State: state, Note: note})
	})
	if err != nil {
		return Group{}, fmt.Errorf("set group %q %s: %w", name, state, err)
	}
	return s.GetGroup(ctx, name)
}

// suspendGroupJobs suspends the planned runs of every enabled job of the
// group, each under its row lock as SetEnabledWith takes it: a planning
// transaction holding one finishes first, and its runs are deleted here.
func suspendGroupJobs(ctx context.Context, tx pgx.Tx, group string) error {
	rows, _ := tx.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE group_name = $1 AND enabled
		ORDER BY id FOR UPDATE`, group)
	js, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
	if err != nil {
		return fmt.Errorf("lock the jobs of group %q: %w", group, err)
	}
	for i := range js {
		next, err := suspendPlanned(ctx, tx, &js[i], true)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE jobs SET next_fire_at = $2 WHERE id = $1`, js[i].ID, next); err != nil {
			return fmt.Errorf("rewind job %d: %w", js[i].ID, err)
		}
	}
	return nil
}
