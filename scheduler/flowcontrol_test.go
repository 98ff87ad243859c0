package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/scheduler/internal/planner"
	"github.com/jetjob/jetjob/worker"
)

// groupFlow reads group g's flow state from GET /groups.
func groupFlow(t *testing.T, api *client.Client) apiv1.GroupFlow {
	t.Helper()
	list, err := api.ListGroups(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range list.Groups {
		if g.Name == "g" && g.Flow != nil {
			return *g.Flow
		}
	}
	t.Fatalf("GET /groups has no flow state for group g: %+v", list.Groups)
	return apiv1.GroupFlow{}
}

// waitPlannedPast waits for a planning pass of the job's shard that
// planned past at plus the window: every fire of the job up to then has
// been planned or left out.
func (s *system) waitPlannedPast(t *testing.T, job int64, at time.Time) {
	t.Helper()
	shard := int(job % 4) // startSystem's ShardCount
	s.signals.Planner.ShardPlanned.WaitFor(t, 30*time.Second, fmt.Sprintf("a pass of shard %d past %s", shard, at),
		func(p planner.Pass) bool { return p.Shard == shard && p.At.After(at.Add(3*time.Second)) })
}

// A group paused with a note starts no run of its jobs and refuses manual
// triggers (409) unless forced; resumed, the fires its jobs missed follow
// each job's misfire policy as for a re-enabled job: skip records them
// SKIPPED naming the pause, fire_once runs the newest, fire_all runs all.
// Both changes are audited with their notes.
func TestGroupPauseResumeByMisfirePolicy(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noopWorker)
	ctx := context.Background()
	newest := time.Now().UTC().Add(-2 * time.Hour).Truncate(time.Minute)
	daily := fmt.Sprintf("0 %d %d * * *", newest.Minute(), newest.Hour())
	jobs := map[string]*apiv1.Job{}
	for _, mp := range []string{"skip", "fire_once", "fire_all"} {
		jobs[mp] = createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "daily-" + mp, Handler: "noop",
			ScheduleType: "cron", ScheduleExpr: daily, MisfirePolicy: mp})
	}
	ticker := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "ticker", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 1s", MisfirePolicy: "skip"})
	testwait.Eventually(t, 30*time.Second, "the ticker to run", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED'`, ticker.ID) > 0
	})

	g, err := sys.api.SetGroupFlow(ctx, "g", "pause", apiv1.GroupFlowRequest{Note: "db upgrade"})
	if err != nil {
		t.Fatal(err)
	}
	if f := g.Flow; f == nil || f.State != "paused" || f.Note != "db upgrade" || f.By == "" || f.At == nil {
		t.Fatalf("paused group answers flow %+v, want paused with the note, who and when", f)
	}
	if f := groupFlow(t, sys.api); f.State != "paused" || f.Note != "db upgrade" {
		t.Fatalf("GET /groups shows %+v, want paused with the note", f)
	}
	pausedAt := *g.Flow.At

	_, err = sys.api.TriggerJobWith(ctx, jobs["skip"].ID, apiv1.TriggerRequest{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusConflict || !strings.Contains(apiErr.Message, "paused") {
		t.Fatalf("manual trigger while paused: %v, want 409 saying the group is paused", err)
	}
	forced, err := sys.api.TriggerJobWith(ctx, jobs["skip"].ID, apiv1.TriggerRequest{Force: true})
	if err != nil {
		t.Fatalf("forced trigger while paused: %v", err)
	}
	testwait.Eventually(t, 30*time.Second, "the forced run to succeed", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'SUCCEEDED'`, forced.ID) == 1
	})

	// Planning went on past the pause without a run of the group's jobs.
	sys.waitPlannedPast(t, ticker.ID, pausedAt)
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE group_name = 'g' AND scheduled_at > $1
		AND trigger_type <> 'manual'`, pausedAt); n != 0 {
		t.Fatalf("%d runs of group g planned after its pause at %s, want none", n, pausedAt)
	}

	// The pause lasts four days (set through the database): the daily jobs
	// miss the fires of three days ago to today.
	if _, err := sys.pool.Exec(ctx, `UPDATE jobs SET next_fire_at = $2 WHERE id = ANY($1)`,
		[]int64{jobs["skip"].ID, jobs["fire_once"].ID, jobs["fire_all"].ID}, newest.AddDate(0, 0, -3)); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.pool.Exec(ctx, `UPDATE job_groups SET flow_at = $1 WHERE name = 'g'`, newest.AddDate(0, 0, -4)); err != nil {
		t.Fatal(err)
	}
	resumeAt := time.Now()
	if g, err = sys.api.SetGroupFlow(ctx, "g", "resume", apiv1.GroupFlowRequest{Note: "upgrade done"}); err != nil {
		t.Fatal(err)
	}
	if g.Flow == nil || g.Flow.State != "active" {
		t.Fatalf("resumed group answers flow %+v, want active", g.Flow)
	}

	succeeded := func(job int64) int {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger_type = 'misfire' AND status = 'SUCCEEDED'`, job)
	}
	// The skip job may be planned in another pass than the others (CI once
	// looked before): its SKIPPED run is waited for too.
	testwait.Eventually(t, 30*time.Second, "fire_all's 4 missed fires and fire_once's newest to run, skip's to be recorded", func() bool {
		return succeeded(jobs["fire_all"].ID) == 4 && succeeded(jobs["fire_once"].ID) == 1 &&
			sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SKIPPED'`, jobs["skip"].ID) > 0
	})
	var ranAt time.Time
	if err := sys.pool.QueryRow(ctx, `SELECT scheduled_at FROM job_runs WHERE job_id = $1 AND trigger_type = 'misfire'`,
		jobs["fire_once"].ID).Scan(&ranAt); err != nil {
		t.Fatal(err)
	}
	if !ranAt.Equal(newest) {
		t.Errorf("fire_once ran the fire of %s, want the newest missed one, %s", ranAt.UTC(), newest)
	}
	skipped := func(job int64) (n int, msg string) {
		t.Helper()
		if err := sys.pool.QueryRow(ctx, `SELECT count(*), COALESCE(max(message), '') FROM job_runs
			WHERE job_id = $1 AND status = 'SKIPPED'`, job).Scan(&n, &msg); err != nil {
			t.Fatal(err)
		}
		return n, msg
	}
	for mp, want := range map[string]int{"skip": 4, "fire_once": 3} {
		n, msg := skipped(jobs[mp].ID)
		missed, _, _, _, ok := policy.ParseSkipped(msg)
		if n != 1 || !ok || missed != want || !strings.Contains(msg, "group g was paused") || !strings.Contains(msg, "db upgrade") {
			t.Errorf("%s job: %d SKIPPED runs, message %q; want one for %d missed fires naming the pause and its note", mp, n, msg, want)
		}
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status <> 'SUCCEEDED' AND trigger_type <> 'manual'`,
		jobs["fire_all"].ID); n != 0 {
		t.Errorf("fire_all job has %d runs that did not succeed, want its 4 catch-up runs only", n)
	}
	testwait.Eventually(t, 30*time.Second, "the ticker to run again", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED' AND scheduled_at > $2`,
			ticker.ID, resumeAt) > 0
	})
	for action, note := range map[string]string{"group.pause": "db upgrade", "group.resume": "upgrade done"} {
		if n := sys.count(t, `SELECT count(*) FROM audit_log WHERE action = $1 AND target = 'group:g' AND after->>'note' = $2`,
			action, note); n != 1 {
			t.Errorf("%d %s audit rows with note %q, want 1", n, action, note)
		}
	}
}

