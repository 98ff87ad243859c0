package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// mapParts is the parts of TestMapReduceKilled's fire: enough that both
// kills land while parts run on a loaded 2-core machine, few enough that
// the test stays near a minute. The 1,000 items of issue #33 are the
// in-process test's (scheduler/mapreduce_test.go, with a simulated crash).
const mapParts = 240

// mapReduceCmd is the shell job of TestMapReduceKilled, one command in
// three roles (docs/worker.md, "Drop-in worker"): the root maps items (the
// JSON array written to $JETJOB_MAP); a part ($JETJOB_ITEM set) writes
// "start INDEX RUN ATTEMPT HOST" to parts.log, sleeps, sets its item as
// its output and writes "end ..."; the reduce run ($JETJOB_OUTPUTS set)
// writes "reduce RUN ATTEMPT HOST" to reduce.log and keeps a copy of the
// outputs it was given, reduce-RUN-ATTEMPT.json.
func mapReduceCmd(items []int) string {
	b, err := json.Marshal(items)
	if err != nil {
		panic(err)
	}
	part := func(phase string) string {
		return `echo "` + phase + ` $JETJOB_SHARD_INDEX $JETJOB_RUN_ID $JETJOB_ATTEMPT $HOSTNAME" >> ` + witnessMount + `/parts.log`
	}
	return `if [ -n "$JETJOB_OUTPUTS" ]; then ` +
		`echo "reduce $JETJOB_RUN_ID $JETJOB_ATTEMPT $HOSTNAME" >> ` + witnessMount + `/reduce.log; ` +
		`cp "$JETJOB_OUTPUTS" ` + witnessMount + `/reduce-$JETJOB_RUN_ID-$JETJOB_ATTEMPT.json; ` +
		`echo '{"reduced": true}' > "$JETJOB_OUTPUT"; ` +
		`elif [ -n "$JETJOB_ITEM" ]; then ` + part("start") + `; sleep 0.4; ` +
		`echo "$JETJOB_ITEM" > "$JETJOB_OUTPUT"; ` + part("end") + `; ` +
		`else echo '` + string(b) + `' > "$JETJOB_MAP"; fi`
}

