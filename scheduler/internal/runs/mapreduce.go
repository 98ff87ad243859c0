package runs

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/shared/wire"
)

// Map/reduce (docs/flow-control.md, "Map/reduce"). A run whose handler
// maps (worker Job.Map) ends with its items in its finished event. In the
// transaction recording its success, ApplyEvents makes it the root of a
// fire (mapFires): shard_fire = its own id, shard_total left 0, and
// map_reduce = its id if it asked for a reduce; and writes one part per
// item, part i of n (shard_fire = the root, map_item = the item, trigger
// type map), to the group's shared queue like a fixed shard count's. The
// parts are keyed like every run, (job, the root's finished_at, i,
// attempt 0): the root moves to SUCCEEDED once, so a redelivered event or
// a second scheduler finds it moved and writes nothing, and the key holds
// the rest. The root's children wait for the fire.
//
// A part is a run like any other: retried alone (keeping its item, index,
// total and fire), LOST with its worker, alarmed on. The part completing
// the set is judged by firesDone, under its chain's lock, as the last part
// of a fixed shard count is: then the fire's reduce run is written once
// (insertReduces: keyed by (job, the last part's end, 0, 0), its
// parent_run the root, trigger type reduce), or, without a reduce, the
// job's children fire once, as the root's. The reduce run's children fire
// when it succeeds, as any run's. A part failing for good leaves the fire
// undone: no reduce, no children.

// mapIgnoredNote is what a root that may not map says: only a run that is
// no part of any fire, no reduce run and no workflow node run maps.
const mapIgnoredNote = "map ignored: only a run that is not a part, a reduce run or a workflow node run may map"

// mapFireSQL makes run $1 (partitioned by $2) the root of a map/reduce
// fire and writes its parts, one per item of $3 (part i of $4), if the run
// SUCCEEDED in this transaction's batch (the caller checks) and may map.
const mapFireSQL = `WITH root AS (UPDATE job_runs r SET shard_fire = r.id, map_reduce = CASE WHEN $5::bool THEN r.id END
		WHERE r.id = $1 AND r.scheduled_at = $2 AND r.status = 'SUCCEEDED' AND r.shard_fire IS NULL
		  AND r.shard_total = 0 AND r.workflow_run IS NULL AND r.map_item IS NULL AND r.map_reduce IS NULL
		RETURNING r.*)
	INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, attempt, params,
		shard_index, shard_total, chain_root, priority, shard_fire, map_item)
	SELECT b.job_id, b.group_name, b.shard, 'map', 'SCHEDULED', b.finished_at, 0, b.params,
		i.n - 1, $4, COALESCE(b.chain_root, b.id), b.priority, b.id, i.item
	FROM root b, unnest($3::text[]) WITH ORDINALITY AS i(item, n)
	ON CONFLICT DO NOTHING
	RETURNING id`

// mapFires writes the parts of the runs of moved that succeeded with a
// map (maps, by run), drops those roots from parents (their children wait
// for the fire), and returns the parents left and the parts written. A
// run that may not map keeps its children and says why it did not.
func mapFires(ctx context.Context, tx pgx.Tx, moved []Moved, maps map[runGroup]*Update, parents []parent) ([]parent, []int64, error) {
	var (
		parts   []int64
		rooted  = map[int64]bool{}
		nIDs    []int64
		nScheds []time.Time
		nNotes  []string
	)
	for _, m := range moved {
		u := maps[runGroup{m.RunID, m.Group}]
		if u == nil || m.Status != wire.StatusSucceeded {
			continue
		}
		rows, _ := tx.Query(ctx, mapFireSQL, m.RunID, m.ScheduledAt, u.Map, len(u.Map), u.Reduce)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, nil, fmt.Errorf("map run %d into %d parts: %w", m.RunID, len(u.Map), err)
		}
		if len(ids) == 0 {
			nIDs, nScheds, nNotes = append(nIDs, m.RunID), append(nScheds, m.ScheduledAt), append(nNotes, mapIgnoredNote)
			continue
		}
		rooted[m.RunID] = true
		parts = append(parts, ids...)
	}
	if len(nIDs) > 0 {
		if _, err := tx.Exec(ctx, noteCappedSQL, nIDs, nScheds, nNotes); err != nil {
			return nil, nil, fmt.Errorf("record why %d runs did not map: %w", len(nIDs), err)
		}
	}
	parents = slices.DeleteFunc(parents, func(p parent) bool { return rooted[p.Run] })
	return parents, parts, nil
}

// runGroup is an update's run and the group whose subject its events came
// on.
type runGroup struct {
	id    int64
	group string
}

// withMapParts adds to parents the parts of map/reduce fires that
// succeeded and are not among them already (a part whose job has children
// is both): each is judged with its fire (firesDone).
func withMapParts(parents, parts []parent) []parent {
	if len(parts) == 0 {
		return parents
	}
	in := make(map[int64]bool, len(parents))
	for _, p := range parents {
		in[p.Run] = true
	}
	for _, p := range parts {
		if !in[p.Run] {
			parents = append(parents, p)
		}
	}
	return parents
}

// fireEnd is a map/reduce fire done that asked for a reduce: its root, the
// root's partition key and the end of its last part.
type fireEnd struct {
	fire      int64
	at, ended time.Time
}

// insertReducesSQL writes the reduce run of each fire done: a run of the
// root's job and params, parent_run and map_reduce the root, scheduled at
// the last part's end. Keyed like every run (job, that end, 0, 0), so a
// fire judged done twice writes it once.
const insertReducesSQL = `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, attempt, params,
		parent_run, chain_root, priority, map_reduce)
	SELECT f.job_id, f.group_name, f.shard, 'reduce', 'SCHEDULED', u.ended, 0, f.params,
		f.id, COALESCE(f.chain_root, f.id), f.priority, f.id
	FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS u(fire, at, ended)
	JOIN job_runs f ON f.id = u.fire AND f.scheduled_at = u.at
	ON CONFLICT DO NOTHING
	RETURNING id`

// insertReduces writes the reduce runs of fires (see insertReducesSQL)
// and returns those written.
func insertReduces(ctx context.Context, tx pgx.Tx, fires []fireEnd) ([]int64, error) {
	ids, ats, ends := make([]int64, len(fires)), make([]time.Time, len(fires)), make([]time.Time, len(fires))
	for i, f := range fires {
		ids[i], ats[i], ends[i] = f.fire, f.at, f.ended
	}
	rows, _ := tx.Query(ctx, insertReducesSQL, ids, ats, ends)
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("write the reduce runs of %d fires: %w", len(fires), err)
	}
	return out, nil
}
