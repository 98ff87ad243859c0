package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/api"
	"github.com/jetjob/jetjob/scheduler/internal/apitest"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/retention"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// server serves the API over a fresh database.
func server(t *testing.T) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	return serverWith(t, nil)
}

// serverWith is server with the config changed by set (when not nil).
func serverWith(t *testing.T, set func(*api.Config)) (*httptest.Server, *pgxpool.Pool) {
	t.Helper()
	st, pool := apitest.Store(t)
	cfg := apitest.Config()
	cfg.InsecureNoAuth = true
	if set != nil {
		set(&cfg)
	}
	a, err := api.New(cfg, st, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(validated(t, a))
	t.Cleanup(srv.Close)
	return srv, pool
}

// get decodes a 200 answer into out, or returns the status and error text.
func get(t *testing.T, srv *httptest.Server, path string, out any) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e apiv1.Error
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return resp.StatusCode, e.Error
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, ""
}

// cursorPages reads every page of a cursor-paged listing (path with its
// query), at most maxPages, and returns the ids of the items in the order
// read and how many pages it took; page returns a page's ids and cursor.
func cursorPages[L any](t *testing.T, srv *httptest.Server, path string, maxPages int, page func(*L) ([]int64, string)) ([]int64, int) {
	t.Helper()
	var got []int64
	cursor, pages := "", 0
	for {
		q := path
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		var l L
		if code, msg := get(t, srv, q, &l); code != http.StatusOK {
			t.Fatalf("%s: %d %s", q, code, msg)
		}
		ids, next := page(&l)
		got = append(got, ids...)
		pages++
		if cursor = next; cursor == "" || pages > maxPages {
			return got, pages
		}
	}
}

func TestStatsKeepRollupAfterRetention(t *testing.T) {
	ctx := context.Background()
	srv, pool := server(t)
	today := store.DayStart(time.Now())
	old := today.AddDate(0, 0, -40)
	if _, err := pool.Exec(ctx, `SELECT jetjob_create_run_partition($1)`, old); err != nil {
		t.Fatal(err)
	}
	// Day old: job 1, 30 SUCCEEDED (1..30 × 100 ms) and 10 FAILED (no
	// start); today: job 2, 5 RUNNING.
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, started_at, finished_at)
		SELECT 1, 'g1', 0, 'schedule', 'SUCCEEDED', $1::timestamptz + i * interval '1 minute',
			$1::timestamptz + i * interval '1 minute', $1::timestamptz + i * interval '1 minute' + i * interval '100 ms'
		FROM generate_series(1, 30) AS i
		UNION ALL SELECT 1, 'g1', 0, 'schedule', 'FAILED', $1::timestamptz + i * interval '1 second', NULL, NULL
		FROM generate_series(1, 10) AS i
		UNION ALL SELECT 2, 'g2', 0, 'manual', 'RUNNING', $2::timestamptz + i * interval '1 second', $2::timestamptz, NULL
		FROM generate_series(1, 5) AS i`, old, today); err != nil {
		t.Fatal(err)
	}
	m, err := retention.New(retention.Config{}, retention.Deps{Pool: pool, Log: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := m.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := "job_runs_p" + old.Format("20060102"); !slices.Contains(rep.Dropped, want) {
		t.Fatalf("round dropped %v, want %s among them", rep.Dropped, want)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE job_id = 1`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d runs of the dropped day left (%v)", n, err)
	}

	var st apiv1.Stats
	q := fmt.Sprintf("/api/v1/stats?from=%s&to=%s", old.Format(time.DateOnly), today.Format(time.DateOnly))
	if code, msg := get(t, srv, q, &st); code != http.StatusOK {
		t.Fatalf("stats: %d %s", code, msg)
	}
	byKey := map[string]apiv1.StatsRow{}
	for _, r := range st.Rows {
		byKey[fmt.Sprintf("%s/%d/%s", r.Day, r.JobID, r.Status)] = r
	}
	ok := byKey[old.Format(time.DateOnly)+"/1/SUCCEEDED"]
	if ok.Runs != 30 || ok.TimedRuns != 30 || ok.Source != "rollup" || ok.MaxMS == nil || *ok.MaxMS != 3000 || ok.P50MS == nil {
		t.Errorf("rolled-up SUCCEEDED row: %+v", ok)
	}
	if f := byKey[old.Format(time.DateOnly)+"/1/FAILED"]; f.Runs != 10 || f.TimedRuns != 0 || f.P50MS != nil || f.Source != "rollup" {
		t.Errorf("rolled-up FAILED row: %+v", f)
	}
	if r := byKey[today.Format(time.DateOnly)+"/2/RUNNING"]; r.Runs != 5 || r.Source != "live" || r.Group != "g2" {
		t.Errorf("today's live row: %+v", r)
	}
	if len(st.Rows) != 3 {
		t.Errorf("%d rows, want 3: %+v", len(st.Rows), st.Rows)
	}
	// Filters.
	if code, _ := get(t, srv, q+"&job=2", &st); code != http.StatusOK || len(st.Rows) != 1 || st.Rows[0].JobID != 2 {
		t.Errorf("job=2: %d %+v", code, st.Rows)
	}
	if code, _ := get(t, srv, q+"&group=g1", &st); code != http.StatusOK || len(st.Rows) != 2 {
		t.Errorf("group=g1: %d %+v", code, st.Rows)
	}
	for _, bad := range []string{"from=2026-13-01", "from=2026-11-22&to=2026-11-01", "job=x", "job=0", "group=no%20way",
		"from=2020-01-01&to=2026-01-01", "grp=g1", "to=yesterday"} {
		if code, msg := get(t, srv, "/api/v1/stats?"+bad, &st); code != http.StatusBadRequest || msg == "" {
			t.Errorf("stats?%s: %d %q, want 400 with a message", bad, code, msg)
		}
	}
}

