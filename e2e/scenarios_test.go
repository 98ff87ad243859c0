package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	jclient "github.com/jetjob/jetjob/scheduler/client"
)

// firstFire is the first whole second at which jobs created now surely fire
// (planning takes up to a planning interval).
func firstFire() time.Time { return time.Now().Truncate(time.Second).Add(3 * time.Second) }

// createOutageJobs creates the jobs the outage tests watch: five of misfire
// policy fire_all, five of skip, all firing every second from the first
// fire it returns.
func (c *cluster) createOutageJobs() (fireAll, skip []int64, from time.Time) {
	fireAll = c.createJobs("all", 5, "fire_all", "")
	skip = c.createJobs("skip", 5, "skip", "")
	return fireAll, skip, firstFire()
}

// between reports whether s lies in [from, to].
func between(s, from, to time.Time) bool { return !s.Before(from) && !s.After(to) }

// in reports whether job is one of jobs.
func in(job int64, jobs []int64) bool { return slices.Contains(jobs, job) }

// all concatenates job lists.
func all(lists ...[]int64) []int64 {
	var out []int64
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// each runs fn on every node concurrently (stopping or starting several
// containers at once) and fails the test on the first error.
func (c *cluster) each(nodes []*node, fn func(*node) error) {
	c.t.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.t.Fatal(err)
	}
}

// waitReady waits until every running scheduler answers /readyz with 200.
func (c *cluster) waitReady(within time.Duration) {
	c.t.Helper()
	testwait.Eventually(c.t, within, "every scheduler ready", func() bool {
		for _, n := range c.scheds {
			if n.isRunning() && !c.ready(n) {
				return false
			}
		}
		return true
	})
}

// owners returns how many shards each scheduler holds with a live lease.
func (c *cluster) owners() map[string]int {
	c.t.Helper()
	rows, err := c.pool().Query(c.ctx(), `SELECT owner, count(*) FROM scheduler_shards
		WHERE owner IS NOT NULL AND expires_at > now() GROUP BY owner`)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var o string
		var n int
		if err := rows.Scan(&o, &n); err != nil {
			c.t.Fatal(err)
		}
		out[o] = n
	}
	return out
}

// shardsHeldBy reports whether the named schedulers hold every shard
// between them, each at least one.
func (c *cluster) shardsHeldBy(names ...string) bool {
	o := c.owners()
	sum := 0
	for _, n := range names {
		if o[n] == 0 {
			return false
		}
		sum += o[n]
	}
	return sum == shardCount
}

