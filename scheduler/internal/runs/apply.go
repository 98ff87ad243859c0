package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Update is the effect of a batch's events on one run, coalesced by the
// results applier: the highest status they reached and what came with it.
type Update struct {
	RunID int64
	// Group is the group whose event subject the events came on: an
	// update applies only to a run of that group.
	Group string
	// ScheduledAt is the run's partition key (see LookupScheduled when the
	// events did not carry it).
	ScheduledAt time.Time
	Status      wire.Status
	StartedAt   *time.Time // nil: no started event
	FinishedAt  *time.Time // set with a terminal Status
	Message     string
	WorkerID    string // "": keep the run's
	// StreamSeq and TriggeredAt place the run's trigger in
	// JETJOB_TRIGGERS (0 and nil when no event said).
	StreamSeq   uint64
	TriggeredAt *time.Time
	// Output is the JSON the handler set (finished events; nil: none),
	// checked as JSON of at most wire.MaxOutputBytes by the decoder.
	Output *string
	// Map is the items the handler mapped (a finished SUCCEEDED event's
	// wire.Event.Map, one JSON text per item; nil: none), and Reduce
	// whether the fire asked for a reduce run (mapreduce.go).
	Map    []string
	Reduce bool
}

// Moved is a run whose status ApplyEvents moved, as it is after the move.
type Moved struct {
	RunID  int64
	JobID  int64
	Group  string
	Status wire.Status
	// StartedAt and FinishedAt are zero while unknown.
	StartedAt, ScheduledAt, FinishedAt time.Time
	// WorkflowRun is the workflow run of a node run, 0 for other runs.
	WorkflowRun int64
	// Attempt is the run's attempt; Final, for an end that may be retried
	// (FAILED, TIMED_OUT, LOST), that no retry follows. The alert outbox
	// is written from them and the updates' messages (alerts.RecordEnds)
	// without reading the rows again.
	Attempt int
	Final   bool
}