// A draining group starts no new run and lets its running run finish: it
// reads draining, with the run counted, until the run ends, then drained.
// An operator of another group may not drain or resume it.
func TestGroupDrain(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sys := startSystem(t, func(w *worker.Worker) {
		noopWorker(w)
		w.Handle("long", heldUntil(release))
	})
	ctx := context.Background()
	long := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "long", Handler: "long", ScheduleType: "none"})
	ticker := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "ticker", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 1s", MisfirePolicy: "skip"})
	run := trigger(t, sys.api, long.ID, nil)
	testwait.Eventually(t, 30*time.Second, "the long run to start", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'RUNNING'`, run.ID) == 1
	})

	// An operator of another group is refused as if g did not exist.
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.api.CreateUser(ctx, apiv1.UserCreate{Name: "op-other", Grants: []apiv1.Grant{{Group: "other", Role: "operator"}}}); err != nil {
		t.Fatal(err)
	}
	key, err := sys.api.CreateKey(ctx, apiv1.KeyCreate{Name: "k", User: "op-other"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.New(sys.url, key.Secret)
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *client.APIError
	if _, err := other.SetGroupFlow(ctx, "g", "drain", apiv1.GroupFlowRequest{}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("operator of another group drains g: %v, want 404", err)
	}
	if _, err := other.SetGroupFlow(ctx, "other", "pause", apiv1.GroupFlowRequest{}); err != nil {
		t.Fatalf("operator pauses their own group: %v", err)
	}

	g, err := sys.api.SetGroupFlow(ctx, "g", "drain", apiv1.GroupFlowRequest{Note: "host reboot"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Flow == nil || g.Flow.State != "draining" || g.Flow.Running < 1 {
		t.Fatalf("draining group answers flow %+v, want draining with the long run counted", g.Flow)
	}
	drainAt := *g.Flow.At
	sys.waitPlannedPast(t, ticker.ID, drainAt)
	// The ticker's runs due before the drain end; the long one still runs.
	testwait.Eventually(t, 30*time.Second, "only the long run in flight", func() bool {
		return groupFlow(t, sys.api).Running == 1
	})
	if f := groupFlow(t, sys.api); f.State != "draining" || f.Note != "host reboot" {
		t.Fatalf("with the long run still running, group g shows %+v, want draining", f)
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE group_name = 'g' AND scheduled_at > $1`, drainAt); n != 0 {
		t.Fatalf("%d runs of group g after its drain began, want none", n)
	}

	close(release)
	testwait.Eventually(t, 30*time.Second, "group g to read drained", func() bool {
		f := groupFlow(t, sys.api)
		return f.State == "drained" && f.Running == 0
	})
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'SUCCEEDED'`, run.ID); n != 1 {
		t.Fatalf("the long run did not succeed")
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE group_name = 'g' AND scheduled_at > $1`, drainAt); n != 0 {
		t.Fatalf("%d runs of group g after its drain began, want none", n)
	}
	if _, err := sys.api.SetGroupFlow(ctx, "g", "resume", apiv1.GroupFlowRequest{}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "the ticker to run again", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED' AND scheduled_at > $2`,
			ticker.ID, time.Now().Add(-time.Second)) > 0
	})
}

