package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// fireOf triggers job by hand with params and returns the fire's
// scheduled time, which all its broadcast parts share.
func fireOf(t *testing.T, c *cluster, job int64, params string) time.Time {
	t.Helper()
	r := trigger(t, c.api, job, &params)
	return r.ScheduledAt
}

// partsOf returns the runs of job's fire at, by shard index.
func partsOf(t *testing.T, c *cluster, job int64, at time.Time) []apiv1.Run {
	var out []apiv1.Run
	for _, r := range runsOf(t, c.api, job) {
		if r.ScheduledAt.Equal(at) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b apiv1.Run) int { return a.ShardIndex - b.ShardIndex })
	return out
}

// waitParts waits until the fire at of job has n parts, all in status.
func waitParts(t *testing.T, c *cluster, job int64, at time.Time, n int, status string) []apiv1.Run {
	t.Helper()
	var parts []apiv1.Run
	testwait.Eventually(t, 40*time.Second, fmt.Sprintf("%d parts of job %d's fire %s %s", n, job, at.Format("15:04:05.000"), status), func() bool {
		parts = partsOf(t, c, job, at)
		if len(parts) != n {
			return false
		}
		for _, p := range parts {
			if p.Status != status {
				return false
			}
		}
		return true
	})
	return parts
}

// maxOverlap is the largest number of runs whose [started_at, finished_at]
// intervals overlap at one instant. A run starting exactly when another
// ends does not overlap it.
func maxOverlap(t *testing.T, runs []apiv1.Run) int {
	t.Helper()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		if r.StartedAt == nil || r.FinishedAt == nil {
			t.Fatalf("run %d (%s) lacks started_at or finished_at", r.ID, r.Status)
		}
		edges = append(edges, edge{*r.StartedAt, 1}, edge{*r.FinishedAt, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends first
	})
	n, top := 0, 0
	for _, e := range edges {
		n += e.delta
		top = max(top, n)
	}
	return top
}

func broadcastJob(t *testing.T, c *cluster, name, block string) int64 {
	t.Helper()
	j := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: name, Handler: "who",
		ScheduleType: "none", RouteStrategy: "sharding_broadcast", BlockStrategy: block})
	return j.ID
}

// The parts of one sharding-broadcast fire run side by side whatever the
// block strategy: the strategy applies between fires, part i of a fire
// against part i of the fire before (worker/internal/joblock).
func TestBroadcastPartsNeverBlockEachOther(t *testing.T) {
	t.Parallel()
	c, _ := recordersCluster(t, "w1", "w2", "w3")

	t.Run("serial", func(t *testing.T) {
		job := broadcastJob(t, c, "bc-serial", "serial")
		first := fireOf(t, c, job, "5s")
		// The next fire once the first one's parts hold their locks: two
		// triggers that reach a free lock together may take it in either
		// order (serial promises no overlap, and fire order among those
		// that wait: docs/jobs.md), so firing both at once would test luck.
		waitParts(t, c, job, first, 3, "RUNNING")
		// Its parts run until all three have started (see cover_early).
		next := fireOf(t, c, job, together)
		a := waitParts(t, c, job, first, 3, "SUCCEEDED")
		b := waitParts(t, c, job, next, 3, "SUCCEEDED")
		for _, fire := range [][]apiv1.Run{a, b} {
			if n := maxOverlap(t, fire); n != 3 {
				t.Errorf("fire %s: at most %d of its 3 parts ran at once, want all 3: %s",
					fire[0].ScheduledAt.Format("15:04:05.000"), n, spans(fire))
			}
		}
		// The next fire still waits, part by part, for the one before.
		for i := range a {
			if b[i].StartedAt.Before(*a[i].FinishedAt) {
				t.Errorf("part %d of the next fire started at %s, before part %d of the first ended at %s",
					i, b[i].StartedAt.Format("15:04:05.000"), i, a[i].FinishedAt.Format("15:04:05.000"))
			}
		}
	})

	t.Run("discard_later", func(t *testing.T) {
		job := broadcastJob(t, c, "bc-discard", "discard_later")
		first := fireOf(t, c, job, "5s")
		waitParts(t, c, job, first, 3, "RUNNING")
		next := fireOf(t, c, job, "")
		b := waitParts(t, c, job, next, 3, "DISCARDED")
		a := waitParts(t, c, job, first, 3, "SUCCEEDED")
		if n := maxOverlap(t, a); n != 3 {
			t.Errorf("at most %d of the first fire's 3 parts ran at once, want all 3: %s", n, spans(a))
		}
		if !strings.Contains(b[0].Message, "still active") {
			t.Errorf("DISCARDED message %q does not say why", b[0].Message)
		}
	})

	t.Run("cover_early", func(t *testing.T) {
		job := broadcastJob(t, c, "bc-cover", "cover_early")
		first := fireOf(t, c, job, "1h")
		// All three RUNNING at once: no part covered a sibling.
		waitParts(t, c, job, first, 3, "RUNNING")
		// Each covering part runs until all three have started: that they
		// then overlap is the product's doing (no part covered or waited
		// for a sibling), not the luck of a short sleep.
		next := fireOf(t, c, job, together)
		b := waitParts(t, c, job, next, 3, "SUCCEEDED")
		a := waitParts(t, c, job, first, 3, "CANCELLED")
		for i := range a {
			if !strings.Contains(a[i].Message, "cover_early") {
				t.Errorf("part %d: CANCELLED message %q does not name the strategy", i, a[i].Message)
			}
			if b[i].StartedAt.Before(*a[i].FinishedAt) {
				t.Errorf("part %d of the covering fire started before part %d of the covered one ended", i, i)
			}
		}
		if n := maxOverlap(t, b); n != 3 {
			t.Errorf("at most %d of the covering fire's 3 parts ran at once, want all 3: %s", n, spans(b))
		}
	})
}