// TestMapReduceKilled is issue #33's crash test with real processes: a
// shell job maps mapParts items on the drop-in worker (reduce registered
// by JETJOB_SHELL_REDUCE); while parts run, one worker and the scheduler
// holding shard 0 are killed with SIGKILL. Then every part index has
// exactly one SUCCEEDED run, no (index, attempt) started twice (the
// parts' own record), the parts the dead worker held ended LOST and were
// retried, the reduce ran once with every output in index order, and no
// run of the job is left SCHEDULED, TRIGGERED or RUNNING.
func TestMapReduceKilled(t *testing.T) {
	const ackWait = 3 * time.Second
	c := newCluster(t, options{workerEnv: map[string]string{
		"JETJOB_SHELL_REDUCE": "true", "JETJOB_ACK_WAIT": ackWait.String(), "JETJOB_CONCURRENCY": "8"}})
	testwait.Eventually(t, 4*leaseTTL, "both schedulers to hold shards", func() bool { return c.shardsHeldBy("sched-1", "sched-2") })
	items := make([]int, mapParts)
	for i := range items {
		items[i] = 1000 + 7*i
	}
	j, err := c.api().CreateJob(c.ctx(), apiv1.JobSpec{Group: group, Name: "mapreduce", Handler: "shell",
		Params: mapReduceCmd(items), ScheduleType: "none", MaxRetries: 2, RetryBackoff: "fixed",
		RetryInitial: apiv1.Duration(100 * time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	root := c.trigger(j.ID)

	// Kill while parts run: some have ended, some are inside their
	// handlers on the worker that is killed.
	var victim *node
	testwait.Eventually(t, 120*time.Second, "30 parts to end and parts to run on both workers", func() bool {
		open := map[string]int{}
		ended := 0
		for _, fs := range c.witnessLines("parts.log", 5) {
			k := fs[1] + " " + fs[3] // index, attempt
			if fs[0] == "start" {
				open[fs[4]+" "+k]++
			} else {
				open[fs[4]+" "+k]--
				ended++
			}
		}
		running := map[string]int{}
		for k, n := range open {
			if n > 0 {
				running[strings.Fields(k)[0]]++
			}
		}
		victim = nil
		for _, w := range c.workers {
			if running[w.name] > 0 && (victim == nil || running[w.name] > running[victim.name]) {
				victim = w
			}
		}
		return ended >= 30 && victim != nil
	})
	var owner string
	if err := c.pool().QueryRow(c.ctx(), `SELECT owner FROM scheduler_shards WHERE shard = 0`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	var sched *node
	for _, n := range c.scheds {
		if n.name == owner {
			sched = n
		}
	}
	if sched == nil {
		t.Fatalf("shard 0 is held by %q, not a scheduler of the cluster", owner)
	}
	c.kill(victim)
	c.kill(sched)
	t.Logf("killed %s and %s (shard 0) with %d part runs written", victim.name, sched.name,
		c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND shard_total > 0`, j.ID))

	testwait.Eventually(t, 180*time.Second, "the reduce run to succeed", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND map_reduce = $2 AND id <> $2 AND status = 'SUCCEEDED'`,
			j.ID, root) > 0
	})
	// The reduce's success is the fire's last write; give a stray
	// duplicate no chance to hide behind it: every run must have ended.
	testwait.Eventually(t, 60*time.Second, "every run of the job to end", func() bool {
		return c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND status IN ('SCHEDULED', 'TRIGGERED', 'RUNNING')`, j.ID) == 0
	})

	// PostgreSQL: one SUCCEEDED run per index; the dead worker's parts LOST.
	rows, err := c.pool().Query(c.ctx(), `SELECT shard_index, status, attempt, COALESCE(worker_id, ''), trigger_type
		FROM job_runs WHERE job_id = $1 AND shard_total > 0 ORDER BY id`, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	succeeded := make([]int, mapParts)
	lost := 0
	for rows.Next() {
		var idx, attempt int
		var status, worker, trig string
		if err := rows.Scan(&idx, &status, &attempt, &worker, &trig); err != nil {
			t.Fatal(err)
		}
		if idx < 0 || idx >= mapParts {
			t.Errorf("a part of index %d, want 0 to %d", idx, mapParts-1)
			continue
		}
		switch status {
		case "SUCCEEDED":
			succeeded[idx]++
		case "LOST":
			lost++
			if worker != victim.name {
				t.Errorf("part %d attempt %d LOST on %s, want only the killed %s's", idx, attempt, worker, victim.name)
			}
		default:
			t.Errorf("part %d attempt %d (%s) ended %s", idx, attempt, trig, status)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for i, n := range succeeded {
		if n != 1 {
			t.Errorf("part %d has %d SUCCEEDED runs, want 1", i, n)
		}
	}
	if lost == 0 {
		t.Errorf("no part ended LOST: the kill of %s hit none of the parts it ran", victim.name)
	}
	t.Logf("%d parts LOST with %s and retried", lost, victim.name)

	// The parts' own record: no (index, attempt) started twice.
	starts := map[string][]string{}
	for _, fs := range c.witnessLines("parts.log", 5) {
		if fs[0] == "start" {
			k := "part " + fs[1] + " attempt " + fs[3]
			starts[k] = append(starts[k], fs[4]+" run "+fs[2])
		}
	}
	for k, where := range starts {
		if len(where) != 1 {
			t.Errorf("%s started %d times (%v), want once", k, len(where), where)
		}
	}

	// The reduce: one run, once, given every output in index order.
	if n := c.count(`SELECT count(*) FROM job_runs WHERE job_id = $1 AND trigger_type = 'reduce'`, j.ID); n != 1 {
		t.Errorf("%d reduce runs, want 1", n)
	}
	reduces := c.witnessLines("reduce.log", 4)
	if len(reduces) != 1 {
		t.Fatalf("the reduce ran %d times (%v), want once", len(reduces), reduces)
	}
	run, attempt := reduces[0][1], reduces[0][2]
	if _, err := strconv.ParseInt(run, 10, 64); err != nil {
		t.Fatalf("reduce.log: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(c.witness, "reduce-"+run+"-"+attempt+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []int
	if err := json.Unmarshal(b, &outputs); err != nil {
		t.Fatalf("the reduce's outputs %.200q: %v", b, err)
	}
	if !slices.Equal(outputs, items) {
		t.Errorf("the reduce got %d outputs %s, want the %d items in index order", len(outputs), abbrev(outputs), len(items))
	}
	var status string
	if err := c.pool().QueryRow(c.ctx(), `SELECT status FROM job_runs WHERE id = $1`, root).Scan(&status); err != nil {
		t.Fatal(err)
	}
	if status != "SUCCEEDED" {
		t.Errorf("the root run %d is %s, want SUCCEEDED", root, status)
	}
	// The reduce's output, set through its JETJOB_OUTPUT, is the fire's result.
	var out string
	if err := c.pool().QueryRow(c.ctx(), `SELECT COALESCE(output, '') FROM job_runs WHERE id = $1`, run).Scan(&out); err != nil {
		t.Fatal(err)
	}
	if strings.ReplaceAll(out, " ", "") != `{"reduced":true}` {
		t.Errorf("the reduce run %s's output is %q, want {\"reduced\": true}", run, out)
	}
}

// abbrev prints the first outputs of a list.
func abbrev(v []int) string {
	if len(v) > 8 {
		return fmt.Sprint(v[:8]) + "…"
	}
	return fmt.Sprint(v)
}