// The workers page pauses a group with a note (its badge and note shown,
// the API agrees), resumes it, and shows a viewer no controls.
func TestConsoleGroupPause(t *testing.T) {
	t.Parallel()
	sys := startConsole(t)
	b := signedInTab(t, sys, "/workers?group=g", "ada")
	if got := b.text("#group-state-g"); got != "active" {
		t.Fatalf("group g's badge reads %q, want active", got)
	}
	b.do("pause the group", chromedp.SendKeys(chromedp.ID("flow-note-g"), "migrating the database"),
		chromedp.Click(chromedp.CSS("#group-pause-g button[type=submit]:not([formaction])")), chromedp.WaitVisible(chromedp.ID("group-flow-g")))
	if note := b.text("#group-flow-g"); !strings.Contains(note, "migrating the database") || !strings.Contains(note, "ada") {
		t.Fatalf("group g's flow note %q", note)
	}
	if got := b.text("#group-state-g"); got != "paused" {
		t.Fatalf("group g's badge reads %q after pausing, want paused", got)
	}
	if f := groupFlow(t, sys.api); f.State != "paused" || f.Note != "migrating the database" || f.By != "ada" {
		t.Fatalf("the API shows group g %+v after the console paused it", f)
	}

	v := newTab(t, sys.url)
	v.signIn("/workers?group=g", "vic")
	if n := evalIn[int](v, `document.querySelectorAll("#group-pause-g, #group-resume-g, #group-drain-g").length`); n != 0 {
		t.Fatalf("a viewer sees %d group controls", n)
	}
	if status := evalAsync[int](v, `fetch("/groups/g/resume", {method: "POST", body: new URLSearchParams({note: "x"})}).then(r => r.status)`); status != http.StatusForbidden {
		t.Fatalf("a viewer's forged resume answered %d, want 403", status)
	}

	b.do("resume the group", chromedp.Click(chromedp.CSS("#group-resume-g button[type=submit]:not([formaction])")),
		chromedp.WaitNotPresent(chromedp.ID("group-flow-g")))
	if f := groupFlow(t, sys.api); f.State != "active" {
		t.Fatalf("the API shows group g %+v after the console resumed it", f)
	}
}

