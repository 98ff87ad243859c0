package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// tickCmd is the shell command of the suite's jobs: one witness line per
// execution, appended by the job's own shell to a file of the machine
// running the tests (see the package doc). HOSTNAME is the worker's name.
const tickCmd = `echo "exec $JETJOB_JOB_ID $JETJOB_SCHEDULED_AT $JETJOB_RUN_ID $JETJOB_ATTEMPT $HOSTNAME" >> ` + witnessMount + `/exec.log`

// everySecond fires on every whole second.
const everySecond = "* * * * * *"

// createJobs creates n jobs of the `shell` handler firing every second with
// the given misfire policy and params (tickCmd when empty).
func (c *cluster) createJobs(name string, n int, misfire, params string) []int64 {
	c.t.Helper()
	if params == "" {
		params = tickCmd
	}
	ids := make([]int64, 0, n)
	for i := range n {
		j, err := c.api().CreateJob(c.ctx(), apiv1.JobSpec{
			Group: group, Name: fmt.Sprintf("%s-%d", name, i), Handler: "shell", Params: params,
			ScheduleType: "cron", ScheduleExpr: everySecond, MisfirePolicy: misfire,
		})
		if err != nil {
			c.t.Fatalf("create job %s-%d: %v", name, i, err)
		}
		ids = append(ids, j.ID)
	}
	return ids
}

// createManualJob creates a job that only runs when triggered.
func (c *cluster) createManualJob(name, params string) int64 {
	c.t.Helper()
	j, err := c.api().CreateJob(c.ctx(), apiv1.JobSpec{
		Group: group, Name: name, Handler: "shell", Params: params, ScheduleType: "none",
	})
	if err != nil {
		c.t.Fatalf("create job %s: %v", name, err)
	}
	return j.ID
}

// trigger starts a manual run and returns its id.
func (c *cluster) trigger(job int64) int64 {
	c.t.Helper()
	r, err := c.api().TriggerJob(c.ctx(), job, nil)
	if err != nil {
		c.t.Fatalf("trigger job %d: %v", job, err)
	}
	return r.ID
}

// execution is one line of the witness file.
type execution struct {
	phase   string // exec (whole job), start or end (long jobs)
	job     int64
	at      time.Time
	run     int64
	attempt int
	host    string
}

// executions reads the witness file.
func (c *cluster) executions() []execution {
	c.t.Helper()
	var out []execution
	for _, fs := range c.witnessLines("exec.log", 6) {
		e := execution{phase: fs[0], host: fs[5]}
		var errs []error
		var err error
		e.job, err = strconv.ParseInt(fs[1], 10, 64)
		errs = append(errs, err)
		e.at, err = time.Parse(time.RFC3339Nano, fs[2])
		errs = append(errs, err)
		e.run, err = strconv.ParseInt(fs[3], 10, 64)
		errs = append(errs, err)
		e.attempt, err = strconv.Atoi(fs[4])
		errs = append(errs, err)
		if err := errors.Join(errs...); err != nil {
			c.t.Errorf("exec.log line %q: %v", fs, err)
			continue
		}
		out = append(out, e)
	}
	return out
}

