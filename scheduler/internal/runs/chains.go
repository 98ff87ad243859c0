package runs

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/refs"
)

// parent is a run that succeeded and has enabled children to trigger.
type parent struct {
	refs.Spawn
	jobID                   int64
	scheduledAt, finishedAt time.Time
	// fire is the fire of a part of a fixed shard count (its part 0's
	// id; job_runs.shard_fire), 0 for any other run.
	fire int64
}

// chainLockClass is the advisory lock space (two-key form) of chains: one
// lock per root fire, keyed by hashint8(root), held to the end of the
// applier's transaction while it reads and adds to the chain's count.
const chainLockClass = 0x6a6a6368 // "jjch"

// lockChainsSQL takes the chains' locks in key order: every applier takes
// them in the same order, so two never wait on each other in a circle.
// (Nothing else takes them; the appliers' row locks on job_runs, taken
// before, are on rows of their own batches.)
const lockChainsSQL = `SELECT pg_advisory_xact_lock($1, k)
	FROM (SELECT DISTINCT hashint8(r) AS k FROM unnest($2::bigint[]) AS r ORDER BY 1) AS s`

// spawnChildrenSQL triggers the children of the granted runs (trigger
// type parent, parent_run, the chain's root, scheduled at the parent's
// end) and adds them to their chains' counts. A chain is counted from the
// first level that has children of its own, or once it has a row: a
// parent whose children are all leaves, the common case, writes nothing to
// run_chains. (A leaf given children while its chain is in flight thus
// counts from zero: the cap is exact for the links a chain starts with.)
//
// The child runs are keyed like every run (job, scheduled_at, shard index,
// attempt) and derive from the parent's finished_at, so triggering a
// parent's children again creates nothing.
const spawnChildrenSQL = `WITH g AS (
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::timestamptz[], $4::bigint[]) AS g(run_id, job_id, finished_at, root)),
	ins AS (INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, parent_run, chain_root)
		SELECT c.id, c.group_name, c.shard, 'parent', 'SCHEDULED', g.finished_at, g.run_id, g.root
		FROM g JOIN jobs p ON p.id = g.job_id JOIN jobs c ON c.id = ANY (p.child_job_ids) AND c.enabled
		ON CONFLICT DO NOTHING
		RETURNING id, job_id, chain_root),
	per AS (SELECT ins.chain_root AS root, count(*)::int AS n,
			bool_or(EXISTS (SELECT 1 FROM jobs k WHERE k.id = ins.job_id AND k.child_job_ids <> '{}')) AS deeper
		FROM ins GROUP BY ins.chain_root),
	counted AS (INSERT INTO run_chains (root_run, runs)
		SELECT root, n FROM per
		WHERE deeper OR EXISTS (SELECT 1 FROM run_chains k WHERE k.root_run = per.root)
		ON CONFLICT (root_run) DO UPDATE SET runs = run_chains.runs + EXCLUDED.runs, updated_at = now())
	SELECT id FROM ins`

// noteCappedSQL ends the message of each refused run with why its
// children did not run.
const noteCappedSQL = `UPDATE job_runs r
	SET message = CASE WHEN r.message = '' THEN u.note ELSE r.message || '; ' || u.note END
	FROM unnest($1::bigint[], $2::timestamptz[], $3::text[]) AS u(id, scheduled_at, note)
	WHERE r.id = u.id AND r.scheduled_at = u.scheduled_at`

