package main

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// --shards sets a job's fixed shard count, shown by jobs get; 0 drops it;
// with --route sharding_broadcast the server refuses it; out of range is a
// usage error.
func TestJobsShards(t *testing.T) {
	r := isolatedAPI(t, "demo")
	job := adminJSON[apiv1.Job](t, r, "jobs", "create", "--group", "demo", "--name", "split", "--handler", "hello", "--shards", "10")
	if job.Sharding == nil || job.Sharding.Total != 10 {
		t.Fatalf("created with sharding %+v, want total 10", job.Sharding)
	}
	res := must(t, r.as(t, bootstrapToken, "", "jobs", "get", "1"), "get")
	if !strings.Contains(res.stdout, "10 parts per fire\n") {
		t.Errorf("jobs get printed\n%s\nwithout the shard count", res.stdout)
	}
	res = r.as(t, bootstrapToken, "", "jobs", "update", "1", "--route", "sharding_broadcast")
	if res.code != exitError || !strings.Contains(res.stderr, "refused with route_strategy sharding_broadcast") {
		t.Errorf("shards with a broadcast: exit %d, stderr %q; want the server's refusal", res.code, res.stderr)
	}
	job = adminJSON[apiv1.Job](t, r, "jobs", "update", "1", "--shards", "0")
	if job.Sharding != nil {
		t.Errorf("after --shards 0: sharding %+v, want none", job.Sharding)
	}
	res = r.as(t, bootstrapToken, "", "jobs", "update", "1", "--shards", "1001")
	if res.code != exitUsage || !strings.Contains(res.stderr, "--shards 1001: want 2 to 1000") {
		t.Errorf("1001 shards: exit %d, stderr %q; want a usage error", res.code, res.stderr)
	}
}
