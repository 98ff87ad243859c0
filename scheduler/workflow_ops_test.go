package scheduler_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
)

// pair is a workflow a → b whose handlers record the params each run got.
type pair struct {
	mu  sync.Mutex
	got map[string][]string
}

func (p *pair) register(w *worker.Worker) {
	p.got = map[string][]string{}
	for _, n := range []string{"a", "b"} {
		w.Handle("wfops-"+n, func(_ context.Context, j *worker.Job) error {
			p.mu.Lock()
			p.got[n] = append(p.got[n], j.Params)
			p.mu.Unlock()
			return j.SetOutput(map[string]any{"from": n})
		})
	}
}

func (p *pair) ran() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]string{}
	for k, v := range p.got {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func (p *pair) create(t *testing.T, sys *system) *apiv1.Workflow {
	t.Helper()
	wfJob(t, sys, "a", "wfops-a")
	wfJob(t, sys, "b", "wfops-b")
	return createWorkflow(t, sys, apiv1.WorkflowSpec{Name: "pair", Nodes: []apiv1.WorkflowNode{
		{Name: "a", Job: "g/a", Params: str(`{"day": "{{ .params.day }}"}`)},
		{Name: "b", Job: "g/b", Params: str(`{"day": "{{ .params.day }}", "a": {{ json .nodes.a.output }}}`)},
	}, Edges: []apiv1.WorkflowEdge{{From: "a", To: "b"}}})
}

// A re-run is a new workflow run of the same workflow with the same
// params, started as a manual trigger: every node runs again, in runs of
// its own, and the old run reads exactly as before.
func TestWorkflowRerun(t *testing.T) {
	p := &pair{}
	sys := startSystem(t, p.register)
	wf := p.create(t, sys)
	first, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, str(`{"day": "monday"}`))
	if err != nil {
		t.Fatal(err)
	}
	old := waitWorkflowRun(t, sys, first.ID, "SUCCEEDED")

	rerun, err := sys.api.RerunWorkflowRun(t.Context(), old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rerun.ID == old.ID || rerun.JobID != wf.ID || rerun.TriggerType != "manual" {
		t.Fatalf("re-run answered run %d of job %d (trigger %s), want a new manual run of workflow %d", rerun.ID, rerun.JobID, rerun.TriggerType, wf.ID)
	}
	again := waitWorkflowRun(t, sys, rerun.ID, "SUCCEEDED")
	if want := fmt.Sprintf("re-run of workflow run %d", old.ID); again.Message != want {
		t.Errorf("the new run's message reads %q, want %q", again.Message, want)
	}
	if again.Params != old.Params {
		t.Errorf("the new run's params are %q, want the old run's %q", again.Params, old.Params)
	}
	// Every node ran again, in runs of the new workflow run.
	got := p.ran()
	for _, n := range []string{"a", "b"} {
		if len(got[n]) != 2 || got[n][0] != got[n][1] {
			t.Errorf("node %s ran with %q, want twice with the same params", n, got[n])
		}
		o, a := wfNode(old, n), wfNode(again, n)
		if a.Status != "SUCCEEDED" || len(a.Runs) != 1 || len(o.Runs) != 1 || a.Runs[0].RunID == o.Runs[0].RunID {
			t.Errorf("node %s: old %+v, new %+v: want a run of its own in the new run", n, o.Runs, a.Runs)
		}
	}
	if !strings.Contains(got["a"][0], `"monday"`) {
		t.Errorf("a ran with %q, want the run's params rendered", got["a"][0])
	}
	// The old run is unchanged.
	now, err := sys.api.GetWorkflowRun(t.Context(), old.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(now, old) {
		b1, _ := json.Marshal(old)
		b2, _ := json.Marshal(now)
		t.Errorf("the old run changed:\nbefore %s\nafter  %s", b1, b2)
	}
	// Audited as a trigger of the workflow, naming the run re-run.
	list, err := sys.api.Audit(t.Context(), client.AuditOptions{Action: "job.trigger", Target: fmt.Sprintf("job:%d", wf.ID)})
	if err != nil {
		t.Fatal(err)
	}
	var entry struct {
		ID      int64 `json:"id"`
		RerunOf int64 `json:"rerun_of"`
	}
	if len(list.Entries) == 2 {
		_ = json.Unmarshal(list.Entries[0].After, &entry)
	}
	if entry.ID != rerun.ID || entry.RerunOf != old.ID {
		t.Errorf("audit of the workflow's triggers: %d entries, the newest %+v; want two, the newest run %d with rerun_of %d",
			len(list.Entries), entry, rerun.ID, old.ID)
	}
	// A run that does not exist cannot be re-run.
	var ae *client.APIError
	if _, err := sys.api.RerunWorkflowRun(t.Context(), again.ID+1000); !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
		t.Errorf("re-run of a missing run: %v, want not found", err)
	}
}

// A workflow run's end is counted by its final status, and each node
// run's wait from ready to started is observed once, when its start is
// recorded.
func TestWorkflowMetrics(t *testing.T) {
	p := &pair{}
	sys := startSystem(t, p.register)
	wf := p.create(t, sys)
	run, err := sys.api.TriggerWorkflow(t.Context(), wf.ID, str(`{"day": "friday"}`))
	if err != nil {
		t.Fatal(err)
	}
	waitWorkflowRun(t, sys, run.ID, "SUCCEEDED")
	want := map[string]float64{
		`jetjob_workflow_runs_total{status="SUCCEEDED"}`: 1,
		`jetjob_workflow_node_wait_seconds_count`:        2, // a and b
	}
	var got map[string]float64
	var off []string
	testwait.Eventually(t, 30*time.Second, "the workflow series in /metrics", func() bool {
		got, off = scrape(t, sys.metrics), nil
		for k, v := range want {
			if g, present := got[k]; !present || g != v {
				off = append(off, fmt.Sprintf("%s=%v (want %v)", k, g, v))
			}
		}
		return len(off) == 0
	})
	if n := sumMatching(got, `jetjob_workflow_runs_total{`); n != 1 {
		t.Errorf("jetjob_workflow_runs_total sums to %v over every status, want 1 (%v)", n, off)
	}
}