// applySQL applies a batch of updates in one statement, and in the same
// transaction does what follows a run's end:
//
//   - applied: runs whose status moves up in rank; the condition is
//     re-checked on the locked row, so a run changes status at most once
//     per status, whoever applies the event and however often. started_at,
//     finished_at and the message are filled once, and so are the
//     trigger's stream sequence and time when dispatch has not recorded
//     them yet (the deferred TRIGGERED write, see the package doc). Who
//     is told of a failure is the alert engine's concern: the caller
//     writes the ends to the alert outbox in this transaction
//     (alerts.RecordEnds).
//   - retried: a failed run with attempts left gets a new run (trigger type
//     retry, attempt + 1, retry_of), scheduled after its backoff.
//   - parents: a run that succeeded and whose job has enabled children is
//     returned with their number, for spawnChildren (below), which
//     triggers them within the cap on the runs one fire may cause. A part
//     of a fixed shard count is returned with its fire (shard_fire):
//     spawnChildren triggers the fire's children once all its parts
//     succeeded (firesDone).
//   - mapped: a part of a map/reduce fire (map_item set) that succeeded,
//     returned like a parent without children: the part completing the
//     set writes the fire's reduce run, or triggers the job's children
//     when the fire asked for no reduce (firesDone). A part's retry keeps
//     its item, and a reduce run's retry the fire it reduces
//     (map_reduce).
//   - chained: a fix_delay job's next fire, the delay after its run ended.
//   - a node run of a workflow (workflow_run set) carries its node key
//     into its retries; one that ends with no retry to follow is returned
//     as a NodeEnd (the applied row's workflow run, and no retried row
//     naming it), for the workflow engine to advance its run in the same
//     transaction.
//
// parents and chained state the predicates of the partial indexes
// jobs_parents and jobs_fix_delay (migration 0011): few jobs have children
// or a fixed delay, and probing those indexes per run is far cheaper than
// reading every run's job.
//
// Runs are matched by (id, scheduled_at), so that each row is found in its
// one partition of job_runs (run-time pruning in the nested loop over u),
// and by group: an event counts only for a run of the group whose subject
// (jetjob.event.<group>) it came on, so a worker of one group, broken or
// hostile, cannot end another group's runs.
//
// The new runs are keyed like every run (job, scheduled_at, shard index,
// attempt) and derive from the run's finished_at, so applying the same
// event again can never create them twice. A retry keeps its run's own
// priority (a manual trigger's), as it keeps its params.
const applySQL = `WITH u AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::text[], $6::text[],
				$7::timestamptz[], $8::bigint[], $9::timestamptz[], $10::text[], $11::text[])
			AS u(id, status, started_at, finished_at, message, worker_id, scheduled_at, stream_seq, triggered_at, group_name, output)),
	applied AS (UPDATE job_runs r SET
		status = u.status,
		started_at = COALESCE(r.started_at, u.started_at),
		stream_seq = COALESCE(r.stream_seq, u.stream_seq),
		triggered_at = COALESCE(r.triggered_at, u.triggered_at),
		finished_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN u.finished_at ELSE r.finished_at END,
		message = CASE WHEN jetjob_status_rank(u.status) = 3 THEN u.message ELSE r.message END,
		recorded_at = CASE WHEN jetjob_status_rank(u.status) = 3 THEN now() ELSE r.recorded_at END,
		worker_id = CASE WHEN u.worker_id <> '' THEN u.worker_id ELSE r.worker_id END,
		output = COALESCE(u.output, r.output)
	FROM u
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.group_name = u.group_name
	  AND jetjob_status_rank(u.status) > jetjob_status_rank(r.status)
	RETURNING r.id, r.job_id, r.group_name, r.shard, r.status, r.finished_at, r.trigger_type, r.attempt,
		r.shard_index, r.shard_total, r.params, r.started_at, r.scheduled_at, r.chain_root,
		r.workflow_run, r.node, r.node_attempt, r.item, r.run_timeout_ms, r.run_max_retries, r.priority,
		CASE WHEN r.workflow_run IS NOT NULL THEN r.output END AS node_output, r.shard_fire, r.map_item, r.map_reduce),
	retried AS (INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			attempt, retry_of, shard_index, shard_total, params, chain_root, workflow_run, node, node_attempt, item,
			run_timeout_ms, run_max_retries, priority, shard_fire, map_item, map_reduce)
		SELECT a.job_id, a.group_name, a.shard, 'retry', 'SCHEDULED',
			a.finished_at + make_interval(secs => (CASE WHEN j.retry_backoff = 'fixed'
				THEN j.retry_initial_ms::float8
				ELSE least(j.retry_max_ms::float8, j.retry_initial_ms * power(2::float8, a.attempt)) * (1 + 0.2 * random())
			END) / 1000),
			a.attempt + 1, a.id, a.shard_index, a.shard_total, a.params, COALESCE(a.chain_root, a.id),
			a.workflow_run, a.node, a.node_attempt, a.item, a.run_timeout_ms, a.run_max_retries, a.priority, a.shard_fire,
			a.map_item, a.map_reduce
		FROM applied a JOIN jobs j ON j.id = a.job_id
		WHERE a.status IN ('FAILED', 'TIMED_OUT', 'LOST') AND a.attempt < COALESCE(a.run_max_retries, j.max_retries)
		ON CONFLICT DO NOTHING
		RETURNING id, retry_of),
	parents AS (SELECT a.id, a.job_id, a.scheduled_at, a.finished_at, COALESCE(a.chain_root, a.id) AS root,
			count(*)::int AS children, a.shard_fire
		FROM applied a JOIN jobs p ON p.id = a.job_id AND p.child_job_ids <> '{}'
			JOIN jobs c ON c.id = ANY (p.child_job_ids) AND c.enabled
		WHERE a.status = 'SUCCEEDED'
		GROUP BY a.id, a.job_id, a.scheduled_at, a.finished_at, a.chain_root, a.shard_fire),
	mapped AS (SELECT a.id, a.job_id, a.scheduled_at, a.finished_at, COALESCE(a.chain_root, a.id) AS root, a.shard_fire
		FROM applied a WHERE a.status = 'SUCCEEDED' AND a.map_item IS NOT NULL),
	chained AS (UPDATE jobs j SET next_fire_at = a.finished_at + j.delay_ms * interval '1 millisecond'
		FROM applied a
		WHERE j.id = a.job_id AND j.schedule_type = 'fix_delay' AND j.enabled AND j.next_fire_at IS NULL
		  AND jetjob_status_rank(a.status) = 3 AND a.trigger_type IN ('schedule', 'misfire'))
	SELECT id, job_id, status, 0, group_name, started_at, scheduled_at, finished_at, COALESCE(shard_fire, 0), attempt, COALESCE(workflow_run, 0),
		COALESCE(node, ''), COALESCE(node_attempt, 0), COALESCE(item, 0), node_output FROM applied
	UNION ALL SELECT id, 0, 'SCHEDULED', 1, '', NULL, NULL, NULL, 0, 0, retry_of, '', 0, 0, NULL FROM retried
	UNION ALL SELECT id, job_id, 'SUCCEEDED', 2, '', NULL, scheduled_at, finished_at, root, children, COALESCE(shard_fire, 0),
		'', 0, 0, NULL FROM parents
	UNION ALL SELECT id, job_id, 'SUCCEEDED', 3, '', NULL, scheduled_at, finished_at, root, 0, shard_fire,
		'', 0, 0, NULL FROM mapped`