// NATS is stopped for 20 s while jobs of every misfire policy fire each
// second. Every fire of the window is accounted for as its policy says and
// nothing runs twice.
func TestNATSOutage(t *testing.T) {
	c := newCluster(t, options{})
	fireAll := c.createJobs("all", 4, "fire_all", "")
	skip := c.createJobs("skip", 4, "skip", "")
	once := c.createJobs("once", 4, "fire_once", "")
	from := firstFire()

	begin := halfSecond(5 * time.Second)
	at(begin)
	c.stop(c.nats[0])
	stopped := time.Now()
	t.Logf("NATS stop began %s, done %s", begin.UTC().Format("15:04:05.000"), stopped.UTC().Format("15:04:05.000"))
	testwait.Eventually(t, 10*time.Second, "/readyz to report NATS unreachable", func() bool { return !c.ready(c.scheds[0]) })
	at(stopped.Add(20 * time.Second))
	c.start(c.nats[0])
	c.waitReady(30 * time.Second)
	resumed := time.Now()
	t.Logf("NATS down %s, schedulers ready again %s after its start",
		resumed.Sub(stopped).Round(100*time.Millisecond), time.Since(resumed).Round(100*time.Millisecond))
	to := resumed.Add(6 * time.Second)
	at(to.Add(2 * time.Second))

	// Fires surely more than the misfire threshold late when NATS came
	// back: from the first after NATS was down (a stop takes a moment;
	// a fire just after `begin` may still have gone out).
	missedFrom, missedTo := stopped, resumed.Add(-misfireThreshold-time.Second)
	// And fires surely published before it: those more than a second
	// before it began. The fire half a second before may have gone out,
	// or not (a planner pass or a publish delayed on a loaded machine
	// meets the outage), and then its job's policy applies to it.
	published := begin.Add(-time.Second)
	rep := c.audit(all(fireAll, skip, once), from, to, func(job int64, s time.Time) []string {
		switch {
		case in(job, fireAll):
			return []string{"SUCCEEDED"}
		case s.Before(published) || s.After(resumed.Add(2*time.Second)):
			return []string{"SUCCEEDED"}
		case in(job, skip) && between(s, missedFrom, missedTo):
			return []string{"SKIPPED", "EXPIRED"}
		case in(job, skip):
			return []string{"SUCCEEDED", "SKIPPED", "EXPIRED"}
		}
		// fire_once: a trigger that reaches a worker late (its first
		// delivery lost in the restart, redelivered after the ack wait)
		// ends EXPIRED when a newer missed fire of its job was published.
		return []string{"SUCCEEDED", "SKIPPED", "EXPIRED"}
	})
	t.Logf("audit: %s", rep)
	// fire_all ran the missed fires late; fire_once ran at most one of
	// them per job, the others SKIPPED.
	if n, min := c.late(fireAll, missedFrom, missedTo, misfireThreshold), len(fireAll)*len(testwait.SecondsBetween(missedFrom, missedTo)); n < min {
		t.Errorf("fire_all: %d missed fires ran late, want all %d; on time: %v", n, min, c.onTime(fireAll, missedFrom, missedTo, misfireThreshold))
	}
	missed := len(testwait.SecondsBetween(missedFrom, missedTo))
	for _, job := range once {
		ran := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at BETWEEN $2 AND $3 AND status = 'SUCCEEDED'`, job, missedFrom, missedTo)
		skipped := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND scheduled_at BETWEEN $2 AND $3 AND status IN ('SKIPPED', 'EXPIRED')`, job, missedFrom, missedTo)
		if ran > 1 || skipped < missed-1 {
			t.Errorf("fire_once job %d: of %d missed fires %d ran and %d were SKIPPED or EXPIRED, want at most one run and the rest SKIPPED or EXPIRED", job, missed, ran, skipped)
		}
	}
	c.checkStreams(false)
}

// Both workers are stopped for 20 s: the triggers wait in JetStream and
// are replayed when the workers return, fire_all ones run, skip ones that
// arrive later than the misfire threshold end EXPIRED without running.
func TestWorkerOutage(t *testing.T) {
	c := newCluster(t, options{})
	fireAll, skip, from := c.createOutageJobs()

	begin := halfSecond(5 * time.Second)
	at(begin)
	c.each(c.workers, func(n *node) error {
		timeout := 30 * time.Second
		n.setRunning(false)
		return n.ctr.Stop(context.Background(), &timeout)
	})
	stopped := time.Now()
	t.Logf("worker stop began %s, done %s", begin.UTC().Format("15:04:05.000"), stopped.UTC().Format("15:04:05.000"))
	at(stopped.Add(20 * time.Second))
	waiting := c.streamMsgs(stream.Triggers)
	if want := uint64(len(fireAll)+len(skip)) * 15; waiting < want {
		t.Errorf("%d triggers waiting in %s after 20 s without workers, want at least %d", waiting, stream.Triggers, want)
	}
	// The first worker runs triggers while the second one starts: a fire
	// is surely late only if it was late when the first one started.
	restarting := time.Now()
	for _, n := range c.workers {
		c.start(n)
	}
	restarted := time.Now()
	t.Logf("workers down %s; %d triggers waited in %s", restarted.Sub(stopped).Round(100*time.Millisecond), waiting, stream.Triggers)
	to := restarted.Add(5 * time.Second)
	at(to.Add(2 * time.Second))

	missedFrom, missedTo := stopped.Add(500*time.Millisecond), restarting.Add(-misfireThreshold-time.Second)
	rep := c.audit(all(fireAll, skip), from, to, func(job int64, s time.Time) []string {
		switch {
		case in(job, fireAll):
			return []string{"SUCCEEDED"}
		case s.Before(begin) || s.After(restarted.Add(time.Second)):
			return []string{"SUCCEEDED"}
		case between(s, missedFrom, missedTo):
			return []string{"EXPIRED"}
		}
		return []string{"SUCCEEDED", "EXPIRED"}
	})
	t.Logf("audit: %s", rep)
	if n, min := c.late(fireAll, missedFrom, missedTo, misfireThreshold), len(fireAll)*len(testwait.SecondsBetween(missedFrom, missedTo)); n < min {
		t.Errorf("fire_all: %d fires of the outage ran late, want all %d", n, min)
	}
	c.checkStreams(false)
}

