package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

func TestClusterPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v := e.browser().login("viewer")

	// No scheduler heartbeats: the page says nothing is being planned.
	p := v.open("/cluster")
	mustContain(t, p, "No live scheduler", `id="shards-table"`, `data-shards="0-`, "No readiness checks reported")

	// One live scheduler holding shard 0; the rest orphaned; NATS down.
	if _, err := e.pool.Exec(ctx, `INSERT INTO schedulers (id, host, expires_at) VALUES ('sched-1', 'host-1', now() + interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `UPDATE scheduler_shards SET owner = 'sched-1', epoch = 7, expires_at = now() + interval '10 seconds' WHERE shard = 0`); err != nil {
		t.Fatal(err)
	}
	e.deps = []apiv1.Dependency{{Name: "postgresql", OK: true}, {Name: "nats", OK: false, Error: "nats: no servers available"}}
	p = v.get("/cluster")
	mustContain(t, p, `data-scheduler="sched-1"`, "host-1", `<td>7</td>`, `id="dep-nats"`, "not ready",
		"nats: no servers available", `id="dep-postgresql"`, "as seen by sched-test")
	var shards int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM scheduler_shards`).Scan(&shards); err != nil {
		t.Fatal(err)
	}
	if shards < 2 {
		t.Fatalf("%d shards; the test needs orphans", shards)
	}
	mustContain(t, p, `<span class="st-bad">none</span>`)
	// The shards are one row per owner's range, not one row per shard.
	mustContain(t, p, `<tr data-shards="0-0">`, fmt.Sprintf(`<tr data-shards="1-%d">`, shards-1),
		fmt.Sprintf("<td>1–%d (%d)</td>", shards-1, shards-1))
	if n := strings.Count(p.Body, "<tr data-shards="); n != 2 {
		t.Fatalf("%d shard rows, want 2 (sched-1's shard 0, the orphans)", n)
	}

	// Signed out, the page sends the browser to sign in.
	if p := e.browser().get("/cluster"); p.Code != http.StatusSeeOther {
		t.Fatalf("signed out: %d", p.Code)
	}
}
