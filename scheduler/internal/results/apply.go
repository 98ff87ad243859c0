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

	"github.com/jetjob/jetjob/scheduler/internal/alerts"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

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
	// output is the handler's output from the finished event (nil: none).
	output *string
	// mapped and reduce are the items a SUCCEEDED run's handler mapped
	// (nil: none) and whether it asked for a reduce (runs/mapreduce.go).
	mapped []string
	reduce bool
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
				if len(e.Output) > 0 {
					out := strings.ToValidUTF8(string(e.Output), "\uFFFD")
					u.output = &out
				}
				u.mapped, u.reduce = mapItems(e), e.Reduce
			}
		}
	}
	return out
}

// mapItems are the items of a finished event's map, each as storable
// JSON text; nil for an event without one (the decoder checked its
// shape and bounds).
func mapItems(e *sourcedEvent) []string {
	if len(e.Map) == 0 || e.Status != wire.StatusSucceeded {
		return nil
	}
	items, err := wire.MapItems(e.Map)
	if err != nil {
		return nil
	}
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = strings.ToValidUTF8(string(it), "\uFFFD")
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

// batchResult is what applying one batch did.
type batchResult struct {
	changes []Change
	// spawned are the runs it created (retries, child runs).
	spawned []int64
	// fire are the workflow node runs it created, as dispatch takes them.
	fire []runs.Planned
	// ignored are the updates that changed nothing.
	ignored []Ignored
	// capped are the runs whose children the cap kept from running.
	capped []runs.Capped
	// workflowsEnded are the workflow runs it ended.
	workflowsEnded []wfengine.Ended
}

// apply applies events, and triggers the children of the runs that
// succeeded within maxChainRuns runs per root fire.
func apply(ctx context.Context, pool *pgxpool.Pool, events []sourcedEvent, maxChainRuns int) (batchResult, error) {
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
		fire    []runs.Planned
		ignored []Ignored
		capped  []runs.Capped
		wfEnded []wfengine.Ended
	)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		changes, spawned, fire, ignored, capped, wfEnded = changes[:0], spawned[:0], nil, ignored[:0], nil, nil
		keys, err := scheduledTimes(ctx, tx, ups, order)
		if err != nil {
			return err
		}
		batch := make([]runs.Update, 0, len(ups))
		for _, k := range order {
			u := ups[k]
			at, ok := keys[k]
			if !ok {
				// No run has this id: nothing to apply.
				ignored = append(ignored, Ignored{RunID: k.id, Group: k.group, From: u.from})
				continue
			}
			batch = append(batch, runs.Update{RunID: k.id, Group: k.group, ScheduledAt: at, Status: u.status,
				StartedAt: u.startedAt, FinishedAt: u.finishedAt, Message: u.message, WorkerID: u.workerID,
				StreamSeq: u.seq, TriggeredAt: u.triggeredAt, Output: u.output, Map: u.mapped, Reduce: u.reduce})
		}
		done, err := runs.ApplyEvents(ctx, tx, batch, maxChainRuns)
		if err != nil {
			return err
		}
		moved := done.Moved
		spawned, capped = done.Spawned, done.Capped
		// The ends alert rules follow go to their outbox in this
		// transaction: recorded exactly when the ends are.
		if err := alerts.RecordEnds(ctx, tx, moved, batch); err != nil {
			return err
		}
		// Workflow node runs that ended for good advance their workflow
		// runs in this transaction: exactly as durable, and as
		// exactly-once, as the ends they follow from.
		nodes, err := wfengine.Advance(ctx, tx, done.NodeEnds, maxChainRuns)
		if err != nil {
			return err
		}
		fire, wfEnded = nodes.Fire, nodes.Ended
		changes = slices.Grow(changes, len(moved))
		applied := make(map[runKey]bool, len(batch))
		for _, m := range moved {
			k := runKey{m.RunID, m.Group}
			applied[k] = true
			changes = append(changes, Change{RunID: m.RunID, JobID: m.JobID, Status: m.Status,
				Triggered: ups[k] != nil && ups[k].seq != 0,
				Group:     m.Group, StartApplied: ups[k] != nil && ups[k].startedAt != nil, WorkflowRun: m.WorkflowRun,
				StartedAt: m.StartedAt, ScheduledAt: m.ScheduledAt, FinishedAt: m.FinishedAt})
		}
		if ignored, err = ignoredUpdates(ctx, tx, ups, ignored, batch, applied); err != nil {
			return err
		}
		// Runs ApplyEvents moved have their start time already (COALESCE):
		// only the others of a known run need the second statement.
		moves := make(map[int64]bool, len(changes))
		for _, ch := range changes {
			moves[ch.RunID] = true
		}
		unknown := make(map[runKey]bool)
		for _, ig := range ignored {
			if ig.Status == "" {
				unknown[runKey{ig.RunID, ig.Group}] = true
			}
		}
		var sIDs []int64
		var sAts, sScheds []time.Time
		for _, u := range batch {
			if u.StartedAt != nil && !moves[u.RunID] && !unknown[runKey{u.RunID, u.Group}] {
				sIDs, sAts, sScheds = append(sIDs, u.RunID), append(sAts, *u.StartedAt), append(sScheds, u.ScheduledAt)
			}
		}
		if len(sIDs) > 0 {
			return runs.FillStarted(ctx, tx, sIDs, sAts, sScheds)
		}
		return nil
	})
	if err != nil {
		return batchResult{}, fmt.Errorf("apply %d events to %d runs: %w", len(events), len(ups), err)
	}
	return batchResult{changes: changes, spawned: spawned, fire: fire, ignored: ignored, capped: capped, workflowsEnded: wfEnded}, nil
}

// ignoredUpdates appends to ignored the updates of batch that ApplyEvents
// did not apply, each with its run's status (empty: no such run in the
// update's group).
func ignoredUpdates(ctx context.Context, tx pgx.Tx, ups map[runKey]*runUpdate, ignored []Ignored,
	batch []runs.Update, applied map[runKey]bool) ([]Ignored, error) {
	var qIDs []int64
	var qScheds []time.Time
	var qGroups []string
	for _, u := range batch {
		if !applied[runKey{u.RunID, u.Group}] {
			qIDs, qScheds, qGroups = append(qIDs, u.RunID), append(qScheds, u.ScheduledAt), append(qGroups, u.Group)
		}
	}
	if len(qIDs) == 0 {
		return ignored, nil
	}
	sts, err := runs.Statuses(ctx, tx, qIDs, qScheds, qGroups)
	if err != nil {
		return ignored, fmt.Errorf("updates that changed nothing: %w", err)
	}
	for i, st := range sts {
		k := runKey{qIDs[i], qGroups[i]}
		ignored = append(ignored, Ignored{RunID: k.id, Group: k.group, Status: st, From: ups[k].from})
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
	found, err := runs.LookupScheduled(ctx, tx, missing)
	if err != nil {
		return nil, err
	}
	for _, k := range order {
		if at, ok := found[k.id]; ok && ups[k].scheduledAt.IsZero() {
			keys[k] = at
		}
	}
	return keys, nil
}
