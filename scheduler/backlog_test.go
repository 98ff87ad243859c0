package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
)

// A group whose triggers nobody takes shows its backlog in the API and the
// metrics, with an age that grows; the scheduler warns once when the oldest
// waits longer than the misfire threshold, however many samples follow;
// once a worker (one slot, a slow handler) drains the group, the backlog
// is 0 and the recovery is logged once.
func TestBacklogIsVisible(t *testing.T) {
	t.Parallel()
	const (
		n         = 6
		threshold = time.Second
		interval  = 100 * time.Millisecond
	)
	obs, logs := observer.New(zapcore.InfoLevel)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("noop", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) {
		c.Logger = zap.New(zapcore.NewTee(c.Logger.Core(), obs))
		c.Planner.MisfireThreshold = threshold
		c.Backlog.Interval = interval
	})
	ctx := context.Background()
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		job := createJob(t, sys.api, apiv1.JobSpec{Group: "b", Name: fmt.Sprintf("slow%d", i), Handler: "slow", ScheduleType: "none"})
		trigger(t, sys.api, job.ID, nil)
	}
	backlogOf := func() apiv1.GroupBacklog {
		l, err := sys.api.ListWorkers(ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Groups) != 1 || l.Groups[0].Group != "b" {
			t.Fatalf("groups %+v, want group b alone", l.Groups)
		}
		return l.Groups[0]
	}

	// No worker of group b: every trigger waits, and the wait grows.
	var first apiv1.GroupBacklog
	testwait.Eventually(t, 20*time.Second, "the triggers to be pending", func() bool {
		first = backlogOf()
		return first.Pending == n && first.SampledAt != nil
	})
	if first.LiveWorkers != 0 || first.Slots != 0 || first.InFlight != 0 || first.OldestPendingAt == nil {
		t.Errorf("backlog without workers %+v: want 0 live workers, 0 slots, 0 in flight, an oldest pending time", first)
	}
	testwait.Eventually(t, 20*time.Second, "the oldest pending age to grow past the threshold", func() bool {
		g := backlogOf()
		return g.Pending == n && g.OldestPendingSeconds > first.OldestPendingSeconds+threshold.Seconds()
	})
	m := scrape(t, sys.metrics)
	if m[`jetjob_group_pending_triggers{group="b"}`] != n || m[`jetjob_group_oldest_pending_seconds{group="b"}`] <= threshold.Seconds() {
		t.Errorf("metrics of group b: pending %v, oldest pending %v s; want %d and over %s",
			m[`jetjob_group_pending_triggers{group="b"}`], m[`jetjob_group_oldest_pending_seconds{group="b"}`], n, threshold)
	}

	behind := func() []observer.LoggedEntry {
		return logs.FilterMessageSnippet("is falling behind").FilterField(zap.String("group", "b")).All()
	}
	caughtUp := func() []observer.LoggedEntry {
		return logs.FilterMessageSnippet("caught up").FilterField(zap.String("group", "b")).All()
	}
	testwait.Eventually(t, 10*time.Second, "the falling-behind warning", func() bool { return len(behind()) > 0 })
	// Many samples later, still one warning.
	warnedAt := behind()[0].Time
	testwait.Eventually(t, 10*time.Second, "more samples", func() bool {
		g := backlogOf()
		return g.SampledAt.After(warnedAt.Add(10 * interval))
	})
	if got := behind(); len(got) != 1 || got[0].Level != zapcore.WarnLevel {
		t.Fatalf("%d falling-behind log entries (first at %s), want one warning", len(got), got[0].Level)
	}
	if len(caughtUp()) != 0 {
		t.Fatalf("caught up while nothing ran: %+v", caughtUp())
	}
	if len(logs.FilterMessageSnippet("is falling behind").FilterField(zap.String("group", "g")).All()) != 0 {
		t.Error("group g, whose worker keeps up, was reported falling behind")
	}

	// A worker with one slot and a slow handler drains the group.
	nc := sys.connect(t)
	w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: nc, Group: "b", Concurrency: 1, AbandonGrace: 500 * time.Millisecond,
		Logger: zaptest.NewLogger(t).Named("worker-b")})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("slow", func(ctx context.Context, _ *worker.Job) error {
		select {
		case <-time.After(150 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("worker b: %v", err)
		}
	})
	var sawRunning bool
	testwait.Eventually(t, 30*time.Second, "the backlog to be drained", func() bool {
		g := backlogOf()
		if g.InFlight == 1 && g.LiveWorkers == 1 && g.Slots == 1 {
			sawRunning = true
		}
		return g.Pending == 0 && g.InFlight == 0 && g.OldestPendingSeconds == 0 && g.LiveWorkers == 1
	})
	if !sawRunning {
		t.Error("never saw the worker's one slot busy (1 in flight, 1 live worker, 1 slot) while it drained the group")
	}
	testwait.Eventually(t, 10*time.Second, "the recovery to be logged", func() bool { return len(caughtUp()) > 0 })
	got := caughtUp()
	if len(got) != 1 || got[0].Level != zapcore.InfoLevel || len(behind()) != 1 {
		t.Errorf("after draining: %d caught-up entries (first at %s), %d falling-behind warnings; want one of each, caught-up at info",
			len(got), got[0].Level, len(behind()))
	}
	m = scrape(t, sys.metrics)
	if v, ok := m[`jetjob_group_pending_triggers{group="b"}`]; !ok || v != 0 {
		t.Errorf("pending triggers metric of group b after draining: %v (present %v), want 0", v, ok)
	}
	testwait.Eventually(t, 10*time.Second, "every run of group b to succeed", func() bool {
		rs, err := sys.api.SearchRuns(ctx, client.SearchRunsOptions{Group: "b", Statuses: []string{"SUCCEEDED"}})
		return err == nil && len(rs.Runs) == n
	})
}

// Label values are quoted and may hold braces (route="/api/v1/jobs/{id}").
var metricLine = regexp.MustCompile(`^(jetjob_[a-z_]+(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?) (\S+)$`)

// scrape reads the scheduler's jetjob_* metrics from its metrics
// listener (base), keyed by name and labels.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s/metrics: %d %s", base, resp.StatusCode, body)
	}
	out := map[string]float64{}
	for _, line := range regexp.MustCompile(`\r?\n`).Split(string(body), -1) {
		if m := metricLine.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err == nil {
				out[m[1]] = v
			}
		}
	}
	return out
}
