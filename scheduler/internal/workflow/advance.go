package workflow

import (
	"fmt"
	"maps"
	"strings"
)

// Status is a node's state in one run of its workflow.
type Status string

const (
	// Pending: not started, waiting on its inputs (the state of a node a
	// State does not name).
	Pending Status = "PENDING"
	// Running: started; its run (a ForEach node's runs) not all ended.
	Running   Status = "RUNNING"
	Succeeded Status = "SUCCEEDED"
	// Failed: its run failed, timed out or was lost, its retries spent.
	Failed    Status = "FAILED"
	Skipped   Status = "SKIPPED"
	Cancelled Status = "CANCELLED"
)

// Settled reports whether s is final for this attempt of the node.
func (s Status) Settled() bool {
	return s == Succeeded || s == Failed || s == Skipped || s == Cancelled
}

// NodeState is what a run knows of one of its nodes.
type NodeState struct {
	Status Status
	// Bypass marks a node settled SKIPPED whose edges behave as if it
	// succeeded: a disabled node, or one an operator skipped.
	Bypass bool
	// Reason says why a node was skipped, cancelled or settled by hand.
	Reason string
	// Attempt counts the node's re-runs by Retry, from 0: part of the key
	// of its runs, (workflow run, node, attempt[, item]), so that a node
	// runs at most once per attempt.
	Attempt int
}

// State is what a run knows of its nodes, by name; a node it does not
// name is Pending at attempt 0.
type State map[string]NodeState

func (s State) of(name string) NodeState {
	ns, ok := s[name]
	if !ok || ns.Status == "" {
		ns.Status = Pending
	}
	return ns
}

// Step is what Advance decides for a run.
type Step struct {
	// Start are the nodes to start now: their runs are created, at their
	// State's attempt.
	Start []string
	// Settle are nodes settled without running (skipped because of their
	// inputs, or bypassed because disabled), with their new state.
	Settle map[string]NodeState
	// Done reports that every node has settled: the run ends, with Result
	// (SUCCEEDED, FAILED or CANCELLED).
	Done   bool
	Result Status
	// Next is the run's state after the step.
	Next State
}

// Advance says what happens next in a run of g whose nodes are as s says:
// which nodes start, which settle without running, and whether the run has
// ended and how. It changes nothing; the caller writes the step in the
// transaction that recorded what changed s. Run again on its own result,
// it starts nothing new: a replayed end is harmless.
func Advance(g *Graph, s State) Step {
	next := maps.Clone(s)
	if next == nil {
		next = State{}
	}
	step := Step{Settle: map[string]NodeState{}}
	in := g.incoming()
	for _, name := range g.order() {
		ns := next.of(name)
		if ns.Status != Pending {
			continue
		}
		n, _ := g.Node(name)
		ready, why := judge(n, in[name], next)
		switch {
		case ready && n.Disabled:
			ns.Status, ns.Bypass, ns.Reason = Skipped, true, "disabled"
			step.Settle[name] = ns
		case ready:
			ns.Status = Running
			step.Start = append(step.Start, name)
		case why != "":
			ns.Status, ns.Reason = Skipped, why
			step.Settle[name] = ns
		default:
			continue
		}
		next[name] = ns
	}
	step.Next = next
	step.Done, step.Result = result(g, next)
	return step
}

// judge decides whether pending node n may start given its incoming edges
// in: ready, or a reason it never will, or neither yet.
func judge(n Node, in []Edge, s State) (ready bool, never string) {
	if len(in) == 0 {
		return true, ""
	}
	met, dead := 0, 0
	var firstDead string
	for _, e := range in {
		src := s.of(e.From)
		switch edgeState(e, src) {
		case edgeMet:
			met++
		case edgeDead:
			dead++
			if firstDead == "" {
				firstDead = fmt.Sprintf("%s needs %s to %s; it %s", e, e.From, verb(e.condition()), describe(src))
			}
		}
	}
	if n.join() == JoinAny {
		switch {
		case met > 0:
			return true, ""
		case dead == len(in):
			return false, "no edge into it can be met: " + firstDead
		}
		return false, ""
	}
	switch {
	case dead > 0:
		return false, firstDead
	case met == len(in):
		return true, ""
	}
	return false, ""
}

type edgeResult int

const (
	edgeOpen edgeResult = iota
	edgeMet
	edgeDead
)

// edgeState is whether e is met, dead or still open, its source being in
// state src.
func edgeState(e Edge, src NodeState) edgeResult {
	c := e.condition()
	var ok bool
	switch {
	case !src.Status.Settled():
		return edgeOpen
	case src.Status == Cancelled:
		return edgeDead
	case src.Status == Succeeded, src.Status == Skipped && src.Bypass:
		ok = c != OnFailure
	case src.Status == Failed:
		ok = c != OnSuccess
	case src.Status == Skipped:
		ok = c == OnAlways
	}
	if ok {
		return edgeMet
	}
	return edgeDead
}

func verb(c Condition) string {
	switch c {
	case OnFailure:
		return "fail"
	case OnAlways:
		return "settle"
	}
	return "succeed"
}

func describe(ns NodeState) string {
	if ns.Status == Skipped && ns.Bypass {
		return "was bypassed"
	}
	return strings.ToLower(string(ns.Status))
}

// result says whether every node of g has settled in s, and how the run
// ends then: CANCELLED if a node was cancelled, FAILED if a node failed
// and no failure edge leaves it, else SUCCEEDED.
func result(g *Graph, s State) (done bool, r Status) {
	handled := map[string]bool{}
	for _, e := range g.Edges {
		if e.condition() == OnFailure {
			handled[e.From] = true
		}
	}
	r = Succeeded
	for _, n := range g.Nodes {
		switch st := s.of(n.Name).Status; {
		case !st.Settled():
			return false, ""
		case st == Cancelled:
			r = Cancelled
		case st == Failed && !handled[n.Name] && r != Cancelled:
			r = Failed
		}
	}
	return true, r
}

// order is g's nodes in an order where every edge points forward, ties in
// the order the author wrote them (Kahn's algorithm over a validated,
// acyclic graph).
func (g *Graph) order() []string {
	indeg := make(map[string]int, len(g.Nodes))
	out := make(map[string][]string, len(g.Nodes))
	for _, e := range g.Edges {
		indeg[e.To]++
		out[e.From] = append(out[e.From], e.To)
	}
	order := make([]string, 0, len(g.Nodes))
	placed := make(map[string]bool, len(g.Nodes))
	for len(order) < len(g.Nodes) {
		progress := false
		for _, n := range g.Nodes {
			if placed[n.Name] || indeg[n.Name] > 0 {
				continue
			}
			placed[n.Name] = true
			order = append(order, n.Name)
			for _, m := range out[n.Name] {
				indeg[m]--
			}
			progress = true
		}
		if !progress {
			break // a cycle: Validate refuses such a graph
		}
	}
	return order
}

// Aggregate is a ForEach node's status from its items' statuses: running
// while one is, then CANCELLED if one was, FAILED if one failed, else
// SUCCEEDED (no items included: a list of none succeeds at once).
func Aggregate(items []Status) Status {
	r := Succeeded
	for _, st := range items {
		switch {
		case !st.Settled():
			return Running
		case st == Cancelled:
			r = Cancelled
		case st == Failed && r != Cancelled:
			r = Failed
		}
	}
	return r
}