// spawnChildren triggers the children of parents (in run id order) within
// the cap of limit runs per root fire (refs.Grant decides), in the
// transaction that recorded the parents' success, and returns the runs it
// created and the parents it refused, whose message now says why.
func spawnChildren(ctx context.Context, tx pgx.Tx, parents []parent, limit int) ([]int64, []Capped, error) {
	slices.SortFunc(parents, func(a, b parent) int { return cmp.Compare(a.Run, b.Run) })
	roots := make([]int64, len(parents))
	for i, p := range parents {
		roots[i] = p.Root
	}
	if _, err := tx.Exec(ctx, lockChainsSQL, chainLockClass, roots); err != nil {
		return nil, nil, fmt.Errorf("lock %d chains: %w", len(roots), err)
	}
	// Under the chains' locks: the parts of one fire share its root, so
	// the last two parts to succeed, applied by two transactions, are
	// judged one after the other, the second seeing the first committed.
	parents, reduces, err := firesDone(ctx, tx, parents)
	if err != nil {
		return nil, nil, err
	}
	var spawned []int64
	if len(reduces) > 0 {
		if spawned, err = insertReduces(ctx, tx, reduces); err != nil {
			return nil, nil, err
		}
	}
	// Parts of map/reduce fires come without children: they were here
	// for their fire's judgment only.
	parents = slices.DeleteFunc(parents, func(p parent) bool { return p.Children == 0 })
	if len(parents) == 0 {
		return spawned, nil, nil
	}
	spawns := make([]refs.Spawn, len(parents))
	for i, p := range parents {
		spawns[i] = p.Spawn
	}
	used := make(map[int64]int, len(roots))
	var (
		root int64
		n    int
	)
	rows, _ := tx.Query(ctx, `SELECT root_run, runs FROM run_chains WHERE root_run = ANY($1::bigint[])`, roots)
	if _, err := pgx.ForEachRow(rows, []any{&root, &n}, func() error { used[root] = n; return nil }); err != nil {
		return nil, nil, fmt.Errorf("read %d chains: %w", len(roots), err)
	}
	var (
		gRuns, gJobs, gRoots []int64
		gEnds                []time.Time
		cIDs                 []int64
		cScheds              []time.Time
		cNotes               []string
		capped               []Capped
	)
	for i, d := range refs.Grant(spawns, used, limit) {
		p := parents[i]
		if d.Granted {
			gRuns, gJobs, gEnds, gRoots = append(gRuns, p.Run), append(gJobs, p.jobID), append(gEnds, p.finishedAt), append(gRoots, p.Root)
			continue
		}
		cIDs, cScheds, cNotes = append(cIDs, p.Run), append(cScheds, p.scheduledAt), append(cNotes, d.Note)
		capped = append(capped, Capped{RunID: p.Run, JobID: p.jobID, Root: p.Root, Note: d.Note})
	}
	if len(gRuns) > 0 {
		rows, _ := tx.Query(ctx, spawnChildrenSQL, gRuns, gJobs, gEnds, gRoots)
		children, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, nil, fmt.Errorf("trigger the children of %d runs: %w", len(gRuns), err)
		}
		spawned = append(spawned, children...)
	}
	if len(cIDs) > 0 {
		if _, err := tx.Exec(ctx, noteCappedSQL, cIDs, cScheds, cNotes); err != nil {
			return nil, nil, fmt.Errorf("record why %d runs triggered no children: %w", len(cIDs), err)
		}
	}
	return spawned, capped, nil
}

// fireDoneSQL reads which of the fires $1 (of a fixed shard count, or of
// a map/reduce fire) have every part succeeded, with the fire's time (its
// part 0's scheduled_at, or its root's) and its end (the last part's
// finished_at). A part's failed attempts are left behind by its retry; one
// SUCCEEDED attempt per index is the part done, and a succeeded run is
// never retried. The root of a map/reduce fire is of the fire
// (shard_fire, its own id) but no part (shard_total 0): it says whether
// the fire is a map (its shard_total) and whether it asked for a reduce
// (its map_reduce).
const fireDoneSQL = `SELECT r.shard_fire, min(r.scheduled_at) FILTER (WHERE r.id = r.shard_fire),
		max(r.finished_at) FILTER (WHERE r.status = 'SUCCEEDED'),
		COALESCE(bool_or(r.shard_total = 0) FILTER (WHERE r.id = r.shard_fire), false),
		COALESCE(max(r.map_reduce) FILTER (WHERE r.id = r.shard_fire), 0)
	FROM job_runs r WHERE r.shard_fire = ANY($1::bigint[])
	GROUP BY r.shard_fire
	HAVING count(DISTINCT r.shard_index) FILTER (WHERE r.status = 'SUCCEEDED' AND r.shard_total > 0) = max(r.shard_total)`

// firesDone keeps the parents that are no part of a fixed shard count, and
// for the parts replaces them by their fires whose parts have all
// succeeded: one parent per fire, its part 0, ended when its last part
// did. Its children are then keyed by (child job, that end) like any
// child run, so a fire judged done twice (two parts in one batch, or two
// schedulers) triggers them once. Parts of a fire not yet done trigger
// nothing. A map/reduce fire done that asked for a reduce gives no parent
// but a reduce run to write (its children wait for the reduce's end).
func firesDone(ctx context.Context, tx pgx.Tx, parents []parent) ([]parent, []fireEnd, error) {
	var fires []int64
	byFire := map[int64]parent{}
	kept := parents[:0:0]
	for _, p := range parents {
		if p.fire == 0 {
			kept = append(kept, p)
			continue
		}
		if _, ok := byFire[p.fire]; !ok {
			fires = append(fires, p.fire)
			byFire[p.fire] = p
		}
	}
	if len(fires) == 0 {
		return parents, nil, nil
	}
	var (
		fire, reduce int64
		at, ended    *time.Time
		isMap        bool
		reduces      []fireEnd
	)
	rows, _ := tx.Query(ctx, fireDoneSQL, fires)
	_, err := pgx.ForEachRow(rows, []any{&fire, &at, &ended, &isMap, &reduce}, func() error {
		p := byFire[fire]
		if at == nil || ended == nil {
			return nil // part 0 gone (retention): nothing to name as the parent
		}
		if isMap && reduce != 0 {
			reduces = append(reduces, fireEnd{fire: fire, at: *at, ended: *ended})
			return nil
		}
		p.Run, p.scheduledAt, p.finishedAt = fire, *at, *ended
		kept = append(kept, p)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read whether %d sharded fires are done: %w", len(fires), err)
	}
	slices.SortFunc(kept, func(a, b parent) int { return cmp.Compare(a.Run, b.Run) })
	return kept, reduces, nil
}
