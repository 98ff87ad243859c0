package main

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// --max-concurrency sets a concurrent job's cap; moving the job to another
// block strategy drops it (the server refuses a cap without concurrent);
// a negative cap is a usage error.
func TestJobsMaxConcurrency(t *testing.T) {
	r := isolatedAPI(t, "demo")
	job := adminJSON[apiv1.Job](t, r, "jobs", "create",
		"--group", "demo", "--name", "hello", "--handler", "hello", "--block", "concurrent", "--max-concurrency", "3")
	if job.BlockStrategy != "concurrent" || job.MaxConcurrency != 3 {
		t.Fatalf("created %s with max_concurrency %d, want concurrent with 3", job.BlockStrategy, job.MaxConcurrency)
	}
	res := must(t, r.as(t, bootstrapToken, "", "jobs", "get", "1"), "get")
	if !strings.Contains(res.stdout, "Max concurrency: 3\n") {
		t.Errorf("jobs get printed\n%s\nwithout the cap", res.stdout)
	}
	job = adminJSON[apiv1.Job](t, r, "jobs", "update", "1", "--block", "serial")
	if job.BlockStrategy != "serial" || job.MaxConcurrency != 0 {
		t.Fatalf("after --block serial: %s with max_concurrency %d, want serial without a cap", job.BlockStrategy, job.MaxConcurrency)
	}
	res = r.as(t, bootstrapToken, "", "jobs", "update", "1", "--max-concurrency", "2")
	if res.code != exitError || !strings.Contains(res.stderr, "max_concurrency is only allowed with block_strategy concurrent") {
		t.Errorf("cap on a serial job: exit %d, stderr %q; want the server's refusal naming max_concurrency", res.code, res.stderr)
	}
	res = r.as(t, bootstrapToken, "", "jobs", "update", "1", "--block", "concurrent", "--max-concurrency", "-1")
	if res.code != exitUsage || !strings.Contains(res.stderr, "--max-concurrency -1: must not be negative") {
		t.Errorf("negative cap: exit %d, stderr %q; want a usage error", res.code, res.stderr)
	}
}
