package planner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/internal/alertoutbox"
	"github.com/jetjob/jetjob/scheduler/internal/lease"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/scheduler/internal/timing"
	"github.com/jetjob/jetjob/shared/wire"
)

// selectDue reads only the columns planning and firing need. SKIP LOCKED:
// a job being edited right now is planned on the next pass instead of
// making this pass wait. The jobs of the groups $4, whose workers are
// behind, wait too, unless their policy runs every fire (admit.go). The
// jobs of a paused or draining group are left out (docs/flow-control.md);
// the group's last pause is read when it ended after the job's next fire,
// so that the fires the pause made late can name it (pausedBy). One
// lookup of the group's row serves both, and reads the group's flow
// controls (its cap and rate limit) with the job's (runs.Flow).
const selectDue = `SELECT jobs.id, jobs.group_name, handler, params, schedule_type, schedule_expr, timezone,
	misfire_policy, route_strategy, block_strategy, timeout_ms, next_fire_at,
	misfire_threshold_ms, max_catchup, jitter_ms, start_at, end_at, max_concurrency, kind = 'workflow',
	script_language, script_version, script_source,
	COALESCE(extra_schedules::text, ''), exclude_calendars, include_calendars, params_template,
	secret_names <> '{}',
	CASE WHEN g.last_pause_until >= jobs.next_fire_at THEN g.last_pause_from END,
	CASE WHEN g.last_pause_until >= jobs.next_fire_at THEN g.last_pause_until END,
	CASE WHEN g.last_pause_until >= jobs.next_fire_at THEN COALESCE(g.last_pause_note, '') ELSE '' END,
	jobs.priority, COALESCE(g.max_running, 0), COALESCE(g.rate_count, 0), COALESCE(g.rate_period_ms, 0),
	concurrency_key, key_cap, key_rate_count, key_rate_period_ms, jobs.rate_count, jobs.rate_period_ms, jobs.fixed_shards
	FROM jobs LEFT JOIN job_groups g ON g.name = jobs.group_name
	WHERE shard = $1 AND enabled AND next_fire_at <= $2
		AND NOT (jobs.group_name = ANY(coalesce($4::text[], '{}')) AND misfire_policy <> 'fire_all')
		AND COALESCE(g.flow_state, 'active') = 'active'
	ORDER BY next_fire_at
	LIMIT $3
	FOR UPDATE OF jobs SKIP LOCKED`

// advanceNextFire moves every planned job past the window in one statement.
const advanceNextFire = `UPDATE jobs SET next_fire_at = u.next_fire_at,
		last_fire_at = COALESCE(u.last_fire_at, jobs.last_fire_at)
	FROM unnest($1::bigint[], $2::timestamptz[], $3::timestamptz[]) AS u(id, next_fire_at, last_fire_at)
	WHERE jobs.id = u.id`

type dueJob struct {
	id                       int64
	group, handler, params   string
	schedType, schedExpr, tz string
	misfire                  policy.Misfire
	route                    policy.Route
	block                    policy.Block
	timeoutMS                int64
	next                     time.Time
	// Per-job overrides of the planner's defaults (NULL: the default),
	// jitter and bounds (see package timing).
	thresholdMS    *int64
	maxCatchup     *int
	jitterMS       int64
	start, end     *time.Time
	maxConcurrency int
	// shards is the job's fixed shard count (0: none): dispatch expands
	// each fire into that many parts, so its runs are never batched.
	shards int
	// workflow: a workflow's own row, whose runs dispatch starts rather
	// than publishes (never batched).
	workflow bool
	// script is a script job's current version (nil for other jobs).
	script *wire.Script
	// extra is the job's schedules after the first (JSON), "" for none.
	extra string
	// exclude and include name the job's calendars (calendars.go).
	exclude, include []string
	// paramsTemplate: params are a template rendered per fire (params.go).
	paramsTemplate bool
	// secrets: the job references secrets (wire.Trigger.Secrets).
	secrets bool
	// pauseFrom and pauseUntil are its group's last pause when it ended
	// after the job's next fire (nil otherwise), pauseNote its note.
	pauseFrom, pauseUntil *time.Time
	pauseNote             string
	// flow is the job's and its group's flow controls, copied into each
	// run planned (zero: none).
	flow runs.Flow
}

// pausedBy names the group's pause in the message of a fire it made
// late, the runs the misfire policy writes on resume ("" for any other).
func (j *dueJob) pausedBy(f fire) string {
	if j.pauseFrom == nil || j.pauseUntil == nil || f.message == "" || f.at.After(*j.pauseUntil) {
		return ""
	}
	msg := fmt.Sprintf("; group %s was paused from %s to %s", j.group,
		j.pauseFrom.UTC().Format(time.RFC3339), j.pauseUntil.UTC().Format(time.RFC3339))
	if j.pauseNote != "" {
		msg += ": " + j.pauseNote
	}
	return msg
}

