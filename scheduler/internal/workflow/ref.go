package workflow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Ref names a value in a node's output: "nodes.<node>.output", then a
// path of object keys and list indexes ("nodes.extract.output.files.0"),
// the same chain a params template writes as
// {{ .nodes.extract.output.files }}.
type Ref struct {
	Node string
	Path []string
}

// ParseRef parses s as a Ref.
func ParseRef(s string) (Ref, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 3 || parts[0] != "nodes" || parts[2] != "output" || parts[1] == "" {
		return Ref{}, fmt.Errorf("%q: want nodes.<node>.output[.<key>...]", s)
	}
	for _, p := range parts[3:] {
		if p == "" {
			return Ref{}, fmt.Errorf("%q: an empty key", s)
		}
	}
	return Ref{Node: parts[1], Path: parts[3:]}, nil
}

func (r Ref) String() string {
	return strings.Join(append([]string{"nodes", r.Node, "output"}, r.Path...), ".")
}

// Lookup finds r's value in output, the JSON output of r's node.
func (r Ref) Lookup(output json.RawMessage) (any, error) {
	if len(output) == 0 {
		return nil, fmt.Errorf("%s: node %q set no output", r, r.Node)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(output))
	dec.UseNumber() // an id of 2^53 and more stays the same number
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: node %q's output: %w", r, r.Node, err)
	}
	for i, key := range r.Path {
		at := strings.Join(append([]string{"nodes", r.Node, "output"}, r.Path[:i+1]...), ".")
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("%s: no key %q", at, key)
			}
			v = next
		case []any:
			idx, err := strconv.Atoi(key)
			if err != nil || idx < 0 || idx >= len(c) {
				return nil, fmt.Errorf("%s: not an index of a list of %d", at, len(c))
			}
			v = c[idx]
		default:
			return nil, fmt.Errorf("%s: %q of a %s", at, key, kind(v))
		}
	}
	return v, nil
}

// Items is the list r names in output, for a ForEach node: an error if it
// is not a list or holds more than MaxForEach elements. Each element is
// returned as its JSON, the item a node run receives.
func (r Ref) Items(output json.RawMessage) ([]json.RawMessage, error) {
	v, err := r.Lookup(output)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("for_each over %s: a %s, not a list", r, kind(v))
	}
	if len(list) > MaxForEach {
		return nil, fmt.Errorf("for_each over %s: %d items, at most %d", r, len(list), MaxForEach)
	}
	items := make([]json.RawMessage, len(list))
	for i, e := range list {
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("for_each over %s: item %d: %w", r, i, err)
		}
		items[i] = b
	}
	return items, nil
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	}
	return fmt.Sprintf("%T", v)
}
