package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/api"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/store"
)

func TestSchedulePreview(t *testing.T) {
	srv, _ := server(t)
	var p apiv1.SchedulePreview
	q := "/api/v1/schedule/preview?type=cron&expr=" + url.QueryEscape("0 30 9 * * *") + "&timezone=Asia/Tokyo&n=3"
	if code, msg := get(t, srv, q, &p); code != http.StatusOK {
		t.Fatalf("%s: %d %s", q, code, msg)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if len(p.Times) != 3 || p.Timezone != "Asia/Tokyo" || p.Type != "cron" {
		t.Fatalf("preview: %+v", p)
	}
	for i, at := range p.Times {
		if l := at.In(tokyo); l.Hour() != 9 || l.Minute() != 30 || l.Second() != 0 || !at.After(time.Now().Add(-time.Minute)) {
			t.Errorf("fire %d at %s (%s in Tokyo): want 09:30:00 Tokyo time, from now on", i, at, l)
		}
		if i > 0 && at.Sub(p.Times[i-1]) != 24*time.Hour {
			t.Errorf("fires %d and %d are %s apart, want a day", i-1, i, at.Sub(p.Times[i-1]))
		}
	}
	// Defaults: 10 fires, UTC; none has no fires at all.
	if code, _ := get(t, srv, "/api/v1/schedule/preview?type=fix_rate&expr=30s", &p); code != http.StatusOK ||
		len(p.Times) != 10 || p.Timezone != "UTC" || p.Times[9].Sub(p.Times[0]) != 270*time.Second {
		t.Errorf("fix_rate 30s: %d %+v", code, p)
	}
	if code, _ := get(t, srv, "/api/v1/schedule/preview?type=none", &p); code != http.StatusOK || p.Times == nil || len(p.Times) != 0 {
		t.Errorf("none: %d %+v, want an empty list", code, p)
	}
	// A bad schedule is a 400 naming the bad part.
	for bad, want := range map[string]string{
		"type=cron&expr=" + url.QueryEscape("0 61 * * * *"): "61",
		"type=cron&expr=" + url.QueryEscape("* * * * *") + "&timezone=Mars/Olympus": "Mars/Olympus",
		"type=fix_rate&expr=soon":      "soon",
		"type=weekly&expr=1":           "weekly",
		"expr=1s":                      "type",
		"type=none&n=0":                "n",
		"type=none&n=51":               "n",
		"type=none&count=3":            "count",
		"type=once&expr=next%20monday": "next monday",
	} {
		if code, msg := get(t, srv, "/api/v1/schedule/preview?"+bad, &p); code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("preview?%s: %d %q, want 400 naming %q", bad, code, msg, want)
		}
	}
}

