package workflow

import (
	"slices"
	"strings"
	"testing"
)

// mk builds a graph from words: "a" a node, "d:any" a node joining any,
// "x:off" a disabled node, "a>b" an edge on success, "a!b" on failure,
// "a*b" always. Nodes named by edges only are added in order of mention.
func mk(t *testing.T, words ...string) *Graph {
	t.Helper()
	g := &Graph{}
	add := func(name string) {
		if _, ok := g.Node(name); !ok {
			g.Nodes = append(g.Nodes, Node{Name: name})
		}
	}
	for _, w := range words {
		if i := strings.IndexAny(w, ">!*"); i > 0 {
			on := map[byte]Condition{'>': OnSuccess, '!': OnFailure, '*': OnAlways}[w[i]]
			from, to := w[:i], w[i+1:]
			add(from)
			add(to)
			g.Edges = append(g.Edges, Edge{From: from, To: to, On: on})
			continue
		}
		name, opt, _ := strings.Cut(w, ":")
		add(name)
		i := slices.IndexFunc(g.Nodes, func(n Node) bool { return n.Name == name })
		switch opt {
		case "any":
			g.Nodes[i].Join = JoinAny
		case "off":
			g.Nodes[i].Disabled = true
		}
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("test graph: %v", err)
	}
	return g
}

// sim runs g to its end from s: every node Advance starts ends as ends
// says (SUCCEEDED when it says nothing). It returns the nodes in the order
// they started, the final state and the run's result.
func sim(t *testing.T, g *Graph, s State, ends map[string]Status) (started []string, final State, result Status) {
	t.Helper()
	for range len(g.Nodes) + 1 {
		step := Advance(g, s)
		s = step.Next
		if step.Done {
			if len(step.Start) > 0 {
				t.Fatalf("a done step starts %v", step.Start)
			}
			return started, s, step.Result
		}
		if len(step.Start) == 0 {
			t.Fatalf("stuck: nothing starts and the run is not done: %v", s)
		}
		again := Advance(g, s)
		if len(again.Start) > 0 || len(again.Settle) > 0 {
			t.Fatalf("advancing twice on the same state changed more: start %v settle %v", again.Start, again.Settle)
		}
		for _, n := range step.Start {
			started = append(started, n)
			ns := s[n]
			ns.Status = Succeeded
			if st, ok := ends[n]; ok {
				ns.Status = st
			}
			s[n] = ns
		}
	}
	t.Fatal("the run did not end")
	return nil, nil, ""
}

