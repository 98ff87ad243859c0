package console

import (
	"fmt"
	"strings"
	"testing"
)

// The layered layout: a node's layer is its longest path from a root,
// every edge points down, and no two boxes overlap or leave the drawing,
// whatever the shape (fan-out, fan-in, long names, edges skipping layers).
func TestLayoutGraph(t *testing.T) {
	wide := make([]string, 30)
	var fan []graphEdgeIn
	for i := range wide {
		wide[i] = fmt.Sprintf("n%02d", i)
		if i > 0 {
			fan = append(fan, graphEdgeIn{From: "n00", To: wide[i]})
		}
	}
	for _, tc := range []struct {
		name   string
		nodes  []string
		edges  []graphEdgeIn
		layers map[string]int
	}{
		{"one node", []string{"a"}, nil, map[string]int{"a": 0}},
		{"diamond", []string{"a", "b", "c", "d"},
			[]graphEdgeIn{{"a", "b", ""}, {"a", "c", ""}, {"b", "d", ""}, {"c", "d", "failure"}},
			map[string]int{"a": 0, "b": 1, "c": 1, "d": 2}},
		{"longest path wins", []string{"a", "b", "c", "d"},
			[]graphEdgeIn{{"a", "d", "always"}, {"a", "b", ""}, {"b", "c", ""}, {"c", "d", ""}},
			map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}},
		{"nodes listed out of order", []string{"report", "load", "extract"},
			[]graphEdgeIn{{"load", "report", ""}, {"extract", "load", ""}},
			map[string]int{"extract": 0, "load": 1, "report": 2}},
		{"two roots", []string{"x", "y", "z"}, []graphEdgeIn{{"x", "z", ""}, {"y", "z", ""}},
			map[string]int{"x": 0, "y": 0, "z": 1}},
		{"long names", []string{strings.Repeat("a", 64), strings.Repeat("b", 64), "c"},
			[]graphEdgeIn{{strings.Repeat("a", 64), "c", ""}, {strings.Repeat("b", 64), "c", ""}},
			map[string]int{"c": 1}},
		{"fan-out of 29", wide, fan, map[string]int{"n00": 0, "n29": 1}},
		{"unknown node in an edge", []string{"a", "b"}, []graphEdgeIn{{"a", "b", ""}, {"a", "ghost", ""}},
			map[string]int{"a": 0, "b": 1}},
		{"cycle goes last", []string{"a", "b", "c"}, []graphEdgeIn{{"a", "b", ""}, {"b", "c", ""}, {"c", "b", ""}},
			map[string]int{"a": 0, "b": 1, "c": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := layoutGraph(tc.nodes, tc.edges)
			if len(g.Nodes) != len(tc.nodes) {
				t.Fatalf("%d nodes drawn, want %d", len(g.Nodes), len(tc.nodes))
			}
			by := map[string]graphNode{}
			for _, n := range g.Nodes {
				by[n.Name] = n
				if n.X < 0 || n.Y < 0 || n.X+n.W > g.Width || n.Y+n.H > g.Height {
					t.Errorf("node %s at (%d,%d %dx%d) leaves the %dx%d drawing", n.Name, n.X, n.Y, n.W, n.H, g.Width, g.Height)
				}
				if w := len(n.Name)*gCharW + 2*gBoxPadX; n.W < min(w, gMaxNameW*gCharW+2*gBoxPadX) {
					t.Errorf("node %s is %d wide, too narrow for its name", n.Name, n.W)
				}
			}
			for name, want := range tc.layers {
				if got := by[name].Layer; got != want {
					t.Errorf("node %s in layer %d, want %d", name, got, want)
				}
			}
			for i, a := range g.Nodes {
				for _, b := range g.Nodes[i+1:] {
					if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
						t.Errorf("boxes %s (%d,%d %dx%d) and %s (%d,%d %dx%d) overlap", a.Name, a.X, a.Y, a.W, a.H, b.Name, b.X, b.Y, b.W, b.H)
					}
				}
			}
			for _, e := range g.Edges {
				if _, ok := by[e.To]; !ok {
					t.Errorf("edge to unknown node %s drawn", e.To)
				}
				if by[e.From].Layer >= by[e.To].Layer && !strings.HasPrefix(tc.name, "cycle") {
					t.Errorf("edge %s → %s does not point down (layers %d → %d)", e.From, e.To, by[e.From].Layer, by[e.To].Layer)
				}
			}
		})
	}
}

// Only conditions other than success are written on their edges.
func TestLayoutGraphLabels(t *testing.T) {
	g := layoutGraph([]string{"a", "b", "c", "d"}, []graphEdgeIn{{"a", "b", ""}, {"a", "c", "success"}, {"b", "d", "failure"}, {"c", "d", "always"}})
	got := map[string]string{}
	for _, e := range g.Edges {
		got[e.From+"→"+e.To] = e.Label
		if e.Label != "" && (e.LX < 0 || e.LX > g.Width || e.LY < 0 || e.LY > g.Height) {
			t.Errorf("label of %s → %s at (%d,%d), outside the drawing", e.From, e.To, e.LX, e.LY)
		}
	}
	want := map[string]string{"a→b": "", "a→c": "", "b→d": "failure", "c→d": "always"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("edge %s labelled %q, want %q", k, got[k], w)
		}
	}
}
