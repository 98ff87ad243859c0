package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const benchGroup = "bench"

// parked is where jobs wait until they are armed: their next fire is
// parked + offset, far beyond any planning window. Arming moves the fires
// the run will reach to the real start time in one UPDATE, so inserting a
// million rows can take as long as it takes without jobs going due (and
// misfiring) before the schedulers are ready.
var parked = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)

// jobSet is a range of benchmark jobs with one schedule.
type jobSet struct {
	firstID int64
	n       int
	typ     string // schedule_type: cron or once
	expr    string // schedule_expr (once: replaced by the fire time on arming)
	period  time.Duration
	// offset is job i's (0-based) first fire, relative to the start time.
	offset  func(i int64) time.Duration
	handler string
	params  string // the jobs' params (the command line of shell jobs)
	block   string // block_strategy
	route   string // route_strategy ("": any)
	misfire string // misfire_policy
	kind    string // jobs.kind ("": job; workflow: the graph is inserted apart)
	// flow is the flow controls of the jobs (--key-cap, --job-rate,
	// --priority-spread); the zero value sets none.
	flow flowFlags
	// armedUntil: jobs whose offset is below it are armed; the others stay
	// parked (they would fire after the run ends anyway).
	armedUntil time.Duration
	start      time.Time // set by arm
}

func (s *jobSet) lastID() int64 { return s.firstID + int64(s.n) - 1 }

// insert writes the jobs with COPY: id chosen here (COPY writes identity
// values as given), shard = id mod shards as store.CreateJob does.
func (s *jobSet) insert(ctx context.Context, pool *pgxpool.Pool, shards int) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `INSERT INTO job_groups (name, title) VALUES ($1, 'jetjob-bench') ON CONFLICT DO NOTHING`, benchGroup); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	cols := []string{"id", "shard", "group_name", "name", "handler", "params", "schedule_type", "schedule_expr", "timezone",
		"misfire_policy", "route_strategy", "block_strategy", "timeout_ms", "enabled", "next_fire_at", "kind",
		"priority", "concurrency_key", "key_cap", "rate_count", "rate_period_ms"}
	keyExpr := s.flow.keyExpr(s.handler)
	i := int64(0)
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if i == int64(s.n) {
			return nil, nil
		}
		id := s.firstID + i
		route := cmp.Or(s.route, "any")
		params, priority := s.params, int16(0)
		if keyExpr == "params.k" {
			params = `{"k":"` + strconv.FormatInt(id, 10) + `"}` // one key per job, as its runs share its params
		}
		if s.flow.prioritySpread {
			priority = int16(id % priorities)
		}
		row := []any{id, int32(id % int64(shards)), benchGroup, "bench-" + strconv.FormatInt(id, 10), s.handler, params,
			s.typ, s.expr, "UTC", s.misfire, route, s.block, int64(30000), true, parked.Add(s.offset(i)), cmp.Or(s.kind, "job"),
			priority, keyExpr, int32(s.flow.keyCap), int32(s.flow.jobRate.Count), s.flow.jobRate.PeriodMS}
		i++
		return row, nil
	})
	if _, err := conn.Conn().CopyFrom(ctx, pgx.Identifier{"jobs"}, cols, src); err != nil {
		return fmt.Errorf("copy jobs: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT setval(pg_get_serial_sequence('jobs', 'id'), (SELECT max(id) FROM jobs))`); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	return nil
}

// arm moves the set's parked fires below armedUntil to start + offset; a
// once job's expression becomes its fire time.
func (s *jobSet) arm(ctx context.Context, pool *pgxpool.Pool, start time.Time) (int64, error) {
	s.start = start
	tag, err := pool.Exec(ctx, `UPDATE jobs SET next_fire_at = $4::timestamptz + (next_fire_at - $3::timestamptz),
			schedule_expr = CASE WHEN schedule_type = 'once' THEN $5 ELSE schedule_expr END
		WHERE id BETWEEN $1 AND $2 AND next_fire_at >= $3::timestamptz AND next_fire_at < $3::timestamptz + $6::bigint * interval '1 microsecond'`,
		s.firstID, s.lastID(), parked, start, start.UTC().Format(time.RFC3339), s.armedUntil.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("arm jobs: %w", err)
	}
	return tag.RowsAffected(), nil
}

// fires calls f for every fire of the set in [from, to).
func (s *jobSet) fires(from, to time.Time, f func(job int64, at time.Time)) {
	for i := range int64(s.n) {
		off := s.offset(i)
		if off >= s.armedUntil {
			continue
		}
		t := s.start.Add(off)
		if s.typ == "once" || s.period <= 0 {
			if !t.Before(from) && t.Before(to) {
				f(s.firstID+i, t)
			}
			continue
		}
		if t.Before(from) {
			k := (from.Sub(t) + s.period - 1) / s.period
			t = t.Add(k * s.period)
		}
		for ; t.Before(to); t = t.Add(s.period) {
			f(s.firstID+i, t)
		}
	}
}
