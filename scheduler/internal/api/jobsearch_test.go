package api_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

type seedJob struct {
	id       int64
	name     string
	desc     string
	handler  string
	enabled  bool
	typ      string
	nextFire *time.Time
	updated  time.Time
}

func TestJobSearchSortsAndPagesExactly(t *testing.T) {
	ctx := context.Background()
	srv, pool := server(t)
	if _, err := pool.Exec(ctx, `INSERT INTO job_groups (name) VALUES ('g0'), ('g1')`); err != nil {
		t.Fatal(err)
	}
	// 60 jobs: every name twice (once per group), next fires and update
	// times with many ties, a quarter without a next fire and a third
	// disabled (whose next_fire_at only keeps the planner's place).
	base := time.Now().Truncate(time.Second).UTC()
	rows, _ := pool.Query(ctx, `INSERT INTO jobs (group_name, name, description, handler, schedule_type, misfire_policy,
			route_strategy, block_strategy, shard, enabled, next_fire_at, updated_at)
		SELECT 'g' || (i / 30), 'n' || lpad(((i * 7) % 30)::text, 2, '0'),
			CASE WHEN i % 10 = 0 THEN 'Nightly 100% report' ELSE '' END, 'h' || (i % 3),
			CASE WHEN i % 2 = 1 THEN 'cron' ELSE 'none' END, 'skip', 'any', 'serial', 0, i % 3 <> 0,
			CASE WHEN i % 4 <> 0 THEN $1::timestamptz + ((i * 13) % 20) * interval '1 minute' END,
			$1::timestamptz + (i % 5) * interval '1 second'
		FROM generate_series(0, 59) AS i
		RETURNING id, name, description, handler, enabled, schedule_type, next_fire_at, updated_at`, base)
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seedJob, error) {
		var s seedJob
		err := r.Scan(&s.id, &s.name, &s.desc, &s.handler, &s.enabled, &s.typ, &s.nextFire, &s.updated)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	never := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	keyOf := map[string]func(seedJob) string{
		"id":      func(seedJob) string { return "" },
		"name":    func(s seedJob) string { return s.name },
		"updated": func(s seedJob) string { return s.updated.Format(time.RFC3339Nano) },
		// A disabled job has no next fire: it sorts with the jobs without one.
		"next_fire": func(s seedJob) string {
			next := s.nextFire
			if !s.enabled {
				next = nil
			}
			return cmp.Or(next, &never).UTC().Format("2006-01-02T15:04:05.000000")
		},
	}
	filters := []struct {
		query string
		keep  func(seedJob) bool
	}{
		{"", func(seedJob) bool { return true }},
		{"q=N1", func(s seedJob) bool { return strings.HasPrefix(s.name, "n1") }},
		{"q=" + url.QueryEscape("100% REP"), func(s seedJob) bool { return s.desc != "" }},
		{"q=%25", func(s seedJob) bool { return s.desc != "" }}, // a literal %, not a wildcard
		{"handler=h1&enabled=true", func(s seedJob) bool { return s.handler == "h1" && s.enabled }},
		{"enabled=false&schedule_type=cron", func(s seedJob) bool { return !s.enabled && s.typ == "cron" }},
		{"group=g1", func(s seedJob) bool { return s.id > all[29].id }},
	}
	for sort, key := range keyOf {
		for _, order := range []string{"asc", "desc"} {
			for _, f := range filters {
				var want []int64
				sorted := slices.Clone(all)
				slices.SortStableFunc(sorted, func(a, b seedJob) int {
					c := cmp.Or(strings.Compare(key(a), key(b)), cmp.Compare(a.id, b.id))
					if order == "desc" {
						return -c
					}
					return c
				})
				for _, s := range sorted {
					if f.keep(s) {
						want = append(want, s.id)
					}
				}
				q := fmt.Sprintf("/api/v1/jobs?limit=7&sort=%s&order=%s&%s", sort, order, f.query)
				got, pages := cursorPages(t, srv, q, 20, func(l *apiv1.JobList) ([]int64, string) {
					ids := make([]int64, 0, len(l.Jobs))
					for _, j := range l.Jobs {
						ids = append(ids, j.ID)
					}
					return ids, l.Cursor
				})
				if !slices.Equal(got, want) || len(want) == 0 {
					t.Errorf("jobs sort=%s order=%s %s: got %v in %d pages, want %v", sort, order, f.query, got, pages, want)
				}
			}
		}
	}

	// The id order keeps its "after"/"next" paging.
	var ids []int64
	for after, pages := int64(0), 0; pages < 20; pages++ {
		var l apiv1.JobList
		if code, msg := get(t, srv, fmt.Sprintf("/api/v1/jobs?limit=25&after=%d", after), &l); code != http.StatusOK {
			t.Fatalf("after=%d: %d %s", after, code, msg)
		}
		for _, j := range l.Jobs {
			ids = append(ids, j.ID)
		}
		if after = l.Next; after == 0 {
			break
		}
	}
	if len(ids) != 60 || !slices.IsSorted(ids) {
		t.Errorf("paging by after: %d jobs %v", len(ids), ids)
	}

	var l apiv1.JobList
	get(t, srv, "/api/v1/jobs?sort=name&limit=3", &l)
	nameCursor := url.QueryEscape(l.Cursor)
	for _, bad := range []string{"sort=size", "order=up", "enabled=yes", "schedule_type=weekly", "limit=0", "limit=1001",
		"cursor=bm9wZQ", "cursor=" + nameCursor + "&sort=updated", "cursor=" + nameCursor + "&sort=name&order=desc",
		"after=-1", "after=3&sort=name", "group=a.b", "q=" + strings.Repeat("x", 201), "colour=red"} {
		var l apiv1.JobList
		if code, msg := get(t, srv, "/api/v1/jobs?"+bad, &l); code != http.StatusBadRequest || !strings.Contains(msg, strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("jobs?%s: %d %q, want 400 naming the parameter", bad, code, msg)
		}
	}
}