// heldBack waits until dispatch has held back each of ids: they wait for
// their group's resume (docs/flow-control.md, "Runs the system writes
// during a pause").
func (s *system) heldBack(t *testing.T, ids ...int64) {
	t.Helper()
	held := map[int64]bool{}
	s.signals.Dispatch.Held.WaitFor(t, 60*time.Second, fmt.Sprintf("dispatch to hold back runs %v", ids), func(got []int64) bool {
		for _, id := range got {
			held[id] = true
		}
		for _, id := range ids {
			if !held[id] {
				return false
			}
		}
		return true
	})
}

// sweptPast waits for a sweep of run id's shard that read after the run
// fell due, and fails if that sweep handed it over: a waiting run is
// left out of the sweep until its group's resume.
func (s *system) sweptPast(t *testing.T, id int64) {
	t.Helper()
	var (
		shard int
		due   time.Time
	)
	if err := s.pool.QueryRow(t.Context(), `SELECT shard, scheduled_at FROM job_runs WHERE id = $1`, id).Scan(&shard, &due); err != nil {
		t.Fatal(err)
	}
	sw := s.signals.Planner.Swept.WaitFor(t, 90*time.Second, fmt.Sprintf("a sweep of shard %d after run %d fell due", shard, id),
		func(sw planner.Swept) bool { return sw.Shard == shard && sw.At.After(due) })
	if slices.Contains(sw.Runs, id) {
		t.Fatalf("the sweep of shard %d handed over run %d, which waits for its group's resume", shard, id)
	}
}

