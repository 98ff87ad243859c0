package workflow

import (
	"errors"
	"fmt"
	"maps"
)

// ErrNotAllowed is wrapped by the errors of an operation the run's state
// does not allow (retrying what did not fail, settling a running node).
var ErrNotAllowed = errors.New("not allowed in this state")

// Retry re-opens a run from what went wrong: every node that failed or was
// cancelled becomes pending at its next attempt, and every node skipped
// because of their outcome pending again. What succeeded stays, with its
// output. Advance on the result starts the re-opened nodes whose inputs
// hold.
func Retry(g *Graph, s State) (State, error) {
	next := maps.Clone(s)
	reset := map[string]bool{}
	for _, name := range g.order() {
		ns := s.of(name)
		if ns.Status == Failed || ns.Status == Cancelled {
			ns.Status, ns.Reason = Pending, ""
			ns.Attempt++
			next[name] = ns
			reset[name] = true
		}
	}
	if len(reset) == 0 {
		return nil, fmt.Errorf("retry: no node failed or was cancelled: %w", ErrNotAllowed)
	}
	reopenDownstream(g, next, reset)
	return next, nil
}

// MarkSucceeded settles node by hand as succeeded (the caller stores the
// output it was given), unblocking what waits on it. A node skipped
// because of how node had settled before is pending again.
func MarkSucceeded(g *Graph, s State, node, reason string) (State, error) {
	return settleByHand(g, s, node, NodeState{Status: Succeeded, Reason: reason})
}

// Bypass settles node by hand as skipped, its edges behaving as if it
// succeeded (as a disabled node's do).
func Bypass(g *Graph, s State, node, reason string) (State, error) {
	return settleByHand(g, s, node, NodeState{Status: Skipped, Bypass: true, Reason: reason})
}

func settleByHand(g *Graph, s State, node string, to NodeState) (State, error) {
	if _, ok := g.Node(node); !ok {
		return nil, fmt.Errorf("no node %q", node)
	}
	ns := s.of(node)
	switch {
	case ns.Status == Running:
		return nil, fmt.Errorf("node %q is running (kill its run first): %w", node, ErrNotAllowed)
	case ns.Status == Succeeded || ns.Status == Skipped && ns.Bypass:
		return nil, fmt.Errorf("node %q already %s: %w", node, describe(ns), ErrNotAllowed)
	}
	next := maps.Clone(s)
	if next == nil {
		next = State{}
	}
	to.Attempt = ns.Attempt
	next[node] = to
	reopenDownstream(g, next, map[string]bool{node: true})
	return next, nil
}

// reopenDownstream makes pending again every node skipped (not bypassed)
// downstream of changed, since the outcome that skipped it may differ
// now; Advance then decides anew.
func reopenDownstream(g *Graph, s State, changed map[string]bool) {
	reached := maps.Clone(changed)
	in := g.incoming()
	for _, name := range g.order() {
		for _, e := range in[name] {
			if reached[e.From] {
				reached[name] = true
				break
			}
		}
		if changed[name] || !reached[name] {
			continue
		}
		if ns := s.of(name); ns.Status == Skipped && !ns.Bypass {
			ns.Status, ns.Reason = Pending, ""
			s[name] = ns
		}
	}
}

// Cancel settles every pending node of a run CANCELLED with reason and
// returns the running ones, whose runs the caller kills: when their ends
// are recorded, Advance finds the run done. The caller records why the
// run ended (cancelled, or timed out) on the run itself.
func Cancel(g *Graph, s State, reason string) (next State, kill []string) {
	next = maps.Clone(s)
	if next == nil {
		next = State{}
	}
	for _, name := range g.order() {
		switch ns := next.of(name); ns.Status {
		case Pending:
			ns.Status, ns.Reason = Cancelled, reason
			next[name] = ns
		case Running:
			kill = append(kill, name)
		}
	}
	return next, kill
}
