package workflow

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Condition is when an edge lets its target run.
type Condition string

const (
	OnSuccess Condition = "success"
	OnFailure Condition = "failure"
	OnAlways  Condition = "always"
)

// Join is how a node combines its incoming edges.
type Join string

const (
	JoinAll Join = "all"
	JoinAny Join = "any"
)

// Limits a graph must keep. A run's node runs are created in the
// transaction that ends the node before them, so a graph is bounded the way
// a statement is; ForEach's bound is on the items of one node.
const (
	MaxNodes    = 200
	MaxEdges    = 1000
	MaxForEach  = 1000
	maxNameLen  = 64
	namePattern = `^[a-z0-9][a-z0-9_-]*$`
)

var validName = regexp.MustCompile(namePattern)

// Node is one step of a workflow: the job it runs is the caller's (a
// reference or an inline spec); what matters here is how it joins, whether
// it is disabled, and what it fans out over.
type Node struct {
	Name     string
	Join     Join // "" is JoinAll
	Disabled bool
	// ForEach makes one node run per element of a list in an upstream
	// node's output: "<node>.<path>" (see Ref). Empty for a plain node.
	ForEach string
}

// Edge a → b: b may run when a settles as On says ("" is OnSuccess).
type Edge struct {
	From, To string
	On       Condition
}

// Graph is a workflow's nodes and edges, in the order the author wrote
// them: Advance reports nodes in that order, so what it returns is
// deterministic.
type Graph struct {
	Nodes []Node
	Edges []Edge
}

// ErrInvalid is wrapped by every error of Validate.
var ErrInvalid = errors.New("invalid workflow")

// Validate checks g whole and reports every problem it finds, each naming
// the nodes or edge concerned: names, unknown and repeated edges, cycles
// (the nodes of one, in order), joins that can never be met, and ForEach
// references to nodes that are not upstream.
func (g *Graph) Validate() error {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if len(g.Nodes) == 0 {
		add("a workflow needs at least one node")
	}
	if len(g.Nodes) > MaxNodes {
		add("%d nodes: at most %d", len(g.Nodes), MaxNodes)
	}
	if len(g.Edges) > MaxEdges {
		add("%d edges: at most %d", len(g.Edges), MaxEdges)
	}
	known := make(map[string]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		switch {
		case n.Name == "":
			add("a node has no name")
		case len(n.Name) > maxNameLen || !validName.MatchString(n.Name):
			add("node %q: a name is 1 to %d of a-z, 0-9, _ and -, starting with a letter or digit", n.Name, maxNameLen)
		case known[n.Name]:
			add("node %q is named twice", n.Name)
		}
		known[n.Name] = true
		if n.Join != "" && n.Join != JoinAll && n.Join != JoinAny {
			add("node %q: join %q: all or any", n.Name, n.Join)
		}
	}
	seen := make(map[[2]string]bool, len(g.Edges))
	for _, e := range g.Edges {
		name := e.String()
		switch {
		case !known[e.From]:
			add("edge %s: no node %q", name, e.From)
		case !known[e.To]:
			add("edge %s: no node %q", name, e.To)
		case e.From == e.To:
			add("edge %s: a node cannot follow itself", name)
		case seen[[2]string{e.From, e.To}]:
			add("edge %s: %s → %s is given twice (one edge per pair; use always for either outcome)", name, e.From, e.To)
		}
		seen[[2]string{e.From, e.To}] = true
		if e.On != "" && e.On != OnSuccess && e.On != OnFailure && e.On != OnAlways {
			add("edge %s: condition %q: success, failure or always", name, e.On)
		}
	}
	if len(problems) > 0 {
		// The rest needs a well-formed graph.
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	if cycle := g.cycle(); cycle != nil {
		add("cycle: %s", strings.Join(cycle, " → "))
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	for _, n := range g.Nodes {
		if n.ForEach == "" {
			continue
		}
		ref, err := ParseRef(n.ForEach)
		switch {
		case err != nil:
			add("node %q: for_each: %v", n.Name, err)
		case !g.Upstream(n.Name)[ref.Node]:
			add("node %q: for_each over %q, which is not upstream of it", n.Name, ref.Node)
		}
	}
	problems = append(problems, g.unmeetableJoins()...)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}

func (e Edge) String() string {
	return fmt.Sprintf("%s → %s (%s)", e.From, e.To, e.condition())
}

func (e Edge) condition() Condition {
	if e.On == "" {
		return OnSuccess
	}
	return e.On
}

func (n Node) join() Join {
	if n.Join == "" {
		return JoinAll
	}
	return n.Join
}

// Node returns the node named name.
func (g *Graph) Node(name string) (Node, bool) {
	i := slices.IndexFunc(g.Nodes, func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, false
	}
	return g.Nodes[i], true
}

// incoming returns the edges into each node, in the order they were given.
func (g *Graph) incoming() map[string][]Edge {
	in := make(map[string][]Edge, len(g.Nodes))
	for _, e := range g.Edges {
		in[e.To] = append(in[e.To], e)
	}
	return in
}

// Upstream returns the nodes from which name can be reached: the ones
// whose outputs it may use.
func (g *Graph) Upstream(name string) map[string]bool {
	in := g.incoming()
	up := map[string]bool{}
	stack := []string{name}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range in[n] {
			if !up[e.From] {
				up[e.From] = true
				stack = append(stack, e.From)
			}
		}
	}
	return up
}

// cycle returns the nodes of a cycle, first repeated last, or nil.
func (g *Graph) cycle() []string {
	out := make(map[string][]string, len(g.Nodes))
	for _, e := range g.Edges {
		out[e.From] = append(out[e.From], e.To)
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := make(map[string]int, len(g.Nodes))
	var path []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = onPath
		path = append(path, n)
		for _, m := range out[n] {
			switch state[m] {
			case onPath:
				i := slices.Index(path, m)
				return append(slices.Clone(path[i:]), m)
			case unseen:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		state[n] = done
		return nil
	}
	for _, n := range g.Nodes {
		if state[n.Name] == unseen {
			if c := visit(n.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// unmeetableJoins finds nodes that can never run: what a node needs to
// start is followed up through every join all (a join any offers a choice,
// and is not judged past), and a node needed both to succeed and to fail
// means the node needing it never starts. Example: c joins a → c (failure) and b → c, where b needs a to
// succeed. Disabling a node is not judged: a node disabled for a while
// makes its failure edges dead, and that is the author's intent.
func (g *Graph) unmeetableJoins() []string {
	in := g.incoming()
	var problems []string
	for _, n := range g.Nodes {
		if len(in[n.Name]) == 0 {
			continue
		}
		needs := map[string]Condition{}
		var conflict string
		var need func(name string, c Condition)
		need = func(name string, c Condition) {
			if conflict != "" || c == OnAlways {
				return
			}
			if prev, ok := needs[name]; ok {
				if prev != c {
					conflict = fmt.Sprintf("node %q can never run: it needs %q both to succeed and to fail", n.Name, name)
				}
				return
			}
			needs[name] = c
			node, _ := g.Node(name)
			if node.join() == JoinAll {
				for _, e := range in[name] {
					need(e.From, e.condition())
				}
			}
		}
		if n.join() == JoinAll {
			for _, e := range in[n.Name] {
				need(e.From, e.condition())
			}
		}
		if conflict != "" {
			problems = append(problems, conflict)
		}
	}
	return problems
}