func TestRunSearchByWorker(t *testing.T) {
	ctx := context.Background()
	srv, pool := server(t)
	// 30 runs: w1, w2 and no worker in turn.
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, worker_id)
		SELECT 1, 'g', 0, 'schedule', 'SUCCEEDED', now() - i * interval '1 minute', (ARRAY['w1', 'w2', ''])[i % 3 + 1]
		FROM generate_series(1, 30) AS i`); err != nil {
		t.Fatal(err)
	}
	byWorker := map[string][]int64{}
	rows, _ := pool.Query(ctx, `SELECT id, worker_id FROM job_runs ORDER BY scheduled_at DESC, id DESC`)
	var id int64
	var w string
	if _, err := pgx.ForEachRow(rows, []any{&id, &w}, func() error { byWorker[w] = append(byWorker[w], id); return nil }); err != nil {
		t.Fatal(err)
	}
	var got []int64
	for cursor, pages := "", 0; pages < 10; pages++ {
		var l apiv1.RunList
		q := "/api/v1/runs?worker=w2&limit=4"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if code, msg := get(t, srv, q, &l); code != http.StatusOK {
			t.Fatalf("%s: %d %s", q, code, msg)
		}
		for _, r := range l.Runs {
			got = append(got, r.ID)
		}
		if cursor = l.Cursor; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, byWorker["w2"]) || len(got) != 10 {
		t.Errorf("runs?worker=w2: %v, want %v", got, byWorker["w2"])
	}
	var l apiv1.RunList
	if code, msg := get(t, srv, "/api/v1/runs?worker="+strings.Repeat("w", 256), &l); code != http.StatusBadRequest || !strings.Contains(msg, "worker") {
		t.Errorf("runs?worker=<256 chars>: %d %q, want 400 naming worker", code, msg)
	}
}
