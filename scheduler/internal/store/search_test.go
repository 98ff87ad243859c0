package store_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// planNode is the part of EXPLAIN (ANALYZE, FORMAT JSON) the test reads.
type planNode struct {
	Type           string     `json:"Node Type"`
	Relation       string     `json:"Relation Name"`
	Index          string     `json:"Index Name"`
	ActualRows     float64    `json:"Actual Rows"`
	ActualLoops    float64    `json:"Actual Loops"`
	RemovedFilter  float64    `json:"Rows Removed by Filter"`
	RemovedRecheck float64    `json:"Rows Removed by Index Recheck"`
	Plans          []planNode `json:"Plans"`
}

// read sums the rows the scans of a plan read (returned or filtered out)
// and lists the scans that read a partition sequentially.
func (n *planNode) read() (rows float64, seq []string) {
	switch n.Type {
	case "Seq Scan", "Index Scan", "Index Only Scan", "Bitmap Heap Scan":
		got := n.ActualRows*n.ActualLoops + n.RemovedFilter + n.RemovedRecheck
		rows += got
		if n.Type == "Seq Scan" && got > 0 {
			seq = append(seq, n.Relation)
		}
	}
	for i := range n.Plans {
		r, s := n.Plans[i].read()
		rows += r
		seq = append(seq, s...)
	}
	return rows, seq
}

// The day partitions' indexes of run search, by the suffix of their names.
const (
	timeIndex    = "_scheduled_at_id_idx" // job_runs_time
	fireKey      = "_job_id_scheduled_at_shard_index_attempt_key"
	groupIndex   = "_group_name_scheduled_at_id_idx"
	statusIndex  = "_status_scheduled_at_id_idx"
	triggerIndex = "_trigger_type_scheduled_at_id_idx"
	plannedIndex = "_shard_scheduled_at_idx" // job_runs_planned
)

// partitionName is the partition's part of its indexes' names.
var partitionName = regexp.MustCompile(`^job_runs_(p[0-9]{8}|default)`)

// indexes lists the indexes of the scans of a plan that read rows.
func (n *planNode) indexes() []string {
	var out []string
	if n.Index != "" && n.ActualRows*n.ActualLoops+n.RemovedFilter+n.RemovedRecheck > 0 {
		out = append(out, n.Index)
	}
	for i := range n.Plans {
		out = append(out, n.Plans[i].indexes()...)
	}
	return out
}