// planBatch plans up to BatchSize due jobs of a shard in one transaction,
// as admitted (a: how far ahead of now, which groups' jobs wait). more
// reports that the batch was full and another may be due.
func (p *Planner) planBatch(ctx context.Context, l lease.Lease, now time.Time, a admission) (planned []runs.Planned, more bool, err error) {
	shard, window := l.Shard, a.ahead
	horizon := now.Add(window)
	// A job is read once its next fire is within the low-water mark and
	// then planned up to the whole window: a job firing every second has
	// its row rewritten (and the jobs index updated) every few fires, not
	// at every one, and each statement carries more runs.
	lowWater := now.Add(min(window, max(window/2, 2*p.cfg.Interval)))
	err = pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		// First, the fence: it also share-locks the shard's row until commit
		// and bounds the transaction's idle time (runs.Fence).
		if err := runs.Fence(ctx, tx, shard, p.owner, l.Epoch, p.cfg.IdleTxTimeout); errors.Is(err, runs.ErrNotHeld) {
			return ErrLeaseLost
		} else if err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, selectDue, shard, lowWater, p.cfg.BatchSize, a.behind)
		jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueJob, error) {
			var j dueJob
			var sc runs.ScriptColumns
			err := r.Scan(&j.id, &j.group, &j.handler, &j.params, &j.schedType, &j.schedExpr, &j.tz,
				&j.misfire, &j.route, &j.block, &j.timeoutMS, &j.next,
				&j.thresholdMS, &j.maxCatchup, &j.jitterMS, &j.start, &j.end, &j.maxConcurrency, &j.workflow,
				&sc.Language, &sc.Version, &sc.Source, &j.extra, &j.exclude, &j.include, &j.paramsTemplate, &j.secrets,
				&j.pauseFrom, &j.pauseUntil, &j.pauseNote,
				&j.flow.Priority, &j.flow.GroupCap, &j.flow.GroupRate.Count, &j.flow.GroupRate.PeriodMS,
				&j.flow.KeyExpr, &j.flow.KeyCap, &j.flow.KeyRate.Count, &j.flow.KeyRate.PeriodMS, &j.flow.Rate.Count, &j.flow.Rate.PeriodMS, &j.shards)
			j.script = sc.Script()
			return j, err
		})
		if err != nil {
			return fmt.Errorf("read due jobs: %w", err)
		}
		if len(jobs) == 0 {
			return nil
		}
		more = len(jobs) == p.cfg.BatchSize
		cals, err := loadCalendars(ctx, tx, jobs)
		if err != nil {
			return err
		}

		var (
			fires  []runs.Fire
			sizes  []int    // per fire: its trigger's bound if it may join a batch, else 0
			lanes  []string // per fire: the worker its batch goes to, "" for any (batchLane)
			adv    advanceArgs
			byFire = make(map[fireKey]plannedFire, len(jobs))
		)
		for i := range jobs {
			j := &jobs[i]
			pl, tp, err := p.planOne(j, now, horizon, a.wait(j.group))
			if err != nil {
				// A schedule that no longer parses is switched off
				// (next_fire_at NULL) rather than retried every pass.
				p.log.Error("job schedule invalid; not planning it", logging.Job(j.id), logging.Shard(shard), zap.Error(err))
				adv.add(j.id, nil, nil)
				continue
			}
			var last *time.Time
			cals.judge(j, tp, pl.fires)
			render := p.paramsOf(j)
			for _, f := range pl.fires {
				// Runs are written at their actual (jittered) time, to the
				// microsecond PostgreSQL keeps: key fires the way they come back.
				f.message += j.pausedBy(f)
				f.at = tp.At(f.at)
				if f.status == wire.StatusScheduled {
					f.params = render(f.at)
				}
				fires = append(fires, runs.Fire{JobID: j.id, Group: j.group, TriggerType: f.typ,
					Status: f.status, ScheduledAt: f.at, Message: f.message, Params: f.params})
				size, lane := 0, ""
				if batchable(j, f, p.target != nil) {
					size, lane = triggerBytes(j), p.batchLane(j)
				}
				sizes = append(sizes, size)
				lanes = append(lanes, lane)
				byFire[fireKey{j.id, f.at.UnixMicro()}] = plannedFire{j, f}
				at := f.at
				last = &at
			}
			adv.add(j.id, pl.next, last)
		}
		if len(fires) > 0 {
			chunkBatches(fires, sizes, lanes, p.cfg.TriggerBatch)
			written, err := runs.InsertPlanned(ctx, tx, shard, fires)
			if err != nil {
				return err
			}
			planned = make([]runs.Planned, 0, len(written))
			var skipped []alertoutbox.End
			for _, w := range written {
				pf, ok := byFire[fireKey{w.JobID, w.ScheduledAt.UnixMicro()}]
				if !ok {
					return fmt.Errorf("planned run %d (job %d at %s) matches no fire", w.RunID, w.JobID, w.ScheduledAt)
				}
				if pf.f.status == wire.StatusSkipped {
					// At zero: the row's finished_at, the transaction's now().
					skipped = append(skipped, alertoutbox.End{RunID: w.RunID, JobID: pf.j.id, Group: pf.j.group,
						Status: string(wire.StatusSkipped), Message: wire.TruncateMessage(pf.f.message)})
					continue
				}
				j := pf.j
				params := j.params
				if pf.f.params != nil {
					params = *pf.f.params
				}
				planned = append(planned, runs.Planned{
					RunID: w.RunID, JobID: j.id, Group: j.group, Shard: shard, Epoch: l.Epoch, Handler: j.handler,
					Params: params, TriggerType: pf.f.typ, ScheduledAt: w.ScheduledAt,
					Timeout: time.Duration(j.timeoutMS) * time.Millisecond, MisfirePolicy: j.misfire,
					RouteStrategy: j.route, BlockStrategy: j.block, MisfireThreshold: p.threshold(j),
					MaxConcurrency: j.maxConcurrency, Shards: j.shards, Batch: w.Batch, Workflow: j.workflow, Script: j.script, Secrets: j.secrets,
					Flow: j.flow,
				})
			}
			// Missed fires recorded SKIPPED are the event missed of the
			// rules that follow them, written with them.
			if len(skipped) > 0 {
				if err := alertoutbox.RecordEnds(ctx, tx, func() []alertoutbox.End { return skipped }); err != nil {
					return err
				}
			}
		}
		if _, err := tx.Exec(ctx, advanceNextFire, adv.ids, adv.nexts, adv.lasts); err != nil {
			return fmt.Errorf("advance next fire: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return planned, more, nil
}

func (p *Planner) planOne(j *dueJob, now, horizon time.Time, wait time.Duration) (plan, timing.Plan, error) {
	s, err := p.cache.get(j.id, j.schedType, j.schedExpr, j.tz, j.extra)
	if err != nil {
		return plan{}, timing.Plan{}, err
	}
	mp, err := policy.ParseMisfire(string(j.misfire))
	if err != nil {
		return plan{}, timing.Plan{}, err
	}
	tp := timing.Plan{Sched: s, JobID: j.id, Jitter: time.Duration(j.jitterMS) * time.Millisecond}
	if j.start != nil {
		tp.Start = *j.start
	}
	if j.end != nil {
		tp.End = *j.end
	}
	maxCatchup := p.cfg.MaxCatchup
	if j.maxCatchup != nil {
		maxCatchup = *j.maxCatchup
	}
	pl := planJob(tp, j.next, now, horizon, wait, mp, p.threshold(j), maxCatchup)
	if pl.overflow {
		p.log.Warn("more fires missed than max_catchup; the ones past it are summarised in one SKIPPED run",
			logging.Job(j.id), zap.Int("max_catchup", maxCatchup), zap.Time("missed_since", j.next))
	}
	return pl, tp, nil
}

// threshold is the job's misfire threshold, the planner's when it has none
// (NULL, or 0 as the store, the API and dispatch read it).
func (p *Planner) threshold(j *dueJob) time.Duration {
	if j.thresholdMS != nil && *j.thresholdMS > 0 {
		return time.Duration(*j.thresholdMS) * time.Millisecond
	}
	return p.cfg.MisfireThreshold
}

// plannedFire ties a fire to its job, to match the rows runs.InsertPlanned
// returns.
type plannedFire struct {
	j *dueJob
	f fire
}

type fireKey struct {
	job int64
	at  int64 // µs: PostgreSQL's timestamp resolution
}

// advanceArgs are the column arrays of advanceNextFire.
type advanceArgs struct {
	ids   []int64
	nexts []*time.Time
	lasts []*time.Time
}

func (a *advanceArgs) add(id int64, next, last *time.Time) {
	a.ids = append(a.ids, id)
	a.nexts = append(a.nexts, next)
	a.lasts = append(a.lasts, last)
}