// One of two schedulers is killed (SIGKILL): its shards move to the other
// within one lease period, and no fire is lost or doubled.
func TestSchedulerKilled(t *testing.T) {
	c := newCluster(t, options{})
	jobs := c.createJobs("tick", 10, "fire_all", "")
	from := firstFire()
	testwait.Eventually(t, 4*leaseTTL, "both schedulers to hold shards", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })
	t.Logf("shards before: %v", c.owners())

	at(halfSecond(5 * time.Second))
	c.kill(c.scheds[1])
	killed := time.Now()
	testwait.Eventually(t, 3*leaseTTL, "sched-1 to hold every shard", func() bool { return c.owners()["sched-1"] == shardCount })
	moved := time.Since(killed)
	// A lease renewed just before the kill lasts one TTL; the survivor
	// takes it at its next renewal (every TTL/4); a poll of slack.
	bound := leaseTTL + leaseTTL/4 + time.Second
	t.Logf("shards moved %s after the kill (lease TTL %s)", moved.Round(10*time.Millisecond), leaseTTL)
	if moved > bound {
		t.Errorf("shards moved %s after the kill, want within %s (one lease TTL plus a renewal)", moved.Round(10*time.Millisecond), bound)
	}
	to := killed.Add(10 * time.Second)
	at(to.Add(2 * time.Second))

	rep := c.audit(jobs, from, to, only("SUCCEEDED"))
	t.Logf("audit: %s; largest start delay %s", rep, c.maxLateness(jobs, from, to))
	// The dead scheduler's planned runs were fired by the survivor as
	// soon as it took the shards, not by a slower sweep.
	if n := c.late(jobs, from, to, bound+2*time.Second); n != 0 {
		t.Errorf("%d runs started more than %s after their fire time", n, bound+2*time.Second)
	}
	c.checkStreams(false)
}