type seedRun struct {
	id          int64
	job         int64
	group       string
	status      string
	trigger     string
	scheduledAt time.Time
}

func TestRunSearchPagesExactly(t *testing.T) {
	ctx := context.Background()
	srv, pool := server(t)
	base := store.DayStart(time.Now()).Add(-48 * time.Hour)
	// 600 runs over four days, several per scheduled time (ties break by id).
	rows, _ := pool.Query(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, attempt)
		SELECT i % 3 + 1, 'g' || (i % 3 + 1) % 2, 0,
			(ARRAY['schedule','schedule','retry','manual'])[i % 4 + 1],
			(ARRAY['SUCCEEDED','FAILED','SUCCEEDED','TIMED_OUT','SKIPPED'])[i % 5 + 1],
			$1::timestamptz + (i / 4) * interval '10 minutes', i
		FROM generate_series(0, 599) AS i
		RETURNING id, job_id, group_name, status, trigger_type, scheduled_at`, base)
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (seedRun, error) {
		var s seedRun
		err := r.Scan(&s.id, &s.job, &s.group, &s.status, &s.trigger, &s.scheduledAt)
		return s, err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b seedRun) int {
		if c := b.scheduledAt.Compare(a.scheduledAt); c != 0 {
			return c
		}
		return int(b.id - a.id)
	})
	from, to := base.Add(6*time.Hour), base.Add(60*time.Hour)
	cases := []struct {
		query string
		keep  func(seedRun) bool
	}{
		{"", func(seedRun) bool { return true }},
		{"job=2", func(s seedRun) bool { return s.job == 2 }},
		{"group=g0", func(s seedRun) bool { return s.group == "g0" }},
		{"status=FAILED,timed_out", func(s seedRun) bool { return s.status == "FAILED" || s.status == "TIMED_OUT" }},
		{"status=FAILED&status=SKIPPED&trigger_type=retry", func(s seedRun) bool {
			return (s.status == "FAILED" || s.status == "SKIPPED") && s.trigger == "retry"
		}},
		{"trigger_type=manual,retry&job=1", func(s seedRun) bool { return (s.trigger == "manual" || s.trigger == "retry") && s.job == 1 }},
		{"from=" + url.QueryEscape(from.Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339)), func(s seedRun) bool {
			return !s.scheduledAt.Before(from) && s.scheduledAt.Before(to)
		}},
		{"group=g1&status=SUCCEEDED&from=" + url.QueryEscape(from.Format(time.RFC3339)), func(s seedRun) bool {
			return s.group == "g1" && s.status == "SUCCEEDED" && !s.scheduledAt.Before(from)
		}},
	}
	for _, c := range cases {
		var want []int64
		for _, s := range all {
			if c.keep(s) {
				want = append(want, s.id)
			}
		}
		got, pages := cursorPages(t, srv, "/api/v1/runs?limit=7&"+c.query, 200, func(l *apiv1.RunList) ([]int64, string) {
			ids := make([]int64, 0, len(l.Runs))
			for _, r := range l.Runs {
				ids = append(ids, r.ID)
			}
			return ids, l.Cursor
		})
		if !slices.Equal(got, want) {
			t.Errorf("runs?%s: %d runs in %d pages, want %d (first got %v, want %v)", c.query, len(got), pages, len(want),
				got[:min(5, len(got))], want[:min(5, len(want))])
		}
	}

	// The per-job listing is the job's case of the search, paged by id.
	var ids []int64
	before := int64(0)
	for range 200 {
		var l apiv1.RunList
		if code, msg := get(t, srv, fmt.Sprintf("/api/v1/jobs/2/runs?limit=9&before=%d", before), &l); code != http.StatusOK {
			t.Fatalf("jobs/2/runs: %d %s", code, msg)
		}
		for _, r := range l.Runs {
			ids = append(ids, r.ID)
		}
		if before = l.Next; before == 0 {
			break
		}
	}
	var l apiv1.RunList
	get(t, srv, "/api/v1/runs?job=2&limit=1000", &l)
	var search []int64
	for _, r := range l.Runs {
		search = append(search, r.ID)
	}
	if !slices.Equal(ids, search) || len(ids) != 200 {
		t.Errorf("jobs/2/runs paged by before: %d runs, search: %d; want the same 200", len(ids), len(search))
	}

	for _, bad := range []string{"status=DONE", "trigger_type=cron", "from=yesterday", "to=2026-11-22", "limit=0", "limit=1001",
		"limit=x", "cursor=bm9wZQ", "cursor=%21%21", "job=-1", "group=a.b", "colour=red",
		"from=2026-11-22T00:00:00Z&to=2026-11-21T00:00:00Z"} {
		var l apiv1.RunList
		if code, msg := get(t, srv, "/api/v1/runs?"+bad, &l); code != http.StatusBadRequest || !strings.Contains(msg, strings.SplitN(bad, "=", 2)[0]) {
			t.Errorf("runs?%s: %d %q, want 400 naming the parameter", bad, code, msg)
		}
	}
}
