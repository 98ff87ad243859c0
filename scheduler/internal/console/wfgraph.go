package console

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// A workflow's graph is drawn on the server, as SVG in the page: no
// script and no library, and the same picture in the editor's preview,
// the workflow page and a run's page. The layout is the simple layered
// one: a node's layer is the longest path to it from a root (so every
// edge points down), a layer's nodes are ordered by where the nodes they
// follow stand (fewer crossings) and laid side by side, and each layer is
// centred on the widest. Boxes never overlap by construction: a layer is
// one row, its boxes placed left to right with a gap.

// Layout sizes, in SVG units (CSS pixels at scale 1).
const (
	gPad      = 16 // around the drawing
	gBoxH     = 40
	gBoxMinW  = 88
	gCharW    = 8 // a generous width of one character of the node font
	gBoxPadX  = 14
	gGapX     = 24 // between boxes of a layer
	gGapY     = 64 // between layers: room for an edge's label
	gMaxNameW = 64 // node names are at most 64 characters
)

// graphNode is one node as drawn.
type graphNode struct {
	Name       string
	Layer      int
	X, Y, W, H int
	// Status is the node's status in the run shown ("" when no run is);
	// Class its colour (statusClass).
	Status, Class string
	// URL is where the box links to ("" for none); Title its tooltip.
	URL, Title string
}

// CX and CY are the box's centre (the name's anchor).
func (n graphNode) CX() int { return n.X + n.W/2 }
func (n graphNode) CY() int { return n.Y + n.H/2 }

// graphEdge is one edge as drawn: a path from the bottom of its source to
// the top of its target, and its condition when it is not success.
type graphEdge struct {
	From, To string
	Path     string
	// Label is the condition (failure, always), "" for success; LX, LY
	// where it is written, LW its background's width.
	Label      string
	LX, LY, LW int
}

// BoxX and BoxY are the corner of the label's background.
func (e graphEdge) BoxX() int { return e.LX - e.LW/2 }
func (e graphEdge) BoxY() int { return e.LY - 8 }

// wfGraph is a laid-out graph.
type wfGraph struct {
	Width, Height int
	Nodes         []graphNode
	Edges         []graphEdge
	Layers        int
}

// graphEdgeIn is an edge to lay out: From → To on condition On ("" is
// success).
type graphEdgeIn struct{ From, To, On string }

