package runs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// job_runs is partitioned by UTC day of scheduled_at: a partition per day,
// job_runs_pYYYYMMDD, and job_runs_default for what falls outside the days
// created. Creating a day moves its rows out of the default partition, and
// dropping one deletes its runs, so these statements are run writes and
// live here; when to make them — which days, under which lock, after which
// rollup — is package retention's, which calls them in its steps'
// transactions. They carry no fence: maintenance acts for the whole table,
// not for a shard, under its own advisory lock, and it drops only days
// older than the retention.

const partitionPrefix = "job_runs_p"

// PartitionName is the name of day's partition (day: a UTC midnight).
func PartitionName(day time.Time) string { return partitionPrefix + day.Format("20060102") }

// partitionDay is the day of a partition named by PartitionName, false for
// any other name (the default partition).
func partitionDay(name string) (time.Time, bool) {
	if len(name) != len(partitionPrefix)+8 || name[:len(partitionPrefix)] != partitionPrefix {
		return time.Time{}, false
	}
	d, err := time.Parse("20060102", name[len(partitionPrefix):])
	return d, err == nil
}

// Partitions lists the day partitions of job_runs by day (a UTC midnight),
// and the days that have rows in the default partition.
func Partitions(ctx context.Context, tx pgx.Tx) (map[time.Time]string, []time.Time, error) {
	rows, _ := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'job_runs'::regclass`)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, fmt.Errorf("list partitions: %w", err)
	}
	parts := map[time.Time]string{}
	for _, n := range names {
		if d, ok := partitionDay(n); ok {
			parts[d] = n
		}
	}
	// The default partition is small (it only catches what falls outside
	// the created days), so reading its days is cheap.
	rows, _ = tx.Query(ctx, `SELECT DISTINCT (scheduled_at AT TIME ZONE 'UTC')::date FROM job_runs_default`)
	dd, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return nil, nil, fmt.Errorf("list days in the default partition: %w", err)
	}
	for i, d := range dd {
		y, m, dom := d.UTC().Date()
		dd[i] = time.Date(y, m, dom, 0, 0, 0, 0, time.UTC)
	}
	return parts, dd, nil
}

// CreatePartition creates day's partition unless it exists, moving the
// day's rows out of the default partition (jetjob_create_run_partition,
// migration 0004, which attaches it under a lock that lets run writes go
// on). It returns how many rows moved, or -1 when the partition existed.
func CreatePartition(ctx context.Context, tx pgx.Tx, day time.Time) (moved int64, err error) {
	if err := tx.QueryRow(ctx, `SELECT jetjob_create_run_partition($1)`, day).Scan(&moved); err != nil {
		return 0, fmt.Errorf("jetjob_create_run_partition(%s): %w", day.Format(time.DateOnly), err)
	}
	return moved, nil
}

// DropPartition deletes day's runs by dropping its partition, if it exists.
func DropPartition(ctx context.Context, tx pgx.Tx, day time.Time) error {
	if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{PartitionName(day)}.Sanitize()); err != nil {
		return fmt.Errorf("drop %s: %w", PartitionName(day), err)
	}
	return nil
}

// DeleteDefaultDay deletes the runs of day that sit in the default
// partition (a day without a partition of its own) and returns how many.
func DeleteDefaultDay(ctx context.Context, tx pgx.Tx, day time.Time) (int64, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM job_runs_default WHERE scheduled_at >= $1 AND scheduled_at < $2`, day, day.AddDate(0, 0, 1))
	if err != nil {
		return 0, fmt.Errorf("delete from the default partition: %w", err)
	}
	return tag.RowsAffected(), nil
}

// ForgetIdleChains deletes the counters of child-job chains (run_chains,
// chains.go) not updated since before: their runs are gone by then, and no
// child of theirs is to come. It returns how many it deleted.
func ForgetIdleChains(ctx context.Context, tx pgx.Tx, before time.Time) (int64, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM run_chains WHERE updated_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("delete from run_chains: %w", err)
	}
	return tag.RowsAffected(), nil
}
