package wfengine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

func TestSpecValidate(t *testing.T) {
	p := func(s string) *string { return &s }
	for _, c := range []struct {
		what string
		spec Spec
		want string // "" valid
	}{
		{"valid", Spec{Nodes: []NodeSpec{{Name: "a", JobID: 1}, {Name: "b", JobID: 2, Params: p("{{ .nodes.a.output.x }}")}},
			Edges: []EdgeSpec{{From: "a", To: "b"}}}, ""},
		{"no job", Spec{Nodes: []NodeSpec{{Name: "a"}}}, `node "a": names no job`},
		{"inline", Spec{Nodes: []NodeSpec{{Name: "a", Inline: &InlineJob{Handler: "shell"}}, {Name: "b", JobID: 2}},
			Edges: []EdgeSpec{{From: "a", To: "b"}}}, ""},
		{"inline without a handler", Spec{Nodes: []NodeSpec{{Name: "a", Inline: &InlineJob{}}}}, `node "a": its inline job has no handler`},
		{"not upstream", Spec{Nodes: []NodeSpec{{Name: "a", JobID: 1}, {Name: "b", JobID: 1, Params: p("{{ .nodes.a.output }}")}}},
			`which is not upstream`},
		{"cycle", Spec{Nodes: []NodeSpec{{Name: "a", JobID: 1}, {Name: "b", JobID: 1}},
			Edges: []EdgeSpec{{From: "a", To: "b"}, {From: "b", To: "a"}}}, "cycle: a → b → a"},
	} {
		err := c.spec.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.what, err)
		case c.want != "" && (!errors.Is(err, workflow.ErrInvalid) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an invalid workflow saying %q", c.what, err, c.want)
		}
	}
}

// The jobs a write is checked for are the ones its nodes name; the jobs
// its runs run include the inline nodes' rows.
func TestJobIDs(t *testing.T) {
	s := Spec{Nodes: []NodeSpec{{Name: "a", JobID: 4}, {Name: "b", JobID: 9, Inline: &InlineJob{Handler: "h"}},
		{Name: "c", Inline: &InlineJob{Handler: "h"}}, {Name: "d", JobID: 4}}}
	if got := s.RefJobIDs(); len(got) != 1 || got[0] != 4 {
		t.Errorf("RefJobIDs %v, want [4]", got)
	}
	if got := s.JobIDs(); len(got) != 2 || got[0] != 4 || got[1] != 9 {
		t.Errorf("JobIDs %v, want [4 9] (c's row not written yet)", got)
	}
	c := s.Clone()
	c.Nodes[0].JobID = 5
	if s.Nodes[0].JobID != 4 {
		t.Error("Clone shares its nodes")
	}
}

func TestPolicyValidate(t *testing.T) {
	if err := (Policy{Overlap: OverlapConcurrent, MaxConcurrent: 3, Timeout: time.Minute}).Validate(); err != nil {
		t.Error(err)
	}
	for _, p := range []Policy{{Overlap: "sometimes"}, {Overlap: OverlapSerial, MaxConcurrent: 2}, {Overlap: OverlapSerial, Timeout: -1}} {
		if err := p.Validate(); err == nil {
			t.Errorf("%+v: valid, want refused", p)
		}
	}
}

// A node run's end counts by its outcome: what did not succeed and was not
// cancelled failed, the ends a worker gives a run it never ran included.
func TestNodeStatus(t *testing.T) {
	for s, want := range map[wire.Status]workflow.Status{
		"": workflow.Running, wire.StatusSucceeded: workflow.Succeeded, wire.StatusCancelled: workflow.Cancelled,
		wire.StatusFailed: workflow.Failed, wire.StatusTimedOut: workflow.Failed, wire.StatusLost: workflow.Failed,
		wire.StatusDiscarded: workflow.Failed, wire.StatusExpired: workflow.Failed, wire.StatusSkipped: workflow.Failed,
	} {
		if got := nodeStatus(s); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// Retry's new attempt forgets the node's runs and hand-given output;
// a node that stays at its attempt keeps them.
func TestAdopt(t *testing.T) {
	s := State{Nodes: map[string]*NodeState{
		"a": {Status: workflow.Succeeded, Items: []Item{{Run: 1, Status: wire.StatusSucceeded}}},
		"b": {Status: workflow.Failed, Items: []Item{{Run: 2, Status: wire.StatusFailed}}},
	}}
	next, err := workflow.Retry(&workflow.Graph{Nodes: []workflow.Node{{Name: "a"}, {Name: "b"}},
		Edges: []workflow.Edge{{From: "a", To: "b"}}}, s.model())
	if err != nil {
		t.Fatal(err)
	}
	s.adopt(next)
	if a := s.Nodes["a"]; a.Status != workflow.Succeeded || len(a.Items) != 1 {
		t.Errorf("a: %+v, want kept", a)
	}
	if b := s.Nodes["b"]; b.Status != workflow.Pending || b.Attempt != 1 || b.Items != nil {
		t.Errorf("b: %+v, want pending at attempt 1 without runs", b)
	}
	n := &NodeState{Items: []Item{{Status: wire.StatusSucceeded}, {}}}
	if got := n.aggregate(); got != workflow.Running {
		t.Errorf("one of two items running: %s", got)
	}
	if r := n.running(); len(r) != 1 {
		t.Errorf("running items: %v", r)
	}
}
