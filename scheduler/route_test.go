package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/internal/workertest"
	"github.com/jetjob/jetjob/scheduler"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/route"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// Short heartbeats, so that a dead worker is noticed within seconds.
var routeStreams = stream.Config{WorkerTTL: 3 * time.Second}

func withStreams(cfg *scheduler.Config) { cfg.Streams = routeStreams }

// execution is one handler call as a routing test sees it.
type execution struct {
	worker      string
	job, run    int64
	index, tot  int
	scheduled   time.Time // the fire's time, which its broadcast parts share
	started     time.Time
	triggerType worker.TriggerType
}

// together is the params of "who" that keep a sharding-broadcast part
// running until every part of its fire has started: parts that overlap by
// construction, not by how fast a loaded machine starts them.
const together = "together"

// fireStarted reports whether every part of the fire of job at has
// started.
func fireStarted(x *executions, job int64, at time.Time, parts int) bool {
	n := 0
	for _, e := range of(x, job) {
		if e.scheduled.Equal(at) {
			n++
		}
	}
	return n >= parts
}

// executions records handler calls.
type executions = record[execution]

// of returns the executions of job.
func of(x *executions, job int64) []execution {
	var out []execution
	for _, e := range x.all() {
		if e.job == job {
			out = append(out, e)
		}
	}
	return out
}