// A worker is killed (SIGKILL) while 50 or more runs are inside their
// handlers there, and a few more triggers wait on it for their jobs' locks.
// Each run that had started ends LOST, naming the dead worker, as soon as
// its trigger is redelivered (not after the deliveries run out), and its
// retry (max_retries 1) runs once on the surviving worker: no attempt of
// any run executes twice. The triggers that waited without starting run
// once, on the survivor. Ticking jobs keep firing on time throughout.
func TestWorkerKilledMidRun(t *testing.T) {
	const (
		ackWait = 3 * time.Second
		slowN   = 110 // spread over two workers: 50 or more on the victim
	)
	c := newCluster(t, options{workerEnv: map[string]string{
		"JETJOB_ACK_WAIT": ackWait.String(), "JETJOB_CONCURRENCY": "100"}})
	ticks := c.createJobs("tick", 4, "fire_all", "")
	line := func(phase string) string {
		return `echo "` + phase + ` $JETJOB_JOB_ID $JETJOB_SCHEDULED_AT $JETJOB_RUN_ID $JETJOB_ATTEMPT $HOSTNAME" >> ` + witnessMount + `/exec.log`
	}
	// The first attempt runs until the test creates the release file (at
	// most two minutes), long enough to be killed; its retry ends at once.
	release := "release"
	cmd := line("start") + `; if [ "$JETJOB_ATTEMPT" = 0 ]; then i=0; while [ ! -e ` + witnessMount + "/" + release +
		` ] && [ $i -lt 120 ]; do sleep 1; i=$((i+1)); done; fi; ` + line("end")
	slow := make([]int64, slowN)
	for i := range slow {
		j, err := c.api().CreateJob(c.ctx(), apiv1.JobSpec{Group: group, Name: fmt.Sprintf("slow-%d", i), Handler: "shell",
			Params: cmd, ScheduleType: "none", MaxRetries: 1, RetryBackoff: "fixed", RetryInitial: apiv1.Duration(100 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		slow[i] = j.ID
	}
	from := firstFire()

	at(halfSecond(3 * time.Second))
	first := make(map[int64]bool, slowN)
	for _, job := range slow {
		first[c.trigger(job)] = true
	}
	onWorker := map[string][]int64{}
	testwait.Eventually(t, 60*time.Second, "every slow run to be inside its handler", func() bool {
		clear(onWorker)
		started := map[int64]bool{}
		for _, e := range c.executions() {
			if e.phase == "start" {
				started[e.run] = true
			}
		}
		for _, r := range c.runs(slow) {
			if first[r.id] && r.status == "RUNNING" && started[r.id] {
				onWorker[r.worker] = append(onWorker[r.worker], r.id)
			}
		}
		return len(onWorker[c.workers[0].name])+len(onWorker[c.workers[1].name]) == slowN
	})
	victim, other := c.workers[0], c.workers[1]
	if len(onWorker[other.name]) > len(onWorker[victim.name]) {
		victim, other = other, victim
	}
	inHandler := onWorker[victim.name]
	if len(inHandler) < 50 {
		t.Fatalf("only %d runs inside their handlers on %s (%d on %s), want 50 or more",
			len(inHandler), victim.name, len(onWorker[other.name]), other.name)
	}
	// A second trigger of some jobs running on the victim: the job's lock
	// is held, so each waits, and a trigger of the shared queue may wait
	// on either worker.
	quick := line("start") + "; " + line("end")
	var waiting []int64
	for _, run := range inHandler[:10] {
		for _, r := range c.runs(slow) {
			if r.id == run {
				w, err := c.api().TriggerJob(c.ctx(), r.job, &quick)
				if err != nil {
					t.Fatal(err)
				}
				waiting = append(waiting, w.ID)
			}
		}
	}
	testwait.Eventually(t, 20*time.Second, "the second triggers to be delivered", func() bool {
		n := 0
		for _, r := range c.runs(slow) {
			if slices.Contains(waiting, r.id) && r.status == "TRIGGERED" {
				n++
			}
		}
		return n == len(waiting)
	})
	// Half-way between two ticks, as every fault here: a ticking job's run
	// inside its handler on the victim would end LOST, rightly, and the
	// audit below wants every tick SUCCEEDED.
	at(halfSecond(0))
	c.kill(victim)
	killed := time.Now()
	t.Logf("killed %s with %d runs inside their handlers (%d on %s)", victim.name, len(inHandler), len(onWorker[other.name]), other.name)

	lost := map[int64]bool{}
	for _, id := range inHandler {
		lost[id] = true
	}
	testwait.Eventually(t, ackWait+60*time.Second, "the killed runs to end LOST and their retries to succeed", func() bool {
		done := 0
		for _, r := range c.runs(slow) {
			if r.trigger == "retry" && r.status == "SUCCEEDED" {
				done++
			}
		}
		return done == len(inHandler)
	})
	for _, r := range c.runs(slow) {
		switch {
		case lost[r.id]:
			if r.status != "LOST" || r.worker != victim.name || !strings.Contains(r.message, "its worker "+victim.name+" died while it ran") {
				t.Errorf("%s: want LOST on %s saying it died (message %q)", r, victim.name, r.message)
			} else if took := r.finished.Sub(killed); took > ackWait+15*time.Second {
				// Redelivered within the ack wait of the kill, then ended at
				// once (a loaded machine's share aside).
				t.Errorf("%s ended LOST %s after the kill, want soon after the ack wait (%s)", r, took.Round(100*time.Millisecond), ackWait)
			}
		case r.trigger == "retry":
			if r.status != "SUCCEEDED" || r.attempt != 1 || r.worker != other.name {
				t.Errorf("%s: retry attempt %d, want attempt 1 SUCCEEDED on %s", r, r.attempt, other.name)
			}
		}
	}
	for _, id := range waiting {
		testwait.Eventually(t, 60*time.Second, fmt.Sprintf("the waiting run %d to end", id), func() bool {
			r, err := c.api().GetRun(c.ctx(), id)
			return err == nil && r.Status == "SUCCEEDED"
		})
	}

	// No (run, attempt) executed twice; every lost run started once, on
	// the victim; every waiting run and every retry ran once.
	type attempt struct {
		run int64
		n   int
	}
	starts := map[attempt][]string{}
	for _, e := range c.executions() {
		if e.phase == "start" {
			k := attempt{e.run, e.attempt}
			starts[k] = append(starts[k], e.host)
		}
	}
	for k, hosts := range starts {
		if len(hosts) != 1 {
			t.Errorf("run %d attempt %d started %d times (on %v), want once", k.run, k.n, len(hosts), hosts)
		}
	}
	for _, id := range inHandler {
		if h := starts[attempt{id, 0}]; len(h) != 1 || h[0] != victim.name {
			t.Errorf("lost run %d started on %v, want once on %s", id, h, victim.name)
		}
	}
	for _, id := range waiting {
		if h := starts[attempt{id, 0}]; len(h) != 1 {
			t.Errorf("waiting run %d started on %v, want once", id, h)
		}
	}

	// The runs on the survivor end now, and every run is terminal.
	if err := os.WriteFile(filepath.Join(c.witness, release), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	to := killed.Add(8 * time.Second)
	at(to.Add(2 * time.Second))
	rep := c.audit(ticks, from, to, only("SUCCEEDED"))
	t.Logf("audit of the ticking jobs: %s", rep)
	for _, r := range c.runs(slow) {
		if slices.Contains(onWorker[other.name], r.id) && r.status != "SUCCEEDED" {
			t.Errorf("%s on the survivor: want SUCCEEDED", r)
		}
	}
	c.checkStreams(false)
}

// PostgreSQL is restarted while runs finish: their results, published
// while it was down, are all applied afterwards, and scheduling resumes
// without losing or doubling a fire.
func TestPostgresRestart(t *testing.T) {
	c := newCluster(t, options{})
	ticks := c.createJobs("tick", 6, "fire_all", "")
	// The slow jobs' effect (their witness line) comes at their end, while
	// PostgreSQL is down. Six jobs, not six runs of one: runs of a job are
	// serial by default.
	var slow []int64
	for i := range 6 {
		slow = append(slow, c.createManualJob(fmt.Sprintf("slow-%d", i), "sleep 5; "+tickCmd))
	}
	from := firstFire()

	at(halfSecond(4 * time.Second))
	var slowRuns []int64
	for _, job := range slow {
		slowRuns = append(slowRuns, c.trigger(job))
	}
	testwait.Eventually(t, 20*time.Second, "the slow runs to be RUNNING", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE id = ANY($1) AND status = 'RUNNING'`, slowRuns) == len(slowRuns)
	})
	c.stop(c.pg)
	stopped := time.Now()
	testwait.Eventually(t, 10*time.Second, "/readyz to report PostgreSQL unreachable", func() bool { return !c.ready(c.scheds[0]) })
	// The slow runs end meanwhile; their results wait in JETJOB_EVENTS.
	testwait.Eventually(t, 15*time.Second, "results to wait in "+stream.Events, func() bool {
		return c.streamMsgs(stream.Events) >= uint64(len(slowRuns))
	})
	waiting := c.streamMsgs(stream.Events)
	at(stopped.Add(15 * time.Second))
	c.start(c.pg)
	back := time.Now()
	t.Logf("PostgreSQL down %s; %d events waited in %s", back.Sub(stopped).Round(100*time.Millisecond), waiting, stream.Events)
	c.waitReady(30 * time.Second)
	testwait.Eventually(t, 4*leaseTTL, "both schedulers to hold shards again", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })
	to := back.Add(6 * time.Second)
	at(to.Add(2 * time.Second))

	rep := c.audit(ticks, from, to, only("SUCCEEDED"))
	t.Logf("audit: %s", rep)
	// The results published during the outage were applied: every slow
	// run SUCCEEDED, finished while PostgreSQL was down, and ran once.
	execs := c.executions()
	for _, r := range c.runs(slow) {
		n := 0
		for _, e := range execs {
			if e.run == r.id {
				n++
			}
		}
		switch {
		case r.status != "SUCCEEDED":
			t.Errorf("%s: want SUCCEEDED (message %q)", r, r.message)
		case r.finished == nil || r.finished.Before(stopped) || r.finished.After(back):
			t.Errorf("%s finished at %v, want while PostgreSQL was down (%s to %s)", r, r.finished,
				stopped.UTC().Format("15:04:05.000"), back.UTC().Format("15:04:05.000"))
		case n != 1:
			t.Errorf("%s executed %d times, want once", r, n)
		}
	}
	c.checkStreams(false)
}

// Both schedulers, then both workers, are restarted one at a time while
// jobs fire: no fire is lost, doubled or even late past the misfire
// threshold.
func TestRollingRestart(t *testing.T) {
	c := newCluster(t, options{})
	fireAll, skip, from := c.createOutageJobs()
	testwait.Eventually(t, 4*leaseTTL, "both schedulers to hold shards", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })

	at(halfSecond(3 * time.Second))
	begin := time.Now()
	for _, n := range c.scheds {
		c.restart(n)
		c.waitReady(30 * time.Second)
		testwait.Eventually(t, 3*leaseTTL, n.name+" to hold shards again", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })
		t.Logf("%s restarted (%s since the rolling restart began)", n.name, time.Since(begin).Round(100*time.Millisecond))
	}
	for _, n := range c.workers {
		c.restart(n)
		t.Logf("%s restarted (%s since the rolling restart began)", n.name, time.Since(begin).Round(100*time.Millisecond))
	}
	to := time.Now().Add(4 * time.Second)
	at(to.Add(2 * time.Second))

	jobs := all(fireAll, skip)
	rep := c.audit(jobs, from, to, only("SUCCEEDED"))
	t.Logf("audit: %s; largest start delay %s", rep, c.maxLateness(jobs, from, to))
	if n := c.late(jobs, from, to, misfireThreshold); n != 0 {
		t.Errorf("%d runs started more than %s after their fire time", n, misfireThreshold)
	}
	c.checkStreams(false)
}

// A plain jetjob-worker container, configured by its environment only,
// runs `shell` jobs: scheduled and manual runs succeed with the run's
// variables, a failing command fails its run with the exit status, and
// every output line is readable through the logs API and in JETJOB_LOGS.
func TestDropInWorker(t *testing.T) {
	c := newCluster(t, options{schedulers: 1, workers: 1, noWitness: true})
	const hello = `echo "hello job=$JETJOB_JOB_ID run=$JETJOB_RUN_ID attempt=$JETJOB_ATTEMPT fired=$JETJOB_SCHEDULED_AT type=$JETJOB_TRIGGER_TYPE"; echo "second line"`
	tick := c.createJobs("hello", 1, "fire_all", hello)[0]
	manual := c.createManualJob("hello-manual", hello)
	fail := c.createManualJob("fail", `echo "about to fail"; echo "it broke" >&2; exit 3`)

	manualRuns := []int64{c.trigger(manual), c.trigger(manual)}
	failRun := c.trigger(fail)
	var runs []apiv1.Run
	testwait.Eventually(t, 30*time.Second, "three scheduled runs of the hello job to succeed", func() bool {
		l, err := c.api().ListRuns(c.ctx(), tick, apiv1ListAll)
		if err != nil {
			return false
		}
		runs = runs[:0]
		for _, r := range l.Runs {
			if r.Status == "SUCCEEDED" {
				runs = append(runs, r)
			}
		}
		return len(runs) >= 3
	})
	for _, id := range append(manualRuns, failRun) {
		testwait.Eventually(t, 30*time.Second, "the manual runs to end", func() bool {
			r, err := c.api().GetRun(c.ctx(), id)
			if err == nil && (r.Status == "SUCCEEDED" || r.Status == "FAILED") {
				if id != failRun {
					runs = append(runs, *r)
				}
				return true
			}
			return false
		})
	}

	js, closeJS := c.jetStream()
	defer closeJS()
	for _, r := range runs {
		if r.Status != "SUCCEEDED" {
			t.Errorf("run %d of job %d: %s (%q), want SUCCEEDED", r.ID, r.JobID, r.Status, r.Message)
			continue
		}
		want := "hello job=" + itoa(r.JobID) + " run=" + itoa(r.ID) + " attempt=" + itoa(int64(r.Attempt)) +
			" fired=" + r.ScheduledAt.UTC().Format("2006-01-02T15:04:05.000Z07:00") + " type=" + r.TriggerType
		fromAPI := c.apiLog(r.ID)
		fromStream := streamLog(t, js, r.Group, r.ID)
		for src, lines := range map[string][]string{"logs API": fromAPI, stream.Logs: fromStream} {
			if !hasLine(lines, want) || !hasLine(lines, "second line") {
				t.Errorf("run %d: %s has %q, want lines %q and %q", r.ID, src, lines, want, "second line")
			}
		}
	}
	fr, err := c.api().GetRun(c.ctx(), failRun)
	if err != nil {
		t.Fatal(err)
	}
	if fr.Status != "FAILED" || !strings.Contains(fr.Message, "exit status 3") {
		t.Errorf("failing run: %s %q, want FAILED with the exit status", fr.Status, fr.Message)
	}
	if lines := c.apiLog(failRun); !hasLine(lines, "about to fail") || !hasLine(lines, "it broke") {
		t.Errorf("failing run's log %q: want its stdout and stderr lines", lines)
	}
	t.Logf("%d successful runs and a failing one checked, e.g. %q", len(runs), c.apiLog(runs[0].ID))
}

// apiv1ListAll reads up to 100 runs.
var apiv1ListAll = jclient.ListRunsOptions{Limit: 100}

// hasLine reports whether one of lines starts with want (a line's text is
// followed by its fields, e.g. {"stream":"stdout"}).
func hasLine(lines []string, want string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return l == want || strings.HasPrefix(l, want+" ") })
}

// A three-node NATS cluster with replicated streams loses the node leading
// JETJOB_TRIGGERS (SIGKILL) for 20 s: scheduling goes on without loss or
// duplicates, and the node catches up when it returns.
func TestNATSClusterNodeLoss(t *testing.T) {
	c := newCluster(t, options{natsNodes: 3})
	fireAll := c.createJobs("all", 6, "fire_all", "")
	skip := c.createJobs("skip", 4, "skip", "")
	from := firstFire()
	for _, name := range []string{stream.Triggers, stream.Events, stream.Logs} {
		if info := c.streamInfo(name); info.Config.Replicas != 3 {
			t.Errorf("stream %s has %d replicas, want 3", name, info.Config.Replicas)
		}
	}

	at(halfSecond(5 * time.Second))
	info := c.streamInfo(stream.Triggers)
	if info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("stream %s has no cluster leader: %+v", stream.Triggers, info.Cluster)
	}
	var victim *node
	for _, n := range c.nats {
		if n.name == info.Cluster.Leader {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("stream leader %q is not one of the nodes", info.Cluster.Leader)
	}
	c.kill(victim)
	killed := time.Now()
	t.Logf("killed %s, the leader of %s", victim.name, stream.Triggers)
	at(killed.Add(20 * time.Second))
	if l := c.streamInfo(stream.Triggers).Cluster.Leader; l == "" || l == victim.name {
		t.Errorf("stream %s leader while %s is down: %q", stream.Triggers, victim.name, l)
	}
	c.start(victim)
	restarted := time.Now()
	c.waitNATSClusterHealthy(60 * time.Second)
	t.Logf("%s back and the cluster healthy %s after its start", victim.name, time.Since(restarted).Round(100*time.Millisecond))
	to := time.Now().Add(4 * time.Second)
	at(to.Add(2 * time.Second))

	// Losing a leader costs a Raft election of the stream and of its
	// consumers (NATS: a 4-9 s election timeout), and clients of the dead
	// node reconnect: measured here, fires of the next 6-10 s start that
	// late. fire_all ones run all the same; skip ones arriving later than
	// the misfire threshold (5 s) end EXPIRED, as their policy says. After
	// that, scheduling is back on time.
	settled := killed.Add(12 * time.Second)
	rep := c.audit(all(fireAll, skip), from, to, func(job int64, s time.Time) []string {
		if in(job, skip) && between(s, killed.Add(-time.Second), settled) {
			return []string{"SUCCEEDED", "SKIPPED", "EXPIRED"}
		}
		return []string{"SUCCEEDED"}
	})
	t.Logf("audit: %s", rep)
	t.Logf("largest start delay of a fire around the kill: %s; after the cluster settled: %s",
		c.maxLateness(fireAll, killed.Add(-time.Second), settled), c.maxLateness(all(fireAll, skip), settled, to))
	if n := c.late(all(fireAll, skip), settled, to, 3*time.Second); n != 0 {
		t.Errorf("%d runs fired after the cluster settled (%s after the kill) started more than 3s late",
			n, settled.Sub(killed))
	}
	c.checkStreams(false)
}

// streamInfo reads a stream's info from a running node.
func (c *cluster) streamInfo(name string) *jetstream.StreamInfo {
	c.t.Helper()
	js, closeJS := c.jetStream()
	defer closeJS()
	ctx, cancel := context.WithTimeout(c.ctx(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		c.t.Fatalf("stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		c.t.Fatalf("stream %s: %v", name, err)
	}
	return info
}