// Row kinds of applySQL's result.
const (
	rowApplied = 0 // a run whose status the batch moved; its root column is its shard_fire, its children column its attempt
	rowSpawned = 1 // a run the batch created (a retry)
	rowParent  = 2 // a run that succeeded and has children to trigger; its workflow_run column is its shard_fire
	rowMapPart = 3 // a part of a map/reduce fire that succeeded, as rowParent with no children
)

// Applied is what ApplyEvents did.
type Applied struct {
	// Moved are the runs whose status it moved, as they are after.
	Moved []Moved
	// Spawned are the ids of the runs it created (retries, child runs),
	// SCHEDULED for later.
	Spawned []int64
	// Capped are the runs that succeeded but triggered none of their
	// children: their fire's chain would have passed the cap.
	Capped []Capped
	// NodeEnds are the node runs of workflows it ended for good (no
	// retry follows), in run id order, with their node keys and outputs.
	NodeEnds []NodeEnd
}

// Capped is a run whose children were not triggered, and why (the note
// its message now ends with).
type Capped struct {
	RunID, JobID, Root int64
	Note               string
}

// ApplyEvents applies ups in one statement in tx (see applySQL), then
// triggers the children of the runs that succeeded (spawnChildren), at most
// maxChainRuns runs per root fire (0: refs.DefaultMaxRuns). An update whose
// run is already at or past its status, or is not a run of its group,
// changes nothing and is not in Applied.Moved. The caller orders ups by
// run id: concurrent appliers and dispatch's marks then lock rows in the
// same order and do not deadlock.
func ApplyEvents(ctx context.Context, tx pgx.Tx, ups []Update, maxChainRuns int) (Applied, error) {
	n := len(ups)
	var (
		ids                 = make([]int64, n)
		statuses, msgs, wks = make([]string, n), make([]string, n), make([]string, n)
		starts, ends        = make([]*time.Time, n), make([]*time.Time, n)
		scheds              = make([]time.Time, n)
		seqs                = make([]*int64, n)
		triggered           = make([]*time.Time, n)
		groups              = make([]string, n)
		outputs             = make([]*string, n)
		// maps are the updates that carry a map's items, by run and
		// group (an update of another group's subject moves nothing).
		maps map[runGroup]*Update
	)
	for i := range ups {
		u := &ups[i]
		ids[i], statuses[i], msgs[i], wks[i] = u.RunID, string(u.Status), u.Message, u.WorkerID
		starts[i], ends[i], scheds[i], groups[i] = u.StartedAt, u.FinishedAt, u.ScheduledAt, u.Group
		if u.StreamSeq != 0 {
			v := int64(u.StreamSeq)
			seqs[i] = &v
		}
		triggered[i], outputs[i] = u.TriggeredAt, u.Output
		if u.Map != nil {
			if maps == nil {
				maps = map[runGroup]*Update{}
			}
			maps[runGroup{u.RunID, u.Group}] = u
		}
	}
	var (
		m    Moved
		kind int
		// The run's times after the change; NULL for spawned rows.
		started, sched, finished *time.Time
		root, wr                 int64
		children                 int
		// A node run's key and output (workflow node runs only).
		node              string
		nodeAttempt, item int
		output            *string
		out               Applied
		parents           []parent
		// Workflow node runs that ended, and the runs retried (by the
		// run they retry): an ended node run that was retried is not
		// its node's end.
		nodeEnds []NodeEnd
		retried  map[int64]bool
		// fireOf names the fire of the node runs that are parts of a
		// fixed shard count (nodeFireEnds).
		fireOf map[int64]int64
		// mapParts are the parts of map/reduce fires that succeeded.
		mapParts []parent
	)
	out.Moved = make([]Moved, 0, n) // usually every update moves its run
	rows, _ := tx.Query(ctx, applySQL, ids, statuses, starts, ends, msgs, wks, scheds, seqs, triggered, groups, outputs)
	_, err := pgx.ForEachRow(rows, []any{&m.RunID, &m.JobID, &m.Status, &kind, &m.Group, &started, &sched, &finished, &root, &children, &wr,
		&node, &nodeAttempt, &item, &output}, func() error {
		switch kind {
		case rowSpawned:
			out.Spawned = append(out.Spawned, m.RunID)
			if wr != 0 {
				if retried == nil {
					retried = map[int64]bool{}
				}
				retried[wr] = true
			}
		case rowParent:
			parents = append(parents, parent{Spawn: refs.Spawn{Run: m.RunID, Root: root, Children: children},
				jobID: m.JobID, scheduledAt: deref(sched), finishedAt: deref(finished), fire: wr})
		case rowMapPart:
			mapParts = append(mapParts, parent{Spawn: refs.Spawn{Run: m.RunID, Root: root},
				jobID: m.JobID, scheduledAt: deref(sched), finishedAt: deref(finished), fire: wr})
		default:
			m.StartedAt, m.ScheduledAt, m.FinishedAt, m.WorkflowRun = deref(started), deref(sched), deref(finished), wr
			m.Attempt = children
			out.Moved = append(out.Moved, m)
			if wr != 0 && m.Status.Terminal() {
				e := NodeEnd{RunID: m.RunID, ScheduledAt: m.ScheduledAt, Status: m.Status, WorkflowRun: wr,
					Node: node, NodeAttempt: nodeAttempt, Item: item}
				if output != nil {
					e.Output = []byte(*output)
				}
				nodeEnds = append(nodeEnds, e)
				if root != 0 {
					if fireOf == nil {
						fireOf = map[int64]int64{}
					}
					fireOf[m.RunID] = root
				}
			}
		}
		return nil
	})
	if err != nil {
		return Applied{}, fmt.Errorf("apply updates to %d runs: %w", n, err)
	}
	markFinal(out.Moved, retried)
	if maps != nil {
		// Only runs that carry a map: the plain run pays nothing here.
		var parts []int64
		if parents, parts, err = mapFires(ctx, tx, out.Moved, maps, parents); err != nil {
			return Applied{}, err
		}
		out.Spawned = append(out.Spawned, parts...)
	}
	parents = withMapParts(parents, mapParts)
	if len(parents) > 0 {
		spawned, capped, err := spawnChildren(ctx, tx, parents, refs.MaxRunsOr(maxChainRuns))
		if err != nil {
			return Applied{}, err
		}
		out.Spawned, out.Capped = append(out.Spawned, spawned...), capped
	}
	for _, e := range nodeEnds {
		if !retried[e.RunID] {
			out.NodeEnds = append(out.NodeEnds, e)
		}
	}
	if len(fireOf) > 0 {
		if out.NodeEnds, err = nodeFireEnds(ctx, tx, out.NodeEnds, fireOf); err != nil {
			return Applied{}, err
		}
	}
	slices.SortFunc(out.NodeEnds, func(a, b NodeEnd) int { return cmp.Compare(a.RunID, b.RunID) })
	return out, nil
}

