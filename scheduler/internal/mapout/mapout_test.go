package mapout

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/shared/wire"
)

// The outputs of a fire's 20 parts of about 60 KiB each come in pages of
// at most wire.MaxMapOutputsPage bytes, in part order, the last ones
// short; a part that set none gives null. Only a reduce run of the group
// that has not ended is given them.
func TestPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, st := pgtest.Store(t)
	job := pgtest.Job(t, st, "mr", "skip")
	at := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	var root, reduce int64
	// Written as the results applier writes them (runs/mapreduce.go).
	if err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at)
		VALUES ($1, 'g', 0, 'manual', 'SUCCEEDED', $2) RETURNING id`, job, at).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET shard_fire = id, map_reduce = id WHERE id = $1`, root); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 60<<10)
	const n = 20
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			shard_index, shard_total, shard_fire, map_item, output)
		SELECT $1, 'g', 0, 'map', 'SUCCEEDED', $2, i, $3, $4, '1', CASE WHEN i = 5 THEN NULL ELSE '"' || $5 || i || '"' END
		FROM generate_series(0, $3 - 1) AS i`, job, at.Add(time.Second), n, root, big); err != nil {
		t.Fatal(err)
	}
	// Part 7's failed first attempt is left behind by its retry.
	if _, err := pool.Exec(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at,
			shard_index, shard_total, shard_fire, map_item, output, attempt)
		VALUES ($1, 'g', 0, 'map', 'FAILED', $2, 7, $3, $4, '1', '"failed"', 1)`, job, at.Add(2*time.Second), n, root); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO job_runs (job_id, group_name, shard, trigger_type, status, scheduled_at, parent_run, map_reduce)
		VALUES ($1, 'g', 0, 'reduce', 'RUNNING', $2, $3, $3) RETURNING id`, job, at.Add(3*time.Second), root).Scan(&reduce); err != nil {
		t.Fatal(err)
	}
	var got []json.RawMessage
	pages := 0
	for len(got) < n {
		reply, err := Page(ctx, pool, "g", reduce, at.Add(3*time.Second), len(got))
		if err != nil {
			t.Fatal(err)
		}
		if reply.Total != n || len(reply.Outputs) == 0 {
			t.Fatalf("page %d: total %d, %d outputs", pages, reply.Total, len(reply.Outputs))
		}
		data, err := wire.EncodeControl(reply)
		if err != nil || len(data) > wire.MaxMapOutputsPage+1024 {
			t.Fatalf("page %d: %d bytes (%v)", pages, len(data), err)
		}
		got = append(got, reply.Outputs...)
		pages++
	}
	if pages != 3 || len(got) != n {
		t.Fatalf("%d outputs in %d pages, want %d in 3", len(got), pages, n)
	}
	for i, o := range got {
		want := `"` + big + strconv.Itoa(i) + `"`
		if i == 5 {
			want = "null"
		}
		if string(o) != want {
			t.Fatalf("output %d: %.20s…, want %.20s…", i, o, want)
		}
	}

	for name, c := range map[string]struct {
		group string
		id    int64
		at    time.Time
	}{
		"another group's":     {"h", reduce, at.Add(3 * time.Second)},
		"the root":            {"g", root, at},
		"a part":              {"g", root + 1, at.Add(time.Second)},
		"the wrong partition": {"g", reduce, at},
	} {
		if _, err := Page(ctx, pool, c.group, c.id, c.at, 0); !errors.Is(err, errRefused) {
			t.Errorf("%s run: %v, want refused", name, err)
		}
	}
	if _, err := pool.Exec(ctx, `UPDATE job_runs SET status = 'SUCCEEDED' WHERE id = $1`, reduce); err != nil {
		t.Fatal(err)
	}
	if _, err := Page(ctx, pool, "g", reduce, at.Add(3*time.Second), 0); !errors.Is(err, errRefused) {
		t.Errorf("an ended reduce run: %v, want refused", err)
	}
}