func TestClusterView(t *testing.T) {
	ctx := context.Background()
	srv, pool := serverWith(t, func(c *api.Config) {
		c.SchedulerID = "s1"
		c.Dependencies = func(context.Context) []apiv1.Dependency {
			return []apiv1.Dependency{{Name: "postgresql", OK: true}, {Name: "nats", Error: "NATS not connected (RECONNECTING)"}}
		}
	})
	// s1 holds shards 0 and 1, s2 shard 2; s3's heartbeat and its lease on
	// shard 3 expired a minute ago: shard 3 is orphaned.
	if _, err := pool.Exec(ctx, `
		INSERT INTO schedulers (id, host, expires_at) VALUES
			('s1', 'h1', now() + interval '10 s'), ('s2', 'h2', now() + interval '10 s'), ('s3', 'h3', now() - interval '1 min');
		UPDATE scheduler_shards SET owner = 's1', epoch = 4, expires_at = now() + interval '10 s' WHERE shard IN (0, 1);
		UPDATE scheduler_shards SET owner = 's2', epoch = 7, expires_at = now() + interval '10 s' WHERE shard = 2;
		UPDATE scheduler_shards SET owner = 's3', epoch = 9, expires_at = now() - interval '1 min' WHERE shard = 3;
		INSERT INTO job_groups (name) VALUES ('g');`); err != nil {
		t.Fatal(err)
	}
	// Shard 0: two enabled jobs planned ahead and a disabled one long
	// overdue (not planned, and not lag); shard 3: a job whose fire 90 s
	// ago was never planned.
	if _, err := pool.Exec(ctx, `INSERT INTO jobs (group_name, name, handler, schedule_type, misfire_policy, route_strategy,
			block_strategy, shard, enabled, next_fire_at)
		VALUES ('g', 'a', 'h', 'cron', 'skip', 'any', 'serial', 0, true, now() + interval '20 s'),
			('g', 'b', 'h', 'cron', 'skip', 'any', 'serial', 0, true, NULL),
			('g', 'c', 'h', 'cron', 'skip', 'any', 'serial', 0, false, now() - interval '1 day'),
			('g', 'd', 'h', 'cron', 'skip', 'any', 'serial', 3, true, now() - interval '90 s')`); err != nil {
		t.Fatal(err)
	}
	var c apiv1.Cluster
	if code, msg := get(t, srv, "/api/v1/cluster", &c); code != http.StatusOK {
		t.Fatalf("cluster: %d %s", code, msg)
	}
	if c.ShardCount != store.DefaultShardCount || len(c.Shards) != c.ShardCount || c.AnsweredBy != "s1" {
		t.Fatalf("cluster: %d shards of %d, answered by %q", len(c.Shards), c.ShardCount, c.AnsweredBy)
	}
	var ids []string
	for _, s := range c.Schedulers {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{"s1", "s2"}) || !slices.Equal(c.Schedulers[0].Shards, []int{0, 1}) ||
		!slices.Equal(c.Schedulers[1].Shards, []int{2}) || c.Schedulers[0].Host != "h1" {
		t.Errorf("schedulers: %+v, want s1 (0, 1) and s2 (2) only", c.Schedulers)
	}
	s0, s2, s3, s5 := c.Shards[0], c.Shards[2], c.Shards[3], c.Shards[5]
	if s0.Owner != "s1" || s0.Epoch != 4 || s0.Jobs != 2 || s0.PlanningLagSeconds != 0 || s0.ExpiresAt.Before(time.Now()) {
		t.Errorf("shard 0: %+v, want s1's at epoch 4, 2 enabled jobs, no lag", s0)
	}
	if s2.Owner != "s2" || s2.Epoch != 7 || s2.Jobs != 0 {
		t.Errorf("shard 2: %+v", s2)
	}
	if s3.Owner != "" || s3.Epoch != 9 || s3.Jobs != 1 || s3.PlanningLagSeconds < 90 || s3.PlanningLagSeconds > 150 {
		t.Errorf("shard 3: %+v, want no live owner and a planning lag of about 90 s", s3)
	}
	if s5.Shard != 5 || s5.Owner != "" || !s5.ExpiresAt.IsZero() || s5.Epoch != 0 {
		t.Errorf("shard 5, never held: %+v", s5)
	}
	if len(c.Ready) != 2 || !c.Ready[0].OK || c.Ready[1].OK || c.Ready[1].Name != "nats" || c.Ready[1].Error == "" {
		t.Errorf("ready: %+v", c.Ready)
	}

	// Without Dependencies, the readiness check is one entry.
	srv, _ = serverWith(t, func(c *api.Config) {
		c.Ready = func(context.Context) error { return errors.New("starting") }
	})
	if code, _ := get(t, srv, "/api/v1/cluster", &c); code != http.StatusOK || len(c.Ready) != 1 || c.Ready[0].OK || c.Ready[0].Error != "starting" {
		t.Errorf("cluster with Ready only: %d %+v", code, c.Ready)
	}
	if code, msg := get(t, srv, "/api/v1/cluster?shard=1", &c); code != http.StatusBadRequest || !strings.Contains(msg, "shard") {
		t.Errorf("cluster?shard=1: %d %q, want 400 naming shard", code, msg)
	}
}