// startRecorders starts workers of group g with the given ids whose handler
// "who" records where it ran and then sleeps for its params (a duration,
// or not at all; together: until every part of its fire has started). It returns a stop function per worker.
func startRecorders(c *cluster, rec *executions, ids ...string) map[string]func() {
	stops := map[string]func(){}
	for _, id := range ids {
		w, err := worker.New(worker.Config{TriggerKeys: testTriggerKeys, NATS: c.connect(id), Group: "g", ID: id, Logger: c.log.Named(id),
			Streams: worker.Streams{WorkerTTL: routeStreams.WorkerTTL}, HeartbeatInterval: time.Second})
		if err != nil {
			c.t.Fatal(err)
		}
		w.Handle("who", func(ctx context.Context, j *worker.Job) error {
			rec.add(execution{worker: id, job: j.JobID, run: j.RunID, index: j.ShardIndex, tot: j.ShardTotal,
				scheduled: j.ScheduledAt, started: time.Now(), triggerType: j.TriggerType})
			if j.Params == together {
				if !testwait.Poll(40*time.Second, func() bool {
					return ctx.Err() != nil || fireStarted(rec, j.JobID, j.ScheduledAt, j.ShardTotal)
				}) {
					return errors.New("not every part of the fire started within 40 s")
				}
				return ctx.Err()
			}
			if d, err := time.ParseDuration(j.Params); err == nil {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
		run := workertest.Start(c.t, w)
		stops[id] = func() { _ = run() } // a stopped worker's error is not what these tests look at
	}
	return stops
}

// recordersCluster is a cluster of one scheduler (four shards, the route
// streams) and recording workers of group g (startRecorders) with the ids
// given, all of them seen live.
func recordersCluster(t *testing.T, ids ...string) (c *cluster, rec *executions) {
	c, rec = newCluster(t), new(executions)
	c.startScheduler(4, withStreams)
	startRecorders(c, rec, ids...)
	c.waitWorkers(len(ids))
	return c, rec
}

func (c *cluster) waitWorkers(n int) {
	testwait.Eventually(c.t, 20*time.Second, fmt.Sprintf("%d workers listed", n), func() bool {
		l, err := c.api.ListWorkers(context.Background(), "g")
		return err == nil && len(l.Workers) == n
	})
}

// manualJob creates a job of handler "who" that fires only when triggered.
func (c *cluster) manualJob(name, route, params string) int64 {
	j := createJob(c.t, c.api, apiv1.JobSpec{Group: "g", Name: name, Handler: "who",
		Params: params, ScheduleType: "none", RouteStrategy: route})
	return j.ID
}

func (c *cluster) trigger(job int64, times int) {
	for range times {
		if _, err := c.api.TriggerJob(context.Background(), job, nil); err != nil {
			c.t.Fatal(err)
		}
	}
}

// workersOf waits until job has n executions and returns their workers in
// execution order.
func workersOf(c *cluster, rec *executions, job int64, n int) []string {
	testwait.Eventually(c.t, 30*time.Second, fmt.Sprintf("%d executions of job %d", n, job), func() bool { return len(of(rec, job)) >= n })
	var out []string
	for _, e := range of(rec, job) {
		out = append(out, e.worker)
	}
	return out
}

func countEach(ws []string) map[string]int {
	m := map[string]int{}
	for _, w := range ws {
		m[w]++
	}
	return m
}

// Each routing strategy picks what it promises over a known live set of
// three workers.
func TestRoutingStrategies(t *testing.T) {
	t.Parallel()
	c, rec := recordersCluster(t, "w1", "w2", "w3")

	first, last := c.manualJob("first", "first", ""), c.manualJob("last", "last", "")
	round, lfu, lru := c.manualJob("round", "round", ""), c.manualJob("lfu", "lfu", ""), c.manualJob("lru", "lru", "")
	hashA, hashB := c.manualJob("hash-a", "consistent_hash", ""), c.manualJob("hash-b", "consistent_hash", "")
	random := c.manualJob("random", "random", "")
	for _, j := range []int64{first, last, round, lfu, lru, hashA, hashB, random} {
		c.trigger(j, 6)
	}
	if got := countEach(workersOf(c, rec, first, 6)); got["w1"] != 6 {
		t.Errorf("first: %v, want all 6 on w1", got)
	}
	if got := countEach(workersOf(c, rec, last, 6)); got["w3"] != 6 {
		t.Errorf("last: %v, want all 6 on w3", got)
	}
	for name, j := range map[string]int64{"round": round, "lfu": lfu, "lru": lru} {
		if got := countEach(workersOf(c, rec, j, 6)); got["w1"] != 2 || got["w2"] != 2 || got["w3"] != 2 {
			t.Errorf("%s: %v, want 2 runs on each worker", name, got)
		}
	}
	for _, j := range []int64{hashA, hashB} {
		if got := countEach(workersOf(c, rec, j, 6)); len(got) != 1 {
			t.Errorf("consistent_hash job %d: %v, want every run on one worker", j, got)
		}
	}
	for w := range countEach(workersOf(c, rec, random, 6)) {
		if !slices.Contains([]string{"w1", "w2", "w3"}, w) {
			t.Errorf("random picked %q", w)
		}
	}

	// busyover: while w1 runs the job, the next trigger goes to w2.
	busy := c.manualJob("busy", "busyover", "1500ms")
	c.trigger(busy, 1)
	testwait.Eventually(t, 10*time.Second, "the first busyover run to start", func() bool { return len(of(rec, busy)) == 1 })
	c.trigger(busy, 1)
	if got := workersOf(c, rec, busy, 2); !slices.Equal(got, []string{"w1", "w2"}) {
		t.Errorf("busyover: ran on %v, want w1 then w2 (w1 was busy with the job)", got)
	}

	// sharding_broadcast: one run per live worker, indexes 0..2 of 3.
	bc := c.manualJob("broadcast", "sharding_broadcast", "")
	c.trigger(bc, 1)
	// Every part is a run in job_runs from the moment the fire is
	// expanded: once three have succeeded and there are no others, no
	// fourth execution can come.
	testwait.Eventually(t, 20*time.Second, "3 SUCCEEDED broadcast runs", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'SUCCEEDED' AND shard_total = 3`, bc) == 3
	})
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1`, bc); n != 3 {
		t.Errorf("broadcast: %d runs in job_runs, want 3", n)
	}
	got := of(rec, bc)
	slices.SortFunc(got, func(a, b execution) int { return a.index - b.index })
	if len(got) != 3 {
		t.Fatalf("broadcast: %d executions, want 3: %+v", len(got), got)
	}
	for i, e := range got {
		if e.index != i || e.tot != 3 || e.worker != fmt.Sprintf("w%d", i+1) {
			t.Errorf("broadcast part %d: index %d/%d on %s, want %d/3 on w%d", i, e.index, e.tot, e.worker, i, i+1)
		}
	}
	if n := c.count(`SELECT count(DISTINCT shard_index) FROM job_runs WHERE job_id = $1`, bc); n != 3 {
		t.Errorf("broadcast: %d distinct shard indexes in job_runs, want 3", n)
	}
}

// subjectMsgs counts the messages stored in JETJOB_TRIGGERS on subject, or
// on the subjects it matches.
func subjectMsgs(c *cluster, js jetstream.JetStream, subject string) uint64 {
	s, err := js.Stream(context.Background(), stream.Triggers)
	if err != nil {
		c.t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(subject))
	if err != nil {
		c.t.Fatal(err)
	}
	var n uint64
	for _, m := range info.State.Subjects { // one, or those a wildcard matches
		n += m
	}
	return n
}

// fakeWorker keeps a heartbeat for worker id in the registry although no
// such worker runs: to the schedulers it is live but answers nothing,
// like a worker that hung or died less than a TTL ago (and says it reads
// trigger batches on its directed subject). Cancel to let it expire.
func fakeWorker(c *cluster, id string) context.CancelFunc {
	js, err := jetstream.New(c.connect("fake-" + id))
	if err != nil {
		c.t.Fatal(err)
	}
	kv, err := stream.Workers(context.Background(), js, routeStreams)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	beat := func() {
		now := time.Now().UTC()
		data, err := wire.EncodeWorkerInfo(&wire.WorkerInfo{ID: id, Group: "g", Host: "nowhere", PID: 1,
			Version: "test", Handlers: []string{"who"}, Capacity: 1, StartedAt: now, BeatAt: now, DirectedBatches: true})
		if err == nil {
			_, err = kv.Put(ctx, stream.WorkerKey("g", id), data)
		}
		if err != nil && ctx.Err() == nil {
			c.t.Error(err)
		}
	}
	beat()
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	stop := func() { cancel(); <-done }
	c.t.Cleanup(stop)
	return stop
}

// failover passes by a registered worker that does not answer a ping; a
// trigger directed to a worker that then dies is moved to the shared
// queue and runs on a live worker.
func TestFailoverAndRerouteFromDeadWorker(t *testing.T) {
	t.Parallel()
	c, rec := recordersCluster(t, "w1", "w2")
	stopFake := fakeWorker(c, "w0") // sorts first
	c.waitWorkers(3)

	fo := c.manualJob("failover", "failover", "")
	c.trigger(fo, 3)
	if got := countEach(workersOf(c, rec, fo, 3)); got["w1"] != 3 {
		t.Errorf("failover: %v, want all on w1 (w0 does not answer)", got)
	}

	// first picks w0, which never fetches: the run waits on its subject.
	first := c.manualJob("first", "first", "")
	run := trigger(t, c.api, first, nil)
	// No worker reports on it: dispatch's write is what records it TRIGGERED.
	c.signals.Dispatch.Flushed.WaitUntil(t, 10*time.Second, "the run TRIGGERED towards w0", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'TRIGGERED'`, run.ID) == 1
	})
	// It waits on w0's subject, which nobody reads while w0 counts as live.
	js, err := jetstream.New(c.connect("test"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, "the trigger waiting on w0's subject", func() bool {
		return subjectMsgs(c, js, stream.TriggerWorker("g", "w0")) == 1
	})
	if n := len(of(rec, first)); n != 0 {
		t.Fatalf("the run directed to w0 ran %d times while w0 was registered", n)
	}
	stopFake() // w0 "dies": its heartbeat expires after the TTL
	testwait.Eventually(t, 20*time.Second, "the run to finish on a live worker", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE id = $1 AND status = 'SUCCEEDED' AND worker_id IN ('w1', 'w2')`, run.ID) == 1
	})
	if n := len(of(rec, first)); n != 1 {
		t.Errorf("the re-routed run ran %d times, want once", n)
	}
}

// Runs of jobs routed consistent_hash that are due together are batched
// per worker: each batch goes to the directed subject of the worker the
// job hashes to, and each run executes there. A batch bound for a worker
// that then dies is moved, whole, to the group's batch subject, and its
// runs execute once on a live worker.
func TestHashedBatchesFollowTheirWorker(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(1, withStreams) // one shard: the runs due together are planned together
	var rec executions
	startRecorders(c, &rec, "w1", "w2")
	stopFake := fakeWorker(c, "w0")
	c.waitWorkers(3)
	watch := watchTriggers(t, c)

	// Where each job's batches go, by the rule the schedulers follow.
	ring := route.New(func(group string) []wire.WorkerInfo {
		var out []wire.WorkerInfo
		for _, id := range []string{"w0", "w1", "w2"} {
			out = append(out, wire.WorkerInfo{ID: id, Group: group, Handlers: []string{"who"}, DirectedBatches: true})
		}
		return out
	}, nil, zap.NewNop())
	fireAt := time.Now().Add(4 * time.Second).Truncate(time.Second)
	want := map[int64]string{} // job → the worker it hashes to
	perWorker := map[string]int{}
	for i := range 30 {
		spec := apiv1.JobSpec{Group: "g", Name: fmt.Sprint("hashed-", i), Handler: "who", ScheduleType: "once",
			ScheduleExpr: fireAt.UTC().Format(time.RFC3339), RouteStrategy: "consistent_hash", MisfirePolicy: "fire_all"}
		j := createJob(t, c.api, spec)
		want[j.ID] = ring.BatchTarget(j.ID, "g", "who")
		perWorker[want[j.ID]]++
	}
	if perWorker["w0"] == 0 || perWorker["w1"]+perWorker["w2"] < 2 {
		t.Fatalf("jobs per worker %v: the test needs some on w0 and some on the live workers", perWorker)
	}
	live := perWorker["w1"] + perWorker["w2"]
	testwait.Eventually(t, 30*time.Second, "the live workers' runs to execute", func() bool { return len(rec.all()) >= live })
	js, err := jetstream.New(c.connect("test"))
	if err != nil {
		t.Fatal(err)
	}
	// w0's runs wait on its subject, which nobody reads while it counts as live.
	testwait.Eventually(t, 10*time.Second, "w0's runs waiting on its subject", func() bool {
		return subjectMsgs(c, js, stream.TriggerWorker("g", "w0")) > 0
	})
	for _, e := range rec.all() {
		if e.worker != want[e.job] {
			t.Errorf("job %d ran on %s, want %s (its hash)", e.job, e.worker, want[e.job])
		}
	}
	if got := len(rec.all()); got != live {
		t.Errorf("%d runs executed while w0 was live, want %d", got, live)
	}
	watch.mu.Lock()
	for _, id := range []string{"w0", "w1", "w2"} {
		// A worker with one job gets its run alone; more share messages.
		if s := stream.TriggerWorker("g", id); watch.runs[s] != perWorker[id] || perWorker[id] > 1 && watch.msgs[s] >= perWorker[id] {
			t.Errorf("%s: %d runs in %d messages, want all %d of its jobs' runs, batched", s, watch.runs[s], watch.msgs[s], perWorker[id])
		}
	}
	watch.mu.Unlock()

	stopFake() // w0 "dies": its batches are moved to the group's batch subject
	testwait.Eventually(t, 30*time.Second, "every run to execute", func() bool { return len(rec.all()) >= len(want) })
	// Once every trigger is acknowledged, nothing can run again.
	testwait.Eventually(t, 30*time.Second, "every trigger acknowledged", func() bool {
		return subjectMsgs(c, js, "jetjob.trigger.g.>") == 0
	})
	ran := map[int64]int{}
	for _, e := range rec.all() {
		ran[e.job]++
		if want[e.job] == "w0" && e.worker == "w0" {
			t.Errorf("job %d ran on the dead worker", e.job)
		}
	}
	for job := range want {
		if ran[job] != 1 {
			t.Errorf("job %d ran %d times, want once", job, ran[job])
		}
	}
	watch.mu.Lock()
	defer watch.mu.Unlock()
	if s := stream.TriggerBatch("g"); watch.runs[s] != perWorker["w0"] {
		t.Errorf("%d runs moved to %s, want w0's %d", watch.runs[s], s, perWorker["w0"])
	}
}

// Replay after a worker outage: 10 fires wait in JetStream with no worker
// up; when one starts, fire_all runs all, fire_once runs only the newest
// (the rest EXPIRED) and skip runs none.
func TestBacklogReplayMisfirePolicies(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	c.startScheduler(4, withStreams, func(cfg *scheduler.Config) { cfg.Planner.MisfireThreshold = 500 * time.Millisecond })
	ctx := context.Background()
	jobs := map[string]int64{}
	for _, p := range []string{"fire_all", "fire_once", "skip"} {
		j := createJob(t, c.api, apiv1.JobSpec{Group: "g", Name: p, Handler: "who",
			ScheduleType: "cron", ScheduleExpr: "@every 1s", MisfirePolicy: p})
		jobs[p] = j.ID
	}
	published := func(job int64) int {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status = 'TRIGGERED'`, job)
	}
	testwait.Eventually(t, 30*time.Second, "10 fires of each job waiting in JetStream", func() bool {
		for _, j := range jobs {
			if published(j) < 10 {
				return false
			}
		}
		return true
	})
	for _, j := range jobs {
		if _, err := c.api.DisableJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]int{}
	// Start the worker once even the newest waiting fire is past the
	// threshold (500 ms), with a margin. Disabling left the runs already
	// due (the newest may still read SCHEDULED while published) and
	// removed the rest.
	var newest time.Time
	if err := c.direct.QueryRow(ctx, `SELECT max(scheduled_at) FROM job_runs WHERE job_id = ANY($1)`,
		[]int64{jobs["fire_all"], jobs["fire_once"], jobs["skip"]}).Scan(&newest); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, "the newest waiting fire to be late", func() bool { return time.Since(newest) > time.Second })
	// A planning pass that ran late (a loaded machine: the threshold is
	// 500 ms) made a fire a catch-up already (trigger type misfire), and
	// under fire_once a catch-up runs (runs.newerSQL): the replay runs
	// those besides its newest fire.
	caughtUp := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger_type = 'misfire'
		AND scheduled_at < (SELECT max(scheduled_at) FROM job_runs WHERE job_id = $1)`, jobs["fire_once"])
	var rec executions
	startRecorders(c, &rec, "w1")
	// SCHEDULED counts as waiting too: a run published just before the
	// disable may still read SCHEDULED (its TRIGGERED write is held back),
	// and every run the disable left is due, so none stays SCHEDULED.
	testwait.Eventually(t, 30*time.Second, "every waiting run to end", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = ANY($1) AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`,
			[]int64{jobs["fire_all"], jobs["fire_once"], jobs["skip"]}) == 0
	})
	// Published runs: a run the scheduler itself found too late to publish
	// is SKIPPED, never sent, and not part of the backlog.
	for _, j := range jobs {
		want[j] = c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status NOT IN ('SCHEDULED', 'SKIPPED')`, j)
		if want[j] < 10 {
			t.Errorf("job %d: %d runs published, want at least 10", j, want[j])
		}
	}
	statuses := func(job int64) map[string]int {
		m := map[string]int{}
		rows, _ := c.direct.Query(ctx, `SELECT status, count(*)::int FROM job_runs WHERE job_id = $1 AND status NOT IN ('SCHEDULED', 'SKIPPED') GROUP BY status`, job)
		var s string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&s, &n}, func() error { m[s] = n; return nil }); err != nil {
			t.Fatal(err)
		}
		return m
	}
	all, once, skip := jobs["fire_all"], jobs["fire_once"], jobs["skip"]
	if got := statuses(all); got["SUCCEEDED"] != want[all] || len(of(&rec, all)) != want[all] {
		t.Errorf("fire_all: %v and %d executions, want all %d waiting runs SUCCEEDED", got, len(of(&rec, all)), want[all])
	}
	got := statuses(once)
	if ran := 1 + caughtUp; got["SUCCEEDED"] != ran || got["EXPIRED"] != want[once]-ran || len(of(&rec, once)) != ran {
		t.Errorf("fire_once: %v and %d executions, want %d SUCCEEDED (the newest and %d catch-ups planned before) and %d EXPIRED",
			got, len(of(&rec, once)), ran, caughtUp, want[once]-ran)
	}
	newestRun := c.count(`SELECT max(id)::int FROM job_runs WHERE job_id = $1 AND status NOT IN ('SCHEDULED', 'SKIPPED')`, once)
	if e := of(&rec, once); !slices.ContainsFunc(e, func(x execution) bool { return x.run == int64(newestRun) }) {
		t.Errorf("fire_once ran %v, want the newest, %d, among them", e, newestRun)
	}
	if got := statuses(skip); got["EXPIRED"] != want[skip] || len(of(&rec, skip)) != 0 {
		t.Errorf("skip: %v and %d executions, want all %d EXPIRED", got, len(of(&rec, skip)), want[skip])
	}
}