// TestSearchMillionRuns fills job_runs with 1 M runs over 30 day
// partitions and checks that the first page of every filter combination
// is read off an index: no partition is scanned sequentially, and the rows
// read stay within a few pages (one per branch, plus one probe per
// partition for the merge), except where two filters are both selective
// and only one can drive (bounded then by the driving filter's runs).
func TestSearchMillionRuns(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	start := time.Now()
	today := store.DayStart(time.Now())
	if _, err := pool.Exec(ctx, `SELECT jetjob_create_run_partition($1::date - i) FROM generate_series(1, 30) AS i`, today); err != nil {
		t.Fatal(err)
	}
	// 1000 jobs in 20 groups, one run every 2.6 s over 30 days; 5 % FAILED
	// and 2 % TIMED_OUT, 2 % retries and 2 % manual runs, independent of
	// the job.
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			started_at, finished_at, worker_id)
		SELECT i % 1000 + 1, 'g' || (i % 1000 + 1) % 20, i % 64,
			CASE (i / 1000) % 50 WHEN 7 THEN 'retry' WHEN 13 THEN 'manual' ELSE 'schedule' END,
			CASE WHEN (i / 1000) % 20 = 0 THEN 'FAILED' WHEN (i / 1000) % 50 = 1 THEN 'TIMED_OUT' ELSE 'SUCCEEDED' END,
			$1::timestamptz - interval '30 days' + i * interval '2.592 seconds',
			$1::timestamptz - interval '30 days' + i * interval '2.592 seconds',
			$1::timestamptz - interval '30 days' + i * interval '2.592 seconds' + (i % 997) * interval '1 millisecond',
			'w' || i % 4
		FROM generate_series(0, 999999) AS i`, today); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `ANALYZE job_runs`); err != nil {
		t.Fatal(err)
	}
	var parts int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'job_runs'::regclass`).Scan(&parts); err != nil {
		t.Fatal(err)
	}
	t.Logf("1 M runs in %d partitions, filled in %s", parts, time.Since(start).Round(time.Millisecond))

	st, err := store.Open(ctx, pool, 0)
	if err != nil {
		t.Fatal(err)
	}
	mid := today.AddDate(0, 0, -15)
	const limit = 50
	cases := []struct {
		name string
		f    store.RunFilter
		// drivenBy: another filter is as selective and cannot drive too;
		// the rows read are then bounded by the driving filter's runs.
		boundedBy int
		// index, when set: every scan that reads rows reads this index
		// (migration 0009: which index serves which filter).
		index string
	}{
		{name: "none"},
		{name: "job", f: store.RunFilter{JobID: 7}},
		{name: "group", f: store.RunFilter{Group: "g3"}},
		{name: "status", f: store.RunFilter{Statuses: []wire.Status{wire.StatusFailed}}},
		{name: "statuses", f: store.RunFilter{Statuses: []wire.Status{wire.StatusFailed, wire.StatusTimedOut, wire.StatusLost}}},
		{name: "trigger type", f: store.RunFilter{TriggerTypes: []wire.TriggerType{wire.TriggerRetry}}},
		{name: "trigger types", f: store.RunFilter{TriggerTypes: []wire.TriggerType{wire.TriggerRetry, wire.TriggerManual}}},
		{name: "time range", f: store.RunFilter{From: mid, To: mid.Add(time.Hour)}},
		{name: "job, time range", f: store.RunFilter{JobID: 7, From: mid, To: mid.AddDate(0, 0, 3)}},
		{name: "group, status", f: store.RunFilter{Group: "g3", Statuses: []wire.Status{wire.StatusFailed}}, boundedBy: 50000},
		{name: "job, status", f: store.RunFilter{JobID: 7, Statuses: []wire.Status{wire.StatusFailed}}, boundedBy: 1000},
		{name: "job, trigger type", f: store.RunFilter{JobID: 7, TriggerTypes: []wire.TriggerType{wire.TriggerRetry}}, boundedBy: 1000},
		{name: "status, trigger type", f: store.RunFilter{Statuses: []wire.Status{wire.StatusSucceeded}, TriggerTypes: []wire.TriggerType{wire.TriggerManual}}},
		{name: "everything", f: store.RunFilter{JobID: 7, Group: "g7", Statuses: []wire.Status{wire.StatusSucceeded, wire.StatusFailed},
			TriggerTypes: []wire.TriggerType{wire.TriggerSchedule}, From: mid, To: mid.AddDate(0, 0, 5)}},
		{name: "second page", f: store.RunFilter{Group: "g3", After: &store.RunKey{ScheduledAt: mid, ID: 500000}}},
		// Migration 0009: which index each filter reads.
		{name: "none, index", index: timeIndex},
		{name: "job, index", f: store.RunFilter{JobID: 7}, index: fireKey},
		{name: "job, second page", f: store.RunFilter{JobID: 7, After: &store.RunKey{ScheduledAt: mid, ID: 500000}}, index: fireKey},
		{name: "job, viewer's group", f: store.RunFilter{JobID: 7, Groups: []string{"g7"}}, index: fireKey},
		{name: "group, index", f: store.RunFilter{Group: "g3"}, index: groupIndex},
		{name: "status failed", f: store.RunFilter{Statuses: []wire.Status{wire.StatusFailed}}, index: statusIndex},
		{name: "status running", f: store.RunFilter{Statuses: []wire.Status{wire.StatusRunning}}, index: statusIndex},
		{name: "status succeeded", f: store.RunFilter{Statuses: []wire.Status{wire.StatusSucceeded}}, index: timeIndex},
		{name: "status scheduled", f: store.RunFilter{Statuses: []wire.Status{wire.StatusScheduled}}, index: plannedIndex},
		{name: "statuses with succeeded", f: store.RunFilter{Statuses: []wire.Status{wire.StatusSucceeded, wire.StatusFailed}}},
		// A worker ran one run in 4: its page is read through the time
		// index, about 4 rows a run.
		{name: "worker", f: store.RunFilter{Worker: "w2"}, index: timeIndex, boundedBy: 4 * (3*(limit+1) + 30)},
		{name: "trigger type, index", f: store.RunFilter{TriggerTypes: []wire.TriggerType{wire.TriggerManual}}, index: triggerIndex},
		{name: "trigger type schedule", f: store.RunFilter{TriggerTypes: []wire.TriggerType{wire.TriggerSchedule}}, index: timeIndex},
		{name: "succeeded, schedule", f: store.RunFilter{Statuses: []wire.Status{wire.StatusSucceeded},
			TriggerTypes: []wire.TriggerType{wire.TriggerSchedule}}, index: timeIndex},
	}
	for _, c := range cases {
		c.f.Limit = limit
		q, args := store.SearchSQL(c.f)
		var doc []struct {
			Plan planNode `json:"Plan"`
		}
		var raw []byte
		if err := pool.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+q, append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&raw); err != nil {
			t.Fatalf("%s: explain: %v", c.name, err)
		}
		if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 1 {
			t.Fatalf("%s: explain output: %v", c.name, err)
		}
		rows, seq := doc[0].Plan.read()
		if c.index != "" {
			for _, ix := range doc[0].Plan.indexes() {
				if partitionName.ReplaceAllString(ix, "") != c.index {
					t.Errorf("%s: reads index %s, want *%s", c.name, ix, c.index)
				}
			}
		}
		branches := max(1, len(c.f.Statuses), len(c.f.TriggerTypes))
		bound := float64(branches * (3*(limit+1) + parts))
		if c.boundedBy > 0 {
			bound = float64(c.boundedBy)
		}
		t0 := time.Now()
		got, _, err := st.SearchRuns(ctx, c.f)
		took := time.Since(t0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%-22s %3d runs, %6.0f rows read (bound %6.0f), %s", c.name, len(got), rows, bound, took.Round(10*time.Microsecond))
		if len(seq) > 0 {
			t.Errorf("%s: sequential scans of %v", c.name, seq)
		}
		if rows > bound {
			t.Errorf("%s: %.0f rows read for a page of %d (bound %.0f)", c.name, rows, limit, bound)
		}
		if rows > bound || len(seq) > 0 || os.Getenv("JETJOB_SHOW_PLANS") != "" {
			t.Logf("%s plan:\n%s", c.name, raw)
		}
	}
	t.Logf("whole test %s", time.Since(start).Round(time.Millisecond))
}