// markFinal marks the moved runs whose end a retry may follow (FAILED,
// TIMED_OUT, LOST) and none does: retried holds the runs the batch retried.
func markFinal(moved []Moved, retried map[int64]bool) {
	for i := range moved {
		switch m := &moved[i]; m.Status {
		case wire.StatusFailed, wire.StatusTimedOut, wire.StatusLost:
			m.Final = !retried[m.RunID]
		}
	}
}

// fillStartedSQL records start times that applySQL could not: a started
// event arriving after its run's finished one, or applied by another
// scheduler concurrently (applySQL then finds the run's status already as
// high and skips the row). A statement of its own, so it sees what the
// concurrent transaction committed.
const fillStartedSQL = `UPDATE job_runs r SET started_at = u.started_at
	FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS u(id, started_at, scheduled_at)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at AND r.started_at IS NULL`

// FillStarted sets the start time of runs that have none yet: ids[i]
// started at startedAt[i] and is partitioned by scheduledAt[i].
func FillStarted(ctx context.Context, tx pgx.Tx, ids []int64, startedAt, scheduledAt []time.Time) error {
	if _, err := tx.Exec(ctx, fillStartedSQL, ids, startedAt, scheduledAt); err != nil {
		return fmt.Errorf("fill start times of %d runs: %w", len(ids), err)
	}
	return nil
}

