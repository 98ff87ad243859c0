package workflow

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		graph Graph
		want  []string // each in the error; none: valid
	}{
		{name: "a chain", graph: Graph{Nodes: []Node{{Name: "a"}, {Name: "b"}}, Edges: []Edge{{From: "a", To: "b"}}}},
		{name: "empty", graph: Graph{}, want: []string{"at least one node"}},
		{name: "names", graph: Graph{Nodes: []Node{{Name: ""}, {Name: "Bad Name"}, {Name: "ok"}, {Name: "ok"}}},
			want: []string{"a node has no name", `node "Bad Name": a name is`, `node "ok" is named twice`}},
		{name: "edges to nothing, twice, to itself", graph: Graph{
			Nodes: []Node{{Name: "a"}, {Name: "b"}},
			Edges: []Edge{{From: "a", To: "x"}, {From: "y", To: "b"}, {From: "a", To: "a"}, {From: "a", To: "b"}, {From: "a", To: "b", On: OnFailure}},
		}, want: []string{`edge a → x (success): no node "x"`, `edge y → b (success): no node "y"`,
			"a → a (success): a node cannot follow itself", "a → b is given twice"}},
		{name: "bad join and condition", graph: Graph{
			Nodes: []Node{{Name: "a"}, {Name: "b", Join: "most"}},
			Edges: []Edge{{From: "a", To: "b", On: "sometimes"}},
		}, want: []string{`join "most"`, `condition "sometimes"`}},
		{name: "a cycle is named", graph: Graph{
			Nodes: []Node{{Name: "start"}, {Name: "a"}, {Name: "b"}, {Name: "c"}},
			Edges: []Edge{{From: "start", To: "a"}, {From: "a", To: "b"}, {From: "b", To: "c"}, {From: "c", To: "a"}},
		}, want: []string{"cycle: a → b → c → a"}},
		{name: "a join that needs a node to succeed and to fail", graph: Graph{
			Nodes: []Node{{Name: "a"}, {Name: "b"}, {Name: "c"}},
			Edges: []Edge{{From: "a", To: "b"}, {From: "a", To: "c", On: OnFailure}, {From: "b", To: "c"}},
		}, want: []string{`node "c" can never run: it needs "a" both to succeed and to fail`}},
		{name: "the same through a join any is allowed", graph: Graph{
			Nodes: []Node{{Name: "a"}, {Name: "b"}, {Name: "c", Join: JoinAny}},
			Edges: []Edge{{From: "a", To: "b"}, {From: "a", To: "c", On: OnFailure}, {From: "b", To: "c"}},
		}},
		{name: "for_each over an upstream output", graph: Graph{
			Nodes: []Node{{Name: "list"}, {Name: "each", ForEach: "nodes.list.output.files"}},
			Edges: []Edge{{From: "list", To: "each"}},
		}},
		{name: "for_each over a node not upstream", graph: Graph{
			Nodes: []Node{{Name: "list"}, {Name: "other"}, {Name: "each", ForEach: "nodes.other.output"}},
			Edges: []Edge{{From: "list", To: "each"}},
		}, want: []string{`node "each": for_each over "other", which is not upstream of it`}},
		{name: "for_each that is no reference", graph: Graph{
			Nodes: []Node{{Name: "list"}, {Name: "each", ForEach: "list.files"}},
			Edges: []Edge{{From: "list", To: "each"}},
		}, want: []string{`node "each": for_each: "list.files": want nodes.<node>.output`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.graph.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("valid graph refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want an ErrInvalid", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestValidateBounds(t *testing.T) {
	g := Graph{}
	for i := range MaxNodes + 1 {
		g.Nodes = append(g.Nodes, Node{Name: "n" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "at most 200") {
		t.Errorf("%d nodes: %v", len(g.Nodes), err)
	}
}

func TestUpstream(t *testing.T) {
	g := mk(t, "a>b", "b>c", "x>c", "c>d", "e")
	up := g.Upstream("d")
	for _, n := range []string{"a", "b", "c", "x"} {
		if !up[n] {
			t.Errorf("%s is upstream of d", n)
		}
	}
	if up["d"] || up["e"] {
		t.Errorf("upstream of d: %v", up)
	}
}