// witnessLines reads the witness file name split into fields, a line each
// in order; a line not of n fields is an error of the test. A file not
// written yet has no lines.
func (c *cluster) witnessLines(name string, n int) [][]string {
	c.t.Helper()
	f, err := os.Open(filepath.Join(c.witness, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if len(fs) != n {
			c.t.Errorf("%s line %d is malformed: %q", name, line, sc.Text())
			continue
		}
		out = append(out, fs)
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// fires are the fire times r stands for: its own, and for a SKIPPED run
// that stands for a range of a job's missed fires (policy.ParseSkipped)
// each of them, evenly spaced from the first to the last (the suite's
// jobs fire every second).
func (r runRow) fires() []time.Time {
	n, _, first, last, ok := policy.ParseSkipped(r.message)
	if r.status != "SKIPPED" || !ok || n < 2 || !first.Equal(r.at) {
		return []time.Time{r.at}
	}
	step := last.Sub(first) / time.Duration(n-1)
	out := make([]time.Time, n)
	for k := range out {
		out[k] = first.Add(time.Duration(k) * step)
	}
	return out
}

// runRow is one job_runs row.
type runRow struct {
	id        int64
	job       int64
	at        time.Time
	status    string
	attempt   int
	trigger   string
	triggered *time.Time
	started   *time.Time
	finished  *time.Time
	worker    string
	message   string
	seq       *int64
}

func (r runRow) String() string {
	return fmt.Sprintf("run %d (job %d, fire %s, %s, worker %q)", r.id, r.job, r.at.UTC().Format("15:04:05.000"), r.status, r.worker)
}

// runs loads the runs of jobs.
func (c *cluster) runs(jobs []int64) []runRow {
	c.t.Helper()
	rows, err := c.pool().Query(c.ctx(), `SELECT id, job_id, scheduled_at, status, attempt, trigger_type,
		triggered_at, started_at, finished_at, worker_id, message, stream_seq
		FROM job_runs WHERE job_id = ANY($1) ORDER BY id`, jobs)
	if err != nil {
		c.t.Fatal(err)
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		var r runRow
		if err := rows.Scan(&r.id, &r.job, &r.at, &r.status, &r.attempt, &r.trigger, &r.triggered,
			&r.started, &r.finished, &r.worker, &r.message, &r.seq); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

// waitSettled waits until no run scheduled up to `to` is non-terminal
// (invariant 4), whatever its job.
func (c *cluster) waitSettled(to time.Time, within time.Duration) {
	c.t.Helper()
	var last int
	if testwait.Poll(within, func() bool {
		last = c.count(`SELECT count(*) FROM job_runs WHERE scheduled_at <= $1
			AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`, to)
		return last == 0
	}) {
		return
	}
	rows, err := c.pool().Query(c.ctx(), `SELECT id, job_id, scheduled_at, status, worker_id FROM job_runs
		WHERE scheduled_at <= $1 AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING') ORDER BY id LIMIT 5`, to)
	var ex []string
	if err == nil {
		for rows.Next() {
			var r runRow
			if rows.Scan(&r.id, &r.job, &r.at, &r.status, &r.worker) == nil {
				ex = append(ex, r.String())
			}
		}
		rows.Close()
	}
	c.t.Fatalf("%d runs scheduled up to %s still not terminal after %s, e.g. %v",
		last, to.UTC().Format("15:04:05.000"), within, ex)
}

// policyFn says which statuses a fire of a job at a time may end in.
type policyFn func(job int64, at time.Time) []string

// only allows the given statuses everywhere.
func only(statuses ...string) policyFn {
	return func(int64, time.Time) []string { return statuses }
}

// report sums up an audit.
type report struct {
	expected   int            // fires in the window
	runs       int            // runs of those fires
	statuses   map[string]int // of those runs
	executions int            // witness lines of those runs
	repeated   int            // runs executed again after their worker was killed (any fire time)
}

func (r report) String() string {
	keys := make([]string, 0, len(r.statuses))
	for k := range r.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var st []string
	for _, k := range keys {
		st = append(st, fmt.Sprintf("%s %d", k, r.statuses[k]))
	}
	return fmt.Sprintf("fires expected %d, runs %d (%s), executions %d, re-executed after a worker was killed %d",
		r.expected, r.runs, strings.Join(st, ", "), r.executions, r.repeated)
}

// audit checks the invariants for jobs over the fires in [from, to], after
// every run up to `to` settled (see the package doc):
//   - every fire has exactly one run, in a status allowed says;
//   - every SUCCEEDED run executed exactly once, every SKIPPED/EXPIRED one
//     never (an extra execution is tolerated only after an earlier one on a
//     killed worker);
//   - no (job, fire) executed under two runs, no execution of an unknown run.
//
// It returns the figures, for the test's log.
func (c *cluster) audit(jobs []int64, from, to time.Time, allowed policyFn) report {
	c.t.Helper()
	c.waitSettled(to, 90*time.Second)
	runs := c.runs(jobs)
	execs := c.executions()
	c.mu.Lock()
	killed := maps(c.killed)
	c.mu.Unlock()

	rep := report{statuses: map[string]int{}}
	byFire := map[string][]runRow{}
	byID := map[int64]runRow{}
	fireKey := func(job int64, at time.Time) string { return fmt.Sprintf("%d@%d", job, at.UnixMilli()) }
	for _, r := range runs {
		byID[r.id] = r
		if r.attempt == 0 && (r.trigger == "schedule" || r.trigger == "misfire") {
			for _, at := range r.fires() {
				byFire[fireKey(r.job, at)] = append(byFire[fireKey(r.job, at)], r)
			}
		}
	}
	execsByRun := map[int64][]execution{}
	runsByFire := map[string]map[int64]bool{}
	for _, e := range execs {
		if e.phase == "end" {
			continue
		}
		execsByRun[e.run] = append(execsByRun[e.run], e)
		k := fireKey(e.job, e.at)
		if runsByFire[k] == nil {
			runsByFire[k] = map[int64]bool{}
		}
		runsByFire[k][e.run] = true
	}

	var lost, doubled, badStatus, extra, wrongExec []string
	inWindow := map[int64]bool{}
	for _, job := range jobs {
		for _, s := range testwait.SecondsBetween(from, to) {
			rep.expected++
			rs := byFire[fireKey(job, s)]
			switch {
			case len(rs) == 0:
				lost = append(lost, fmt.Sprintf("job %d fire %s", job, s.UTC().Format("15:04:05")))
				continue
			case len(rs) > 1:
				doubled = append(doubled, fmt.Sprintf("job %d fire %s: %d runs", job, s.UTC().Format("15:04:05"), len(rs)))
			}
			for _, r := range rs {
				inWindow[r.id] = true
				rep.runs++
				rep.statuses[r.status]++
				if ok := allowed(job, s); !slices.Contains(ok, r.status) {
					msg := fmt.Sprintf("%s (want one of %v; message %q; started %v)", r, ok, r.message, r.started)
					if len(badStatus) < 3 {
						msg += "\n" + c.trace(r.id)
					}
					badStatus = append(badStatus, msg)
				}
			}
		}
	}
	// Runs of these jobs that are not a fire of the window: retries (none
	// are configured) or fires off the schedule's grid.
	for _, r := range runs {
		if inWindow[r.id] || r.at.Before(from) || r.at.After(to) || r.trigger == "manual" {
			continue
		}
		extra = append(extra, r.String())
	}

	for id, es := range execsByRun {
		if !slices.Contains(jobs, es[0].job) {
			continue
		}
		r, known := byID[id]
		if !known {
			wrongExec = append(wrongExec, fmt.Sprintf("run %d executed (%d times) but has no row", id, len(es)))
			continue
		}
		// Whatever the window: every execution but the last must have
		// been on a killed worker.
		if !slices.ContainsFunc(es[:len(es)-1], func(e execution) bool { return !killed[e.host] }) {
			if len(es) > 1 {
				rep.repeated++
			}
		} else {
			wrongExec = append(wrongExec, fmt.Sprintf("%s executed %d times, on %v", r, len(es), hosts(es)))
		}
		if !inWindow[id] {
			continue // its run may still be going
		}
		rep.executions += len(es)
		switch r.status {
		case "SUCCEEDED":
		case "LOST":
			if !killed[es[len(es)-1].host] {
				wrongExec = append(wrongExec, fmt.Sprintf("%s executed on %v", r, hosts(es)))
			}
		default:
			wrongExec = append(wrongExec, fmt.Sprintf("%s executed on %v, but it did not succeed", r, hosts(es)))
		}
	}
	var unapplied []string
	for id := range inWindow {
		r := byID[id]
		if r.status == "SUCCEEDED" && len(execsByRun[id]) == 0 {
			wrongExec = append(wrongExec, fmt.Sprintf("%s SUCCEEDED without an execution", r))
		}
		// A run that ran has its start and its end recorded: both come
		// from the worker's events (invariant 3).
		if r.status == "SUCCEEDED" && (r.started == nil || r.finished == nil || r.worker == "") {
			unapplied = append(unapplied, fmt.Sprintf("%s: started_at %v, finished_at %v\n%s",
				r, r.started, r.finished, c.trace(r.id)))
		}
	}
	for k, rs := range runsByFire {
		if len(rs) > 1 {
			doubled = append(doubled, fmt.Sprintf("fire %s executed by %d runs", k, len(rs)))
		}
	}

	fail := func(what string, list []string) {
		if len(list) > 0 {
			sort.Strings(list)
			c.t.Errorf("%d %s, e.g.\n  %s", len(list), what, strings.Join(list[:min(8, len(list))], "\n  "))
		}
	}
	fail("fires without a run (lost)", lost)
	fail("fires run twice", doubled)
	fail("runs in a status their misfire policy does not allow", badStatus)
	fail("runs off the schedule", extra)
	fail("executions that break exactly-once", wrongExec)
	fail("SUCCEEDED runs whose start or end was never recorded (a worker event not applied)", unapplied)
	return rep
}

func maps(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func hosts(es []execution) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.host
	}
	return out
}

// checkStreams checks what JetStream says once everything settled:
//   - JETJOB_TRIGGERS stored exactly one message per published message
//     unit: a run published alone, or a trigger batch (job_runs.batch),
//     counting every run not SKIPPED and no longer SCHEDULED as published;
//     no two units share a stream sequence, and every run of a batch has
//     its batch's one sequence;
//   - JETJOB_TRIGGERS and JETJOB_EVENTS are empty and their consumers have
//     nothing pending or unacknowledged: every trigger was consumed, every
//     result applied (invariant 3).
//
// The jobs keep firing meanwhile, so the figures are read half-way between
// two fires, when no publish is in flight (a trigger stored a moment before
// its run is recorded TRIGGERED would look like an extra message), and read
// again at the next half second while they disagree: a trigger stored twice
// stays an extra message for good.
//
// pendingOK leaves triggers that hit their max deliveries (they stay in
// the stream, their runs LOST) out of the emptiness check.
func (c *cluster) checkStreams(pendingOK bool) {
	c.t.Helper()
	js, closeJS := c.jetStream()
	defer closeJS()
	ctx, cancel := context.WithTimeout(c.ctx(), 90*time.Second)
	defer cancel()
	var (
		why                                         string
		stored, published, withSeq, distinct, split int
	)
	deadline := time.Now().Add(45 * time.Second)
	for {
		at(halfSecond(0))
		why = c.streamsDrained(ctx, js, pendingOK)
		ts, err := js.Stream(ctx, stream.Triggers)
		if err != nil {
			c.t.Fatal(err)
		}
		info, err := ts.Info(ctx)
		if err != nil {
			c.t.Fatal(err)
		}
		// Sequences start at 1 and are never reused: the last one counts
		// every message ever stored, consumed (deleted) ones included.
		stored = int(info.State.LastSeq)
		// A unit is what one message carries: a run alone, or a batch.
		published = c.count(`SELECT count(DISTINCT ` + unit + `) FROM job_runs WHERE status NOT IN ('SKIPPED', 'SCHEDULED')`)
		withSeq = c.count(`SELECT count(DISTINCT ` + unit + `) FROM job_runs WHERE stream_seq IS NOT NULL`)
		distinct = c.count(`SELECT count(DISTINCT stream_seq) FROM job_runs`)
		split = c.count(`SELECT count(*) FROM (SELECT batch FROM job_runs WHERE batch IS NOT NULL AND stream_seq IS NOT NULL
			GROUP BY batch HAVING count(DISTINCT stream_seq) > 1) s`)
		if (why == "" && stored == published && withSeq == distinct && split == 0) || time.Now().After(deadline) {
			break
		}
	}
	c.t.Logf("JetStream: %s stored %d trigger messages for %d published units (%d units with a recorded sequence, %d distinct sequences)",
		stream.Triggers, stored, published, withSeq, distinct)
	if why != "" {
		c.t.Errorf("JetStream not drained: %s", why)
	}
	if stored != published {
		c.t.Errorf("%s stored %d trigger messages for %d published units (runs alone and batches): a trigger was stored twice (or a run was published without its run moving on)",
			stream.Triggers, stored, published)
	}
	if withSeq != distinct {
		c.t.Errorf("%d units (runs alone and batches) record a trigger sequence but there are %d distinct sequences: two units share a trigger", withSeq, distinct)
	}
	if split != 0 {
		c.t.Errorf("%d trigger batches were stored more than once: their runs record different sequences", split)
	}
}

// unit names what one trigger message carries, as SQL over job_runs: a
// batch's runs share one message, every other run has its own.
const unit = `coalesce('batch ' || batch, 'run ' || id)`

// streamsDrained says what is still waiting in the streams, "" if nothing.
func (c *cluster) streamsDrained(ctx context.Context, js jetstream.JetStream, pendingOK bool) string {
	var why []string
	for _, check := range []struct{ stream, consumer string }{
		{stream.Triggers, stream.AnyConsumer(group)},
		{stream.Triggers, stream.BatchConsumer(group)},
		{stream.Events, stream.EventsConsumer},
	} {
		s, err := js.Stream(ctx, check.stream)
		if err != nil {
			return fmt.Sprintf("stream %s: %v", check.stream, err)
		}
		si, err := s.Info(ctx)
		if err != nil {
			return fmt.Sprintf("stream %s: %v", check.stream, err)
		}
		cons, err := s.Consumer(ctx, check.consumer)
		if err != nil {
			return fmt.Sprintf("consumer %s: %v", check.consumer, err)
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return fmt.Sprintf("consumer %s: %v", check.consumer, err)
		}
		if pendingOK && check.stream == stream.Triggers {
			continue
		}
		if si.State.Msgs != 0 || ci.NumPending != 0 || ci.NumAckPending != 0 {
			why = append(why, fmt.Sprintf("%s holds %d messages, consumer %s has %d pending and %d unacknowledged",
				check.stream, si.State.Msgs, check.consumer, ci.NumPending, ci.NumAckPending))
		}
	}
	return strings.Join(why, "; ")
}

// streamMsgs returns how many messages a stream holds now.
func (c *cluster) streamMsgs(name string) uint64 {
	c.t.Helper()
	return c.streamInfo(name).State.Msgs
}

// late counts the runs of jobs whose fire lies in [from, to] that started
// more than d after it.
func (c *cluster) late(jobs []int64, from, to time.Time, d time.Duration) int {
	c.t.Helper()
	return c.count(`SELECT count(*) FROM job_runs WHERE job_id = ANY($1) AND scheduled_at BETWEEN $2 AND $3
		AND started_at - scheduled_at > make_interval(secs => $4)`, jobs, from, to, d.Seconds())
}

// maxLateness is the largest start delay (started_at - scheduled_at) of the
// runs of jobs whose fire lies in [from, to].
func (c *cluster) maxLateness(jobs []int64, from, to time.Time) time.Duration {
	c.t.Helper()
	var secs *float64
	if err := c.pool().QueryRow(c.ctx(), `SELECT extract(epoch FROM max(started_at - scheduled_at))::float8
		FROM job_runs WHERE job_id = ANY($1) AND scheduled_at BETWEEN $2 AND $3`, jobs, from, to).Scan(&secs); err != nil {
		c.t.Fatal(err)
	}
	if secs == nil {
		return 0
	}
	return time.Duration(*secs * float64(time.Second)).Round(time.Millisecond)
}

// onTime lists the runs of jobs whose fire lies in [from, to] that started
// within d of it (or never), for messages.
func (c *cluster) onTime(jobs []int64, from, to time.Time, d time.Duration) []string {
	c.t.Helper()
	var out []string
	for _, r := range c.runs(jobs) {
		if between(r.at, from, to) && (r.started == nil || r.started.Sub(r.at) <= d) {
			started := "never"
			if r.started != nil {
				started = r.started.UTC().Format("15:04:05.000")
			}
			out = append(out, fmt.Sprintf("%s started %s, triggered %v", r, started, r.triggered))
		}
	}
	return out
}

// trace returns the log lines of the schedulers and workers that name run
// id, for failure messages.
func (c *cluster) trace(id int64) string {
	var out []string
	for _, n := range append(append([]*node{}, c.scheds...), c.workers...) {
		rc, err := n.ctr.Logs(context.Background())
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(rc)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			if strings.Contains(l, fmt.Sprintf(`"run_id":%d,`, id)) || strings.Contains(l, fmt.Sprintf(`"run_id":%d}`, id)) ||
				strings.Contains(l, fmt.Sprintf(`run-%d-`, id)) {
				out = append(out, "      "+n.name+": "+l)
			}
		}
		rc.Close()
	}
	return strings.Join(out[:min(len(out), 30)], "\n")
}