// spans describes runs' intervals for a failure message.
func spans(runs []apiv1.Run) string {
	var s []string
	for _, r := range runs {
		if r.StartedAt != nil && r.FinishedAt != nil {
			s = append(s, fmt.Sprintf("run %d part %d [%s, %s]", r.ID, r.ShardIndex,
				r.StartedAt.Format("15:04:05.000"), r.FinishedAt.Format("15:04:05.000")))
		}
	}
	return strings.Join(s, ", ")
}

// Block strategy concurrent: runs of a job firing every second with a 3 s
// handler overlap; with max_concurrency 2 never more than two at once
// anywhere in the group, and none is lost.
func TestConcurrentBlockStrategy(t *testing.T) {
	t.Parallel()
	c, _ := recordersCluster(t, "w1", "w2")
	ctx := context.Background()
	spec := func(name string, maxConc int) apiv1.JobSpec {
		return apiv1.JobSpec{Group: "g", Name: name, Handler: "who", Params: "3s", ScheduleType: "cron",
			ScheduleExpr: "@every 1s", MisfirePolicy: "fire_all", BlockStrategy: "concurrent", MaxConcurrency: maxConc}
	}
	free := createJob(t, c.api, spec("free", 0))
	capped := createJob(t, c.api, spec("capped", 2))
	if capped.MaxConcurrency != 2 {
		t.Errorf("created job has max_concurrency %d, want 2", capped.MaxConcurrency)
	}
	succeeded := func(job int64) []apiv1.Run {
		var out []apiv1.Run
		for _, r := range runsOf(t, c.api, job) {
			if r.Status == "SUCCEEDED" {
				out = append(out, r)
			}
		}
		return out
	}
	testwait.Eventually(t, 60*time.Second, "4 SUCCEEDED runs of the uncapped job", func() bool { return len(succeeded(free.ID)) >= 4 })
	if _, err := c.api.DisableJob(ctx, free.ID); err != nil {
		t.Fatal(err)
	}
	if got := succeeded(free.ID); maxOverlap(t, got) < 2 {
		t.Errorf("uncapped concurrent runs never overlapped: %s", spans(got))
	}

	testwait.Eventually(t, 90*time.Second, "6 SUCCEEDED runs of the capped job", func() bool { return len(succeeded(capped.ID)) >= 6 })
	if _, err := c.api.DisableJob(ctx, capped.ID); err != nil {
		t.Fatal(err)
	}
	// Every fire that reached a worker ends, and SUCCEEDED: the runs
	// beyond the cap waited for a slot, none was dropped.
	var runs []apiv1.Run
	testwait.Eventually(t, 90*time.Second, "every run of the capped job terminal", func() bool {
		runs = runsOf(t, c.api, capped.ID)
		return len(finished(runs)) == len(runs)
	})
	for _, r := range runs {
		if r.Status != "SUCCEEDED" {
			t.Errorf("capped job: run %d ended %s (%s), want SUCCEEDED", r.ID, r.Status, r.Message)
		}
	}
	if n := maxOverlap(t, runs); n != 2 {
		t.Errorf("capped job (max_concurrency 2): at most %d runs at once, want exactly 2: %s", n, spans(runs))
	}
}

// max_concurrency is validated: not negative, and only with block strategy
// concurrent; the 400 names the field.
func TestMaxConcurrencyValidated(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4)
	ctx := context.Background()
	base := apiv1.JobSpec{Group: "g", Name: "v", Handler: "h", ScheduleType: "none"}
	bad := func(name string, spec apiv1.JobSpec, want string) {
		t.Helper()
		_, err := c.api.CreateJob(ctx, spec)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, want) {
			t.Errorf("%s: error %v, want a 400 saying %q", name, err, want)
		}
	}
	s := base
	s.MaxConcurrency = 2
	bad("cap with the default strategy", s, "max_concurrency is only allowed with block_strategy concurrent")
	s.BlockStrategy = "discard_later"
	bad("cap with discard_later", s, "max_concurrency is only allowed with block_strategy concurrent (got discard_later)")
	s.BlockStrategy, s.MaxConcurrency = "concurrent", -1
	bad("negative cap", s, "max_concurrency -1")
	s.BlockStrategy = "parallel"
	s.MaxConcurrency = 0
	bad("unknown strategy", s, `unknown block_strategy "parallel"`)

	s.BlockStrategy, s.MaxConcurrency = "concurrent", 3
	j := createJob(t, c.api, s)
	if got, err := c.api.GetJob(ctx, j.ID); err != nil || got.MaxConcurrency != 3 || got.BlockStrategy != "concurrent" {
		t.Fatalf("stored job: %+v, %v; want concurrent with max_concurrency 3", got, err)
	}
	// Switching to serial while keeping the cap is refused; dropping it works.
	upd := j.JobSpec
	upd.BlockStrategy, upd.Version = "serial", j.Version
	_, err := c.api.UpdateJob(ctx, j.ID, upd)
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "max_concurrency") {
		t.Errorf("update to serial keeping the cap: %v, want a 400 naming max_concurrency", err)
	}
	upd.MaxConcurrency = 0
	if got, err := c.api.UpdateJob(ctx, j.ID, upd); err != nil || got.MaxConcurrency != 0 {
		t.Errorf("update to serial without the cap: %+v, %v", got, err)
	}
}
