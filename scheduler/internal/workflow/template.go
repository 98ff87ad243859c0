package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"text/template/parse"
	"time"
)

// A node's params may be a template (Go text/template) over its run:
//
//	{{ .params.day }}                  the workflow run's params (a JSON object)
//	{{ .scheduled_at }}                the run's scheduled time (RFC 3339, UTC)
//	{{ .nodes.extract.output.rows }}   an upstream node's output
//	{{ .item }}                        a ForEach node's element
//	{{ json .nodes.extract.output }}   any of them as JSON
//
// CheckParams refuses, when the workflow is saved, a reference to a node
// that is not upstream of the one whose params name it, and .item outside a
// ForEach node; RenderParams fills the template when the node starts, and
// a key missing at that moment fails the node's start with the key named.

// MaxParams bounds a rendered params text, as a job's params are bounded.
const MaxParams = 64 << 10

var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}

// CheckParams checks the params template text of node in g.
func CheckParams(g *Graph, node, text string) error {
	if !strings.Contains(text, "{{") {
		return nil
	}
	n, ok := g.Node(node)
	if !ok {
		return fmt.Errorf("no node %q", node)
	}
	t, err := template.New(node).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return fmt.Errorf("node %q: params: %w", node, err)
	}
	up := g.Upstream(node)
	var problem error
	walk(t.Root, func(chain []string) {
		if problem != nil || len(chain) == 0 {
			return
		}
		switch chain[0] {
		case "params", "scheduled_at":
		case "item":
			if n.ForEach == "" {
				problem = fmt.Errorf("node %q: params use .item, and the node has no for_each", node)
			}
		case "nodes":
			switch {
			case len(chain) < 2:
				problem = fmt.Errorf("node %q: params use .nodes whole; name a node: .nodes.<node>.output", node)
			case !up[chain[1]]:
				problem = fmt.Errorf("node %q: params use node %q, which is not upstream of it", node, chain[1])
			case len(chain) > 2 && chain[2] != "output":
				problem = fmt.Errorf("node %q: params use .nodes.%s.%s: a node offers .output", node, chain[1], chain[2])
			}
		default:
			problem = fmt.Errorf("node %q: params use .%s: known are .params, .scheduled_at, .nodes and .item", node, chain[0])
		}
	})
	return problem
}

// walk calls fn with the field chain of every reference to the template's
// data (.a.b.c, and $.a.b.c) under node.
func walk(node parse.Node, fn func([]string)) {
	switch n := node.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, fn)
		}
	case *parse.ActionNode:
		walk(n.Pipe, fn)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, fn)
		}
	case *parse.CommandNode:
		for _, a := range n.Args {
			walk(a, fn)
		}
	case *parse.FieldNode:
		fn(n.Ident)
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			fn(n.Ident[1:])
		}
	case *parse.ChainNode:
		walk(n.Node, fn)
	case *parse.IfNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, fn)
	}
}

func walkBranch(b *parse.BranchNode, fn func([]string)) {
	walk(b.Pipe, fn)
	walk(b.List, fn)
	walk(b.ElseList, fn)
}

// Inputs is what a node's params template is filled from.
type Inputs struct {
	Params      json.RawMessage            // the workflow run's params: a JSON object, or empty
	ScheduledAt time.Time                  // the workflow run's scheduled time
	Outputs     map[string]json.RawMessage // upstream nodes' outputs, by node
	Item        json.RawMessage            // a ForEach node's element
}

// RenderParams fills the params template text with in.
func RenderParams(text string, in Inputs) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := template.New("params").Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("params: %w", err)
	}
	data := map[string]any{"scheduled_at": in.ScheduledAt.UTC().Format(time.RFC3339)}
	if data["params"], err = decode(in.Params, "the run's params"); err != nil {
		return "", err
	}
	if data["item"], err = decode(in.Item, "the item"); err != nil {
		return "", err
	}
	nodes := map[string]any{}
	for name, out := range in.Outputs {
		v, err := decode(out, fmt.Sprintf("node %q's output", name))
		if err != nil {
			return "", err
		}
		nodes[name] = map[string]any{"output": v}
	}
	data["nodes"] = nodes
	var b bytes.Buffer
	if err := t.Execute(&limitWriter{w: &b, n: MaxParams}, data); err != nil {
		return "", fmt.Errorf("params: %w", err)
	}
	return b.String(), nil
}

func decode(raw json.RawMessage, what string) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// limitWriter fails a write past n bytes in all.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.w.Len()+len(p) > l.n {
		return 0, fmt.Errorf("rendered params over %d bytes", l.n)
	}
	return l.w.Write(p)
}