// layoutGraph lays out the nodes (in the workflow's order) and edges. An
// edge naming an unknown node is left out; nodes on a cycle (a graph the
// editor is about to refuse) go to one last layer, so that a preview
// still shows every node.
func layoutGraph(names []string, edges []graphEdgeIn) wfGraph {
	idx := make(map[string]int, len(names))
	for i, n := range names {
		if _, dup := idx[n]; !dup {
			idx[n] = i
		}
	}
	var es []graphEdgeIn
	for _, e := range edges {
		_, okF := idx[e.From]
		_, okT := idx[e.To]
		if okF && okT && e.From != e.To {
			es = append(es, e)
		}
	}
	layer := layers(names, idx, es)

	// Rows of node indexes by layer, in order of the nodes they follow.
	nl := 0
	for _, l := range layer {
		nl = max(nl, l+1)
	}
	rows := make([][]int, nl)
	preds := make([][]int, len(names))
	for _, e := range es {
		preds[idx[e.To]] = append(preds[idx[e.To]], idx[e.From])
	}
	pos := make([]float64, len(names)) // a node's place in its row
	for i := range names {
		if _, first := idx[names[i]]; first && idx[names[i]] == i {
			rows[layer[i]] = append(rows[layer[i]], i)
		}
	}
	for l, row := range rows {
		if l > 0 {
			key := func(i int) float64 {
				if len(preds[i]) == 0 {
					return float64(i)
				}
				s := 0.0
				for _, p := range preds[i] {
					s += pos[p]
				}
				return s / float64(len(preds[i]))
			}
			slices.SortStableFunc(row, func(a, b int) int {
				ka, kb := key(a), key(b)
				switch {
				case ka < kb:
					return -1
				case ka > kb:
					return 1
				}
				return a - b
			})
		}
		for k, i := range row {
			pos[i] = float64(k) + 0.5 - float64(len(row))/2 // centred on 0
		}
	}

	// Sizes, then places.
	g := wfGraph{Layers: nl}
	widths := make([]int, len(names))
	rowW := make([]int, nl)
	for l, row := range rows {
		for k, i := range row {
			widths[i] = boxWidth(names[i])
			rowW[l] += widths[i]
			if k > 0 {
				rowW[l] += gGapX
			}
		}
	}
	maxW := 0
	for _, w := range rowW {
		maxW = max(maxW, w)
	}
	g.Width = maxW + 2*gPad
	g.Height = 2*gPad + nl*gBoxH + max(nl-1, 0)*gGapY
	at := make(map[int]graphNode, len(names))
	for l, row := range rows {
		x := gPad + (maxW-rowW[l])/2
		y := gPad + l*(gBoxH+gGapY)
		for _, i := range row {
			n := graphNode{Name: names[i], Layer: l, X: x, Y: y, W: widths[i], H: gBoxH, Class: "st-none"}
			at[i] = n
			x += widths[i] + gGapX
		}
	}
	for i := range names {
		if n, ok := at[i]; ok {
			g.Nodes = append(g.Nodes, n)
		}
	}
	for _, e := range es {
		a, b := at[idx[e.From]], at[idx[e.To]]
		x1, y1 := a.CX(), a.Y+a.H
		x2, y2 := b.CX(), b.Y
		if b.Layer <= a.Layer {
			// Only on a cycle: from the side, so that the line is seen.
			x1, y1 = a.X+a.W, a.CY()
			x2, y2 = b.X+b.W, b.CY()
		}
		dy := (y2 - y1) / 2
		ge := graphEdge{From: e.From, To: e.To,
			Path: fmt.Sprintf("M%d %d C%d %d %d %d %d %d", x1, y1, x1, y1+dy, x2, y2-dy, x2, y2)}
		if on := strings.TrimSpace(e.On); on != "" && on != "success" {
			ge.Label = on
			ge.LW = utf8.RuneCountInString(on)*7 + 10
			// On the segment's first third, below the source: the
			// labels of edges leaving one box do not stack on a box of a
			// layer the edge passes.
			ge.LX, ge.LY = x1+(x2-x1)/3, y1+gGapY/2
			if b.Layer <= a.Layer {
				ge.LX, ge.LY = x1+ge.LW/2+4, y1
			}
		}
		g.Edges = append(g.Edges, ge)
	}
	return g
}

// layers is each node's layer: the longest path from a root to it. Nodes
// a topological order never reaches (a cycle) get one layer after all.
func layers(names []string, idx map[string]int, es []graphEdgeIn) []int {
	indeg := make([]int, len(names))
	out := make([][]int, len(names))
	for _, e := range es {
		f, t := idx[e.From], idx[e.To]
		out[f] = append(out[f], t)
		indeg[t]++
	}
	layer := make([]int, len(names))
	done := make([]bool, len(names))
	var queue []int
	for i := range names {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	deepest := 0
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		done[i] = true
		deepest = max(deepest, layer[i])
		for _, t := range out[i] {
			layer[t] = max(layer[t], layer[i]+1)
			if indeg[t]--; indeg[t] == 0 {
				queue = append(queue, t)
			}
		}
	}
	for i := range names {
		if !done[i] {
			layer[i] = deepest + 1
		}
	}
	return layer
}

// boxWidth is a node's box: its name with some room either side.
func boxWidth(name string) int {
	n := min(utf8.RuneCountInString(name), gMaxNameW)
	return max(gBoxMinW, n*gCharW+2*gBoxPadX)
}
