package wfengine

import (
	"encoding/json"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

// State is a workflow run's nodes as stored in workflow_runs.state: what
// package workflow knows of each node, and the node runs of its current
// attempt.
type State struct {
	Nodes map[string]*NodeState `json:"nodes"`
	// Reopened counts the times the run was re-opened after it ended
	// (retry from failed, a node settled by hand): its trace has one
	// workflow span, of its first end, and one span per re-opening.
	Reopened int `json:"reopened,omitempty"`
}

// NodeState is one node of a run.
type NodeState struct {
	Status  workflow.Status `json:"status"`
	Bypass  bool            `json:"bypass,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Attempt int             `json:"attempt,omitempty"`
	// Items are the node's runs at Attempt: one for a plain node, one per
	// element for a for_each node (none for an empty list).
	Items []Item `json:"items,omitempty"`
	// Output is an output given by hand (mark succeeded); it wins over
	// the runs'.
	Output json.RawMessage `json:"output,omitempty"`
}

// Item is one node run: its run (the last of its job's retries once it
// ended) and its final status, "" while it has not ended.
type Item struct {
	Run    int64       `json:"run"`
	At     time.Time   `json:"at"`
	Status wire.Status `json:"status,omitempty"`
}

func (s *State) node(name string) *NodeState {
	if s.Nodes == nil {
		s.Nodes = map[string]*NodeState{}
	}
	n := s.Nodes[name]
	if n == nil {
		n = &NodeState{Status: workflow.Pending}
		s.Nodes[name] = n
	}
	return n
}

// model is s as package workflow takes it.
func (s *State) model() workflow.State {
	out := make(workflow.State, len(s.Nodes))
	for name, n := range s.Nodes {
		out[name] = workflow.NodeState{Status: n.Status, Bypass: n.Bypass, Reason: n.Reason, Attempt: n.Attempt}
	}
	return out
}

// adopt takes package workflow's view of each node back into s: a node
// whose attempt changed (a retry) forgets its runs.
func (s *State) adopt(m workflow.State) {
	for name, ms := range m {
		n := s.node(name)
		if n.Attempt != ms.Attempt {
			n.Items, n.Output = nil, nil
		}
		if ms.Status == workflow.Pending {
			n.Items = nil
		}
		n.Status, n.Bypass, n.Reason, n.Attempt = ms.Status, ms.Bypass, ms.Reason, ms.Attempt
	}
}

// nodeStatus is a node run's final status as package workflow counts it:
// a run that did not succeed and was not cancelled failed (FAILED,
// TIMED_OUT, LOST, and the ends a worker gives a run it did not run:
// DISCARDED, EXPIRED, SKIPPED).
func nodeStatus(s wire.Status) workflow.Status {
	switch {
	case s == "":
		return workflow.Running
	case s == wire.StatusSucceeded:
		return workflow.Succeeded
	case s == wire.StatusCancelled:
		return workflow.Cancelled
	}
	return workflow.Failed
}

// running returns the runs of n not yet ended.
func (n *NodeState) running() []Item {
	var out []Item
	for _, it := range n.Items {
		if it.Status == "" {
			out = append(out, it)
		}
	}
	return out
}

// aggregate is n's status from its items' (workflow.Aggregate).
func (n *NodeState) aggregate() workflow.Status {
	sts := make([]workflow.Status, len(n.Items))
	for i, it := range n.Items {
		sts[i] = nodeStatus(it.Status)
	}
	return workflow.Aggregate(sts)
}
