package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// selectDue is the planner's due-jobs read, the same text as selectDue in
// scheduler/internal/planner/sql.go (unexported there). Keep the two in step.
const selectDue = `SELECT id, group_name, handler, params, schedule_type, schedule_expr, timezone,
	misfire_policy, route_strategy, block_strategy, timeout_ms, next_fire_at
	FROM jobs
	WHERE shard = $1 AND enabled AND next_fire_at <= $2
	ORDER BY next_fire_at
	LIMIT $3
	FOR UPDATE SKIP LOCKED`

// dueBatch is the planner's default batch size (planner.DefaultBatchSize).
const dueBatch = 5000

// planningWindow is the planner's default window (planner.DefaultWindow).
const planningWindow = 5 * time.Second

// runDueRead measures the due-jobs read at each table size. Jobs are
// spread over the shards (id mod shards) and, within each shard, their next
// fires are spread so that min(5000, jobs per shard) of them fall inside
// the planning window: the read returns a full batch when the shard has
// one, from rows due in the window — the planner's hot path. Each read runs
// in a transaction (FOR UPDATE SKIP LOCKED takes row locks) that is rolled
// back, cycling over the shards.
func runDueRead(ctx context.Context, e *env, res *Result) error {
	o := e.o
	if err := e.startPostgres(ctx); err != nil {
		return err
	}
	res.Machine = e.machine(ctx)
	for _, n := range o.dueSizes {
		// CASCADE: tables that reference jobs (backfills) are empty here,
		// but PostgreSQL refuses to truncate jobs alone.
		if _, err := e.pool.Exec(ctx, `TRUNCATE jobs CASCADE`); err != nil {
			return fmt.Errorf("truncate jobs: %w", err)
		}
		perShard := float64(n) / float64(o.shards)
		due := min(dueBatch, perShard)
		span := time.Duration(float64(planningWindow) * perShard / due) // due rows land in [0, window)
		shards := int64(o.shards)
		set := everySet(1, n, 1000*time.Second, "noop", func(i int64) time.Duration {
			return time.Duration(float64(span) * float64((i+1)/shards) / perShard)
		}, 0)
		t := time.Now()
		if err := e.insert(ctx, set); err != nil {
			return err
		}
		ins := time.Since(t)
		d, err := dueReads(ctx, e, parked.Add(planningWindow), o.dueReads)
		if err != nil {
			return err
		}
		d.Layout, d.Jobs, d.InsertSecs = "due within the window", n, round1(ins.Seconds())
		logf("due read, %d jobs (%.0f due per shard): p50 %.2f ms, p99 %.2f ms, max %.2f ms, server %.2f ms",
			n, d.DuePerShard, d.P50Ms, d.P99Ms, d.MaxMs, d.ServerMs)
		res.DueRead = append(res.DueRead, d)
	}
	return nil
}

var execTime = regexp.MustCompile(`Execution Time: ([0-9.]+) ms`)

func dueReads(ctx context.Context, e *env, horizon time.Time, reads int) (DueRead, error) {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return DueRead{}, err
	}
	defer conn.Release()
	read := func(shard int) (time.Duration, int, error) {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return 0, 0, err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // read only; the locks go with it
		t := time.Now()
		rows, _ := tx.Query(ctx, selectDue, shard, horizon, dueBatch)
		n := 0
		var (
			id, timeout                                     int64
			group, handler, params, typ, expr, tz, mp, r, b string
			next                                            time.Time
		)
		_, err = pgx.ForEachRow(rows, []any{&id, &group, &handler, &params, &typ, &expr, &tz, &mp, &r, &b, &timeout, &next},
			func() error { n++; return nil })
		return time.Since(t), n, err
	}
	// Warm the connection and its prepared statement, as a scheduler's
	// pool is warm.
	for i := range 20 {
		if _, _, err := read(i % e.o.shards); err != nil {
			return DueRead{}, err
		}
	}
	var ms []float64
	var rows int
	for i := range reads {
		d, n, err := read((i * 7) % e.o.shards)
		if err != nil {
			return DueRead{}, err
		}
		ms = append(ms, float64(d.Microseconds())/1000)
		rows += n
	}
	out := DueRead{Reads: reads, DuePerShard: round1(float64(rows) / float64(reads))}
	p50, p99, mx := percentiles(ms)
	out.P50Ms, out.P99Ms, out.MaxMs = round3(p50), round3(p99), round3(mx)

	// The server's own time for one read (median of 5).
	var server []float64
	for i := range 5 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return out, err
		}
		q := "EXPLAIN (ANALYZE, BUFFERS) " + selectDue
		rs, _ := tx.Query(ctx, q, (i*11)%e.o.shards, horizon, dueBatch)
		var line string
		out.Plan = out.Plan[:0]
		_, err = pgx.ForEachRow(rs, []any{&line}, func() error {
			out.Plan = append(out.Plan, line)
			if m := execTime.FindStringSubmatch(line); m != nil {
				v, _ := strconv.ParseFloat(m[1], 64)
				server = append(server, v)
			}
			return nil
		})
		_ = tx.Rollback(ctx)
		if err != nil {
			return out, fmt.Errorf("explain: %w", err)
		}
	}
	p50s, _, _ := percentiles(server)
	out.ServerMs = round3(p50s)
	return out, nil
}