// LookupScheduled returns the partition keys of runs whose events did not
// carry them (workers older than wire.Event.ScheduledAt). It probes every
// partition's primary key, so it is only the fallback. A run missing from
// the result does not exist.
func LookupScheduled(ctx context.Context, tx pgx.Tx, ids []int64) (map[int64]time.Time, error) {
	var (
		id int64
		at time.Time
	)
	found := make(map[int64]time.Time, len(ids))
	rows, _ := tx.Query(ctx, `SELECT id, scheduled_at FROM job_runs WHERE id = ANY($1::bigint[])`, ids)
	if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error { found[id] = at; return nil }); err != nil {
		return nil, fmt.Errorf("look up scheduled times of %d runs: %w", len(ids), err)
	}
	return found, nil
}

// statusesSQL reads the status of given runs of given groups. A statement
// of its own, run only when some update did not apply (a duplicate, a late
// or a foreign event): the usual batch, where every update applies, pays
// nothing. (An anti-join against applySQL's updated rows inside that
// statement was planned as a nested loop over the whole batch: quadratic
// in its size, and it tipped the benchmark at 7,000 runs/s over.)
const statusesSQL = `SELECT COALESCE(r.status, '')
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) WITH ORDINALITY AS q(id, scheduled_at, group_name, i)
	LEFT JOIN job_runs r ON r.id = q.id AND r.scheduled_at = q.scheduled_at AND r.group_name = q.group_name
	ORDER BY q.i`

// Statuses returns, in order, the status of run ids[i] (partitioned by
// scheduledAt[i]) if it is a run of groups[i], else "": what the results
// applier reports for updates that changed nothing.
func Statuses(ctx context.Context, tx pgx.Tx, ids []int64, scheduledAt []time.Time, groups []string) ([]wire.Status, error) {
	rows, _ := tx.Query(ctx, statusesSQL, ids, scheduledAt, groups)
	sts, err := pgx.CollectRows(rows, pgx.RowTo[wire.Status])
	if err != nil {
		return nil, fmt.Errorf("read the status of %d runs: %w", len(ids), err)
	}
	return sts, nil
}

// deref is *t, or the zero time for NULL.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