// status reads run id's status.
func (s *system) status(t *testing.T, id int64) string {
	t.Helper()
	var st string
	if err := s.pool.QueryRow(t.Context(), `SELECT status FROM job_runs WHERE id = $1`, id).Scan(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// A run that fails while its group is paused has its retry written, but
// the retry waits: dispatch holds it back and the sweep leaves it out
// until the resume; then it runs, once. A retry written before the pause
// and due during it is kept (a disable deletes it) and waits the same way.
func TestGroupPauseHoldsRetries(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var flakyRuns, earlyRuns atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("flaky", func(ctx context.Context, _ *worker.Job) error {
			if flakyRuns.Add(1) > 1 {
				return nil
			}
			select {
			case <-release:
				return errors.New("fails while its group is paused")
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		w.Handle("early", func(context.Context, *worker.Job) error {
			if earlyRuns.Add(1) > 1 {
				return nil
			}
			return errors.New("fails before the pause")
		})
	})
	ctx := context.Background()
	flaky := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "flaky", Handler: "flaky", ScheduleType: "none",
		MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(time.Second)})
	early := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "early", Handler: "early", ScheduleType: "none",
		MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(20 * time.Second)})
	first := trigger(t, sys.api, flaky.ID, nil)
	trigger(t, sys.api, early.ID, nil)
	retryOf := func(job int64) (id int64) {
		t.Helper()
		testwait.Eventually(t, 30*time.Second, fmt.Sprintf("job %d's retry to be written", job), func() bool {
			return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger_type = 'retry'`, job) == 1
		})
		if err := sys.pool.QueryRow(ctx, `SELECT id FROM job_runs WHERE job_id = $1 AND trigger_type = 'retry'`, job).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	earlyRetry := retryOf(early.ID)
	testwait.Eventually(t, 30*time.Second, "flaky's first run to start", func() bool {
		return sys.status(t, first.ID) == "RUNNING"
	})

	if _, err := sys.api.SetGroupFlow(ctx, "g", "pause", apiv1.GroupFlowRequest{Note: "retries wait"}); err != nil {
		t.Fatal(err)
	}
	if st := sys.status(t, earlyRetry); st != "SCHEDULED" {
		t.Fatalf("the retry written before the pause reads %s, want SCHEDULED (kept, waiting)", st)
	}
	close(release)
	flakyRetry := retryOf(flaky.ID)
	if st := sys.status(t, first.ID); st != "FAILED" {
		t.Fatalf("flaky's first run reads %s, want FAILED", st)
	}
	sys.heldBack(t, flakyRetry) // spawned here: the wheel had it
	sys.sweptPast(t, flakyRetry)
	sys.sweptPast(t, earlyRetry) // dropped from the wheel by the pause: only the sweep could take it
	for _, id := range []int64{flakyRetry, earlyRetry} {
		if st := sys.status(t, id); st != "SCHEDULED" {
			t.Fatalf("retry %d reads %s while its group is paused, want SCHEDULED", id, st)
		}
	}
	if f := groupFlow(t, sys.api); f.State != "paused" || f.Running != 0 {
		t.Fatalf("group g shows %+v, want paused with nothing in flight (waiting retries are not)", f)
	}
	if n, m := flakyRuns.Load(), earlyRuns.Load(); n != 1 || m != 1 {
		t.Fatalf("handlers ran %d and %d times while paused, want once each (the first runs)", n, m)
	}

	resumed, err := sys.api.SetGroupFlow(ctx, "g", "resume", apiv1.GroupFlowRequest{})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "both retries to succeed after the resume", func() bool {
		return sys.status(t, flakyRetry) == "SUCCEEDED" && sys.status(t, earlyRetry) == "SUCCEEDED"
	})
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE id = ANY($1) AND started_at < $2`,
		[]int64{flakyRetry, earlyRetry}, *resumed.Flow.At); n != 0 {
		t.Errorf("%d retries started before the resume", n)
	}
	// Every run accounted for, none twice: per job the first run FAILED and
	// its one retry SUCCEEDED, and each handler ran twice.
	for _, job := range []int64{flaky.ID, early.ID} {
		if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1`, job); n != 2 {
			t.Errorf("job %d has %d runs, want 2 (the first and its retry)", job, n)
		}
	}
	if n, m := flakyRuns.Load(), earlyRuns.Load(); n != 2 || m != 2 {
		t.Errorf("handlers ran %d and %d times, want twice each", n, m)
	}
}

// A parent that succeeds while its group drains has its child run written,
// but the child waits: the drain reports drained (a waiting run is not in
// flight), and the child runs once after the resume.
func TestGroupDrainHoldsChildRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var childRuns atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("parent", heldUntil(release))
		w.Handle("child", func(context.Context, *worker.Job) error {
			childRuns.Add(1)
			return nil
		})
	})
	ctx := context.Background()
	child := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "child", Handler: "child", ScheduleType: "none"})
	parent := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "parent", Handler: "parent", ScheduleType: "none",
		ChildJobIDs: []int64{child.ID}})
	run := trigger(t, sys.api, parent.ID, nil)
	testwait.Eventually(t, 30*time.Second, "the parent to start", func() bool {
		return sys.status(t, run.ID) == "RUNNING"
	})
	g, err := sys.api.SetGroupFlow(ctx, "g", "drain", apiv1.GroupFlowRequest{Note: "children wait"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Flow == nil || g.Flow.State != "draining" || g.Flow.Running != 1 {
		t.Fatalf("draining group answers flow %+v, want draining with the parent in flight", g.Flow)
	}

	close(release)
	var childRun int64
	testwait.Eventually(t, 30*time.Second, "the child run to be written", func() bool {
		return sys.pool.QueryRow(ctx, `SELECT id FROM job_runs WHERE job_id = $1 AND parent_run = $2`, child.ID, run.ID).Scan(&childRun) == nil
	})
	sys.heldBack(t, childRun)
	testwait.Eventually(t, 30*time.Second, "group g to read drained", func() bool {
		f := groupFlow(t, sys.api)
		return f.State == "drained" && f.Running == 0
	})
	sys.sweptPast(t, childRun)
	if st := sys.status(t, childRun); st != "SCHEDULED" || childRuns.Load() != 0 {
		t.Fatalf("the child run reads %s and ran %d times while its group drains, want SCHEDULED and never", st, childRuns.Load())
	}

	if _, err := sys.api.SetGroupFlow(ctx, "g", "resume", apiv1.GroupFlowRequest{}); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 60*time.Second, "the child run to succeed after the resume", func() bool {
		return sys.status(t, childRun) == "SUCCEEDED"
	})
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1`, child.ID); n != 1 || childRuns.Load() != 1 {
		t.Errorf("the child job has %d runs and ran %d times, want one of each", n, childRuns.Load())
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE group_name = 'g' AND status <> 'SUCCEEDED'`); n != 0 {
		t.Errorf("%d runs of group g did not succeed, want none", n)
	}
}

// A workflow run whose next node falls due while its group is paused
// waits: the node run is written and held back, the workflow run stays
// RUNNING, and after the resume the node runs once and the workflow
// succeeds.
func TestGroupPauseHoldsWorkflowNodes(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var bRuns atomic.Int32
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("wf-first", heldUntil(release))
		w.Handle("wf-next", func(context.Context, *worker.Job) error {
			bRuns.Add(1)
			return nil
		})
	})
	ctx := context.Background()
	a, b := wfJob(t, sys, "a", "wf-first"), wfJob(t, sys, "b", "wf-next")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "two", Nodes: []apiv1.WorkflowNode{{Name: "a", JobID: a}, {Name: "b", JobID: b}},
		Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}}})
	run, err := sys.api.TriggerWorkflow(ctx, wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "node a to start", func() bool {
		return sys.count(t, `SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'RUNNING'`, a) == 1
	})
	if _, err := sys.api.SetGroupFlow(ctx, "g", "pause", apiv1.GroupFlowRequest{Note: "nodes wait"}); err != nil {
		t.Fatal(err)
	}
	// The pause reaches dispatch through a notification: node a may end
	// only once it has, or node b's run can go out before (in CI it did,
	// 7 ms before the scheduler read the pause).
	testwait.Eventually(t, 30*time.Second, "the scheduler to know g is paused", func() bool { return sys.sched.KnowsPaused("g") })
	close(release)
	var nodeRun int64
	testwait.Eventually(t, 30*time.Second, "node b's run to be written", func() bool {
		return sys.pool.QueryRow(ctx, `SELECT id FROM job_runs WHERE job_id = $1`, b).Scan(&nodeRun) == nil
	})
	sys.heldBack(t, nodeRun)
	sys.sweptPast(t, nodeRun)
	if st := sys.status(t, nodeRun); st != "SCHEDULED" || bRuns.Load() != 0 {
		t.Fatalf("node b's run reads %s and ran %d times while its group is paused, want SCHEDULED and never", st, bRuns.Load())
	}
	if r, err := sys.api.GetWorkflowRun(ctx, run.ID); err != nil || r.Status != "RUNNING" {
		t.Fatalf("the workflow run while its next node waits: %+v %v, want RUNNING", r, err)
	}

	if _, err := sys.api.SetGroupFlow(ctx, "g", "resume", apiv1.GroupFlowRequest{}); err != nil {
		t.Fatal(err)
	}
	done := waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	if nd := wfNode(done, "b"); len(nd.Runs) != 1 || bRuns.Load() != 1 {
		t.Errorf("node b has %d runs and ran %d times, want one of each", len(nd.Runs), bRuns.Load())
	}

	// A forced trigger runs the whole workflow in a paused group: its
	// node runs do not wait.
	if _, err := sys.api.SetGroupFlow(ctx, "g", "pause", apiv1.GroupFlowRequest{}); err != nil {
		t.Fatal(err)
	}
	forced, err := sys.api.TriggerWorkflowWith(ctx, wf.ID, apiv1.TriggerRequest{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	waitWorkflowRun(t, sys, forced.ID, "SUCCEEDED")
	if n := bRuns.Load(); n != 2 {
		t.Errorf("node b ran %d times in all, want twice (once per workflow run)", n)
	}
}