func TestAdvance(t *testing.T) {
	cases := []struct {
		name    string
		graph   []string
		ends    map[string]Status
		started string // nodes started, in order
		skipped string // nodes settled SKIPPED
		result  Status
	}{
		{name: "diamond", graph: []string{"a>b", "a>c", "b>d", "c>d"},
			started: "a b c d", result: Succeeded},
		{name: "a branch fails: the join all is skipped, the run fails",
			graph: []string{"a>b", "a>c", "b>d", "c>d"}, ends: map[string]Status{"b": Failed},
			started: "a b c", skipped: "d", result: Failed},
		{name: "join any runs on the branch that succeeded",
			graph: []string{"a>b", "a>c", "b>d", "c>d", "d:any"}, ends: map[string]Status{"b": Failed},
			started: "a b c d", result: Failed},
		{name: "join any is skipped when no edge can be met",
			graph: []string{"a>b", "a>c", "b>d", "c>d", "d:any"}, ends: map[string]Status{"b": Failed, "c": Failed},
			started: "a b c", skipped: "d", result: Failed},
		{name: "a failure edge handles the failure", graph: []string{"a>b", "a!alert"},
			ends: map[string]Status{"a": Failed}, started: "a alert", skipped: "b", result: Succeeded},
		{name: "a failure edge is skipped on success", graph: []string{"a>b", "a!alert"},
			started: "a b", skipped: "alert", result: Succeeded},
		{name: "a failing handler fails the run", graph: []string{"a!alert"},
			ends: map[string]Status{"a": Failed, "alert": Failed}, started: "a alert", result: Failed},
		{name: "skips propagate, always runs after a skip",
			graph: []string{"a>b", "b>c", "c*cleanup"}, ends: map[string]Status{"a": Failed},
			started: "a cleanup", skipped: "b c", result: Failed},
		{name: "always runs whatever happened before it",
			graph: []string{"a>b", "b*cleanup"}, ends: map[string]Status{"a": Failed},
			started: "a cleanup", skipped: "b", result: Failed},
		{name: "a disabled node passes through", graph: []string{"a>b", "b>c", "b:off"},
			started: "a c", skipped: "b", result: Succeeded},
		{name: "a disabled node's failure edge is dead", graph: []string{"a>b", "b!c", "b>d", "b:off"},
			started: "a d", skipped: "b c", result: Succeeded},
		{name: "a disabled node skipped by its inputs does not pass through",
			graph: []string{"a>b", "b>c", "b:off"}, ends: map[string]Status{"a": Failed},
			started: "a", skipped: "b c", result: Failed},
		{name: "independent roots", graph: []string{"x", "y", "x>z", "y>z"},
			started: "x y z", result: Succeeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := mk(t, c.graph...)
			started, final, result := sim(t, g, nil, c.ends)
			if got := strings.Join(started, " "); got != c.started {
				t.Errorf("started %q, want %q", got, c.started)
			}
			var skipped []string
			for _, n := range g.order() {
				if final.of(n).Status == Skipped {
					skipped = append(skipped, n)
				}
			}
			if got := strings.Join(skipped, " "); got != c.skipped {
				t.Errorf("skipped %q, want %q", got, c.skipped)
			}
			if result != c.result {
				t.Errorf("result %s, want %s", result, c.result)
			}
		})
	}
}

// A node skipped says which edge could not be met and why, and a disabled
// one that it was disabled.
func TestSkipReasons(t *testing.T) {
	g := mk(t, "a>b", "c:off", "a>c")
	step := Advance(g, State{"a": {Status: Failed}})
	if got := step.Settle["b"].Reason; got != "a → b (success) needs a to succeed; it failed" {
		t.Errorf("b's reason: %q", got)
	}
	step = Advance(g, State{"a": {Status: Succeeded}})
	if got := step.Settle["c"]; got.Reason != "disabled" || !got.Bypass || got.Status != Skipped {
		t.Errorf("c: %+v, want skipped, bypassed, disabled", got)
	}
}

// Nothing starts until its inputs have settled; a replayed step is
// harmless (sim checks that on every step).
func TestAdvanceWaits(t *testing.T) {
	g := mk(t, "a>c", "b>c")
	step := Advance(g, State{"a": {Status: Succeeded}, "b": {Status: Running}})
	if len(step.Start) > 0 || step.Done {
		t.Errorf("started %v (done %v) while b runs", step.Start, step.Done)
	}
	step = Advance(g, State{"a": {Status: Succeeded}, "b": {Status: Succeeded}})
	if !slices.Equal(step.Start, []string{"c"}) {
		t.Errorf("started %v, want [c]", step.Start)
	}
	if step.Next["c"].Status != Running {
		t.Errorf("c after its start: %s", step.Next["c"].Status)
	}
}

func TestAggregate(t *testing.T) {
	cases := []struct {
		items []Status
		want  Status
	}{
		{nil, Succeeded},
		{[]Status{Succeeded, Succeeded}, Succeeded},
		{[]Status{Succeeded, Running, Failed}, Running},
		{[]Status{Succeeded, Pending}, Running},
		{[]Status{Failed, Succeeded}, Failed},
		{[]Status{Failed, Cancelled}, Cancelled},
	}
	for _, c := range cases {
		if got := Aggregate(c.items); got != c.want {
			t.Errorf("Aggregate(%v) = %s, want %s", c.items, got, c.want)
		}
	}
}
