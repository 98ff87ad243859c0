package scheduler_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// nextTrigger reads sub's trigger messages (lone triggers and batches)
// until one satisfies want, and returns it with its bytes.
func nextTrigger(t *testing.T, sub *nats.Subscription, what string, want func(*wire.Trigger) bool) (*wire.Trigger, []byte) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil {
			break
		}
		lines := [][]byte{m.Data}
		if bytes.IndexByte(m.Data, '\n') >= 0 {
			if lines, err = wire.SplitTriggerBatch(m.Data); err != nil {
				t.Fatalf("trigger batch on %s: %v", m.Subject, err)
			}
		}
		for _, line := range lines {
			trig, err := wire.DecodeTrigger(line)
			if err != nil {
				t.Fatalf("trigger on %s: %v", m.Subject, err)
			}
			if want(trig) {
				return trig, line
			}
		}
	}
	t.Fatalf("no trigger of %s seen", what)
	return nil, nil
}

// A job's flow controls reach its runs' triggers: its priority, its key
// evaluated over the run's params with its cap, its rate limits; a manual
// trigger's own priority (and params) override; its group's cap and rate
// limit, set on the group's row, reach every job of the group. A job and
// group without controls publish triggers without a flow.
func TestFlowControlsInTriggers(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noopWorker)
	ctx := context.Background()
	triggers := rawSubscription(t, sys, "jetjob.trigger.g.>")

	plain := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "plain", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 1s"})
	flowing := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "flowing", Handler: "noop",
		ScheduleType: "cron", ScheduleExpr: "@every 1s", Params: `{"tenant": "acme", "n": 1}`,
		Priority: 7, ConcurrencyKey: "params.tenant", KeyCap: 2, RateLimit: "100/60s", KeyRateLimit: "5/1s"})
	if flowing.Priority != 7 || flowing.ConcurrencyKey != "params.tenant" || flowing.KeyCap != 2 ||
		flowing.RateLimit != "100/1m" || flowing.KeyRateLimit != "5/1s" {
		t.Fatalf("created job answers priority %d, key %q, key cap %d, rates %q and %q; want 7, params.tenant, 2, 100/1m, 5/1s",
			flowing.Priority, flowing.ConcurrencyKey, flowing.KeyCap, flowing.RateLimit, flowing.KeyRateLimit)
	}

	of := func(job int64) func(*wire.Trigger) bool {
		return func(tr *wire.Trigger) bool { return tr.JobID == job && tr.TriggerType == wire.TriggerSchedule }
	}
	tr, data := nextTrigger(t, triggers, "the plain job", of(plain.ID))
	if tr.Flow != nil || bytes.Contains(data, []byte(`"flow"`)) {
		t.Fatalf("plain job's trigger carries a flow: %s", data)
	}
	minute := time.Minute.Milliseconds()
	jobRates := []wire.Rate{{Scope: wire.RateJob, Count: 100, PeriodMS: minute}, {Scope: wire.RateKey, Count: 5, PeriodMS: 1000}}
	want := &wire.Flow{Priority: 7, Key: "acme", HasKey: true, KeyCap: 2, Rates: jobRates}
	if tr, _ = nextTrigger(t, triggers, "the flowing job", of(flowing.ID)); !reflect.DeepEqual(tr.Flow, want) {
		t.Fatalf("flowing job's trigger flow %+v, want %+v", tr.Flow, want)
	}

	// A manual trigger with its own priority and params.
	prio, params := -5, `{"tenant": {"id": 9}}`
	run, err := sys.api.TriggerJobWith(ctx, flowing.ID, apiv1.TriggerRequest{Priority: &prio, Params: &params})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ = nextTrigger(t, triggers, "the manual run", func(tr *wire.Trigger) bool { return tr.RunID == run.ID })
	want = &wire.Flow{Priority: -5, Key: `{"id":9}`, HasKey: true, KeyCap: 2, Rates: jobRates}
	if !reflect.DeepEqual(tr.Flow, want) {
		t.Fatalf("manual run's trigger flow %+v, want %+v", tr.Flow, want)
	}
	if n := sys.count(t, `SELECT count(*) FROM job_runs WHERE id = $1 AND priority = -5`, run.ID); n != 1 {
		t.Fatalf("manual run %d is not stored with its priority -5", run.ID)
	}

	// The group's cap and rate limit, set on its row, reach the triggers
	// planned after (those planned before keep what they were planned
	// with): the plain job's, and the flowing job's beside its own.
	if _, err := sys.pool.Exec(ctx, `UPDATE job_groups SET max_running = 3, rate_count = 50, rate_period_ms = 60000 WHERE name = 'g'`); err != nil {
		t.Fatal(err)
	}
	groupRate := wire.Rate{Scope: wire.RateGroup, Count: 50, PeriodMS: minute}
	want = &wire.Flow{GroupCap: 3, Rates: []wire.Rate{groupRate}}
	nextTrigger(t, triggers, "the plain job with its group's controls", func(tr *wire.Trigger) bool {
		return of(plain.ID)(tr) && reflect.DeepEqual(tr.Flow, want)
	})
	want = &wire.Flow{Priority: 7, GroupCap: 3, Key: "acme", HasKey: true, KeyCap: 2, Rates: append(jobRates, groupRate)}
	nextTrigger(t, triggers, "the flowing job with its group's controls", func(tr *wire.Trigger) bool {
		return of(flowing.ID)(tr) && reflect.DeepEqual(tr.Flow, want)
	})
}

// An inline node's job takes flow controls as any job: its node runs'
// triggers carry them, the key evaluated over the node's params.
func TestWorkflowInlineNodeFlow(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, noopWorker)
	triggers := rawSubscription(t, sys, "jetjob.trigger.g.>")
	wf := createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "flowing", Group: "g", ScheduleType: "none", Nodes: []apiv1.WorkflowNode{
		{Name: "extract", Inline: &apiv1.InlineJob{Handler: "noop", Params: `{"day": "monday"}`,
			Priority: 9, ConcurrencyKey: "params.day", KeyCap: 1, RateLimit: "30/60s"}},
	}})
	if in := wf.Nodes[0].Inline; in == nil || in.Priority != 9 || in.ConcurrencyKey != "params.day" || in.KeyCap != 1 || in.RateLimit != "30/1m" {
		t.Fatalf("extract reads %+v, want its flow fields (rate 30/1m)", in)
	}
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := wfNode(waitWorkflowRun(t, sys, run.ID, "SUCCEEDED"), "extract")
	tr, _ := nextTrigger(t, triggers, "the node's run", func(tr *wire.Trigger) bool { return tr.JobID == ex.JobID })
	want := &wire.Flow{Priority: 9, Key: "monday", HasKey: true, KeyCap: 1,
		Rates: []wire.Rate{{Scope: wire.RateJob, Count: 30, PeriodMS: time.Minute.Milliseconds()}}}
	if !reflect.DeepEqual(tr.Flow, want) {
		t.Fatalf("node run's trigger flow %+v, want %+v", tr.Flow, want)
	}
	if j, err := sys.api.GetJob(t.Context(), ex.JobID); err != nil || j.Priority != 9 || j.KeyCap != 1 {
		t.Errorf("the inline job: %+v %v, want its flow fields", j, err)
	}
	prio := 3
	if _, err := sys.api.TriggerWorkflowWith(t.Context(), wf.ID, apiv1.TriggerRequest{Priority: &prio}); !isAPIError(err, 400) ||
		!strings.Contains(err.Error(), "priority") {
		t.Errorf("workflow trigger with a priority: %v, want 400 naming priority", err)
	}
}
