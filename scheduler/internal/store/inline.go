package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/scheduler/internal/wfengine"
	"github.com/jetjob/jetjob/shared/wire"
)

// The job of an inline node (docs/workflows.md, "Inline jobs") is a row of
// jobs of kind node, owned by its workflow (owner_workflow, owner_node):
// the node's runs are then ordinary node runs of an ordinary job row, so
// everything a run of a referenced job has — logs, kill, retries, alarms,
// block strategies across the group, the exactly-once keys — holds with no
// machinery of its own. The row is written with the workflow's definition
// (writeInlineJobs), never planned (schedule none), left out of job lists
// (SearchJobs lists kind job), never named by a reference (refs.Target.
// Inline), and refused by the job endpoints' writes and triggers
// (notInline). Deleting the workflow deletes it (ON DELETE CASCADE).

// notInline refuses a write or trigger of j through the job endpoints when
// j is an inline node's job: it is its workflow's to change.
func notInline(j Job) error {
	if j.kind() != KindNode {
		return nil
	}
	return fmt.Errorf("job %d is the inline job of node %q of workflow %d: change it by editing the workflow (/api/v1/workflows/%d): %w",
		j.ID, j.OwnerNode, j.OwnerWorkflow, j.OwnerWorkflow, ErrInvalid)
}

// inlineName is the name of the row of node of workflow w: unique in any
// group, since a workflow's group and name are, and a node's name is
// within its workflow.
func inlineName(w *Workflow, node string) string { return w.Group + "/" + w.Name + "/" + node }

// inlineRow is the jobs row inline node n of w runs on.
func inlineRow(w *Workflow, n *wfengine.NodeSpec) Job {
	in := n.Inline
	j := Job{Group: in.Group, Name: inlineName(w, n.Name), Description: in.Description, Handler: in.Handler,
		Params: in.Params, ScheduleType: "none", Timezone: "UTC", MisfirePolicy: in.MisfirePolicy,
		RouteStrategy: in.RouteStrategy, BlockStrategy: in.BlockStrategy, MaxConcurrency: in.MaxConcurrency, Shards: in.Shards,
		Timeout: msDuration(in.TimeoutMS), MaxRetries: in.MaxRetries, RetryBackoff: in.RetryBackoff,
		RetryInitial: msDuration(in.RetryInitialMS), RetryMax: msDuration(in.RetryMaxMS),
		AlarmWebhook: in.AlarmWebhook, AlarmEmails: in.AlarmEmails, Enabled: true,
		Kind: KindNode, OwnerWorkflow: w.ID, OwnerNode: n.Name,
		Flow: JobFlow{Priority: in.Priority, ConcurrencyKey: in.ConcurrencyKey, KeyCap: in.KeyCap}}
	// Checked when the workflow was written (the API's jobFromSpec).
	j.Flow.Rate, _ = wire.ParseRate(in.RateLimit)
	j.Flow.KeyRate, _ = wire.ParseRate(in.KeyRateLimit)
	if j.Group == "" {
		j.Group = w.Group
	}
	return j
}

// InlineOf is the spec of inline job row j (a job's fields as an inline
// node stores them): how the API checks and completes an inline spec with
// a job's rules and defaults, then stores what it got.
func InlineOf(j Job) wfengine.InlineJob {
	return wfengine.InlineJob{Group: j.Group, Handler: j.Handler, Description: j.Description, Params: j.Params,
		MisfirePolicy: j.MisfirePolicy, RouteStrategy: j.RouteStrategy, BlockStrategy: j.BlockStrategy,
		MaxConcurrency: j.MaxConcurrency, Shards: j.Shards, TimeoutMS: j.Timeout.Milliseconds(), MaxRetries: j.MaxRetries,
		RetryBackoff: j.RetryBackoff, RetryInitialMS: j.RetryInitial.Milliseconds(), RetryMaxMS: j.RetryMax.Milliseconds(),
		AlarmWebhook: j.AlarmWebhook, AlarmEmails: j.AlarmEmails,
		Priority: j.Flow.Priority, ConcurrencyKey: j.Flow.ConcurrencyKey, KeyCap: j.Flow.KeyCap,
		RateLimit: j.Flow.Rate.String(), KeyRateLimit: j.Flow.KeyRate.String()}
}

// writeInlineJobs makes the rows of w's inline nodes match their specs, in
// tx, once w's own row is written (w.ID set), and sets each inline node's
// JobID: a row is created for a new inline node, re-written when its spec
// (or the workflow's name or group it derives from) changed, and deleted
// when its node is gone or names a job instead. A run already started
// keeps its graph, whose inline node runs on the row as it is now — as a
// referenced job's edit reaches it too; a row deleted fails that node's
// next start ("its job was deleted").
//
// Writing an inline job hands on what naming a job does (package refs):
// whoever may trigger the workflow causes its runs. So each row created
// or changed must be a job a may trigger (refs.Check over the row, the
// check a reference passes); when the workflow moved from prevGroup to
// another group, every row is checked.
func (s *Store) writeInlineJobs(ctx context.Context, tx pgx.Tx, a Actor, w *Workflow, prevGroup string) error {
	rows, _ := tx.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE owner_workflow = $1 ORDER BY id FOR UPDATE`, w.ID)
	cur, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
	if err != nil {
		return fmt.Errorf("read the inline jobs of workflow %d: %w", w.ID, err)
	}
	byNode := make(map[string]Job, len(cur))
	for _, j := range cur {
		byNode[j.OwnerNode] = j
	}
	moved := prevGroup != "" && prevGroup != w.Group
	var check []int64
	nodeOf := map[int64]*wfengine.NodeSpec{}
	for i := range w.Spec.Nodes {
		n := &w.Spec.Nodes[i]
		if n.Inline == nil {
			continue
		}
		want := inlineRow(w, n)
		have, ok := byNode[n.Name]
		delete(byNode, n.Name)
		var j Job
		switch {
		case !ok:
			j, err = s.insertJobRow(ctx, tx, &want)
		case sameRow(&have, &want):
			j = have
		default:
			want.ID, want.Version = have.ID, have.Version
			j, err = updateJobRow(ctx, tx, &want)
		}
		if err != nil {
			return fmt.Errorf("node %q: inline job: %w", n.Name, err)
		}
		n.JobID = j.ID
		nodeOf[j.ID] = n
		if !ok || j.Version != have.Version || moved {
			check = append(check, j.ID)
		}
	}
	for _, j := range byNode {
		if _, err := tx.Exec(ctx, `DELETE FROM jobs WHERE id = $1`, j.ID); err != nil {
			return fmt.Errorf("delete the inline job of node %q: %w", j.OwnerNode, err)
		}
	}
	if len(check) == 0 {
		return nil
	}
	targets, err := refTargets(ctx, tx, check)
	if err != nil {
		return err
	}
	var unknown *refs.UnknownError
	if err := refs.Check(a.Refs, "nodes", check, targets); errors.As(err, &unknown) {
		var errs []error
		for _, id := range unknown.IDs {
			n := nodeOf[id]
			errs = append(errs, fmt.Errorf("node %q: inline job with handler %q in group %q: %w", n.Name, n.Inline.Handler,
				inlineRow(w, n).Group, refs.ErrInlineRefused))
		}
		return errors.Join(errs...)
	} else if err != nil {
		return err
	}
	return nil
}

// sameRow reports whether row have already holds what want writes.
func sameRow(have, want *Job) bool {
	var none *time.Time
	return have.Group == want.Group && have.Name == want.Name &&
		reflect.DeepEqual(have.writeArgs(none, 0), want.writeArgs(none, 0))
}
