package jobfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// field is one field of an API document as a file holds it: under its JSON
// name, converted through its JSON form. Going through JSON keeps the
// document's own rules (apiv1.Duration is "30s", *bool may be absent)
// without a second mapping to maintain.
type field struct {
	name  string
	index int
	typ   reflect.Type
	// sub, when set, are the fields of the struct the field holds (or
	// points to, or of each element of a slice of them): it is written
	// field by field in their order, not as a mapping sorted by name.
	sub []field
}

// nest is fields with the field called name written by its fields sub.
func nest(fields []field, name string, sub []field) []field {
	out := slices.Clone(fields)
	for i := range out {
		if out[i].name == name {
			out[i].sub = sub
		}
	}
	return out
}

// fieldsOf lists the JSON-named fields of struct type t in declaration
// order, leaving out those named in skip.
func fieldsOf(t reflect.Type, skip ...string) []field {
	var out []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if slices.Contains(skip, name) {
			continue
		}
		out = append(out, field{name: name, index: i, typ: sf.Type})
	}
	return out
}

// Fields not written as they are in a file: the key, the links (written as
// children, by name), the optimistic lock, and the source an importer
// records (not a file's to set; an apply that leaves it out keeps it).
const (
	fieldGroup    = "group"
	fieldName     = "name"
	fieldChildren = "children"
	fieldChildIDs = "child_job_ids"
	fieldVersion  = "version"
	fieldSource   = "source"
	// A version's remark belongs to an edit, not to the job: an apply
	// that changes the script saves it with the remark "edited with the job".
	fieldScriptRemark = "script_remark"
)

var (
	// jobFields are the fields of a job in a file, group and name first
	// (JobSpec declares them first).
	jobFields = fieldsOf(reflect.TypeFor[apiv1.JobSpec](), fieldChildIDs, fieldVersion, fieldSource, fieldScriptRemark)
	// groupFields are the fields of a group in a file: not its flow state,
	// an operation with a note (docs/flow-control.md), not configuration.
	groupFields = fieldsOf(reflect.TypeFor[apiv1.Group](), "created_at", "flow")
)

// fieldNames lists the names of fields, plus extra, for "known fields" hints.
func fieldNames(fields []field, extra ...string) string {
	names := make([]string, 0, len(fields)+len(extra))
	for _, f := range fields {
		names = append(names, f.name)
	}
	return strings.Join(append(names, extra...), ", ")
}

// jsonValue is v's JSON form decoded into plain values (numbers kept as
// written), or nil when v is its type's zero value: a file leaves out what
// is not set.
func jsonValue(v reflect.Value) (any, error) {
	if v.IsZero() {
		return nil, nil
	}
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// yamlNode writes a plain JSON value as a YAML node. Strings are always
// strings (quoted when they would read as something else, block scalars
// when they span lines); mapping keys are sorted, so the bytes are stable.
func yamlNode(v any) *yaml.Node {
	switch v := v.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(v.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}
	case string:
		n := &yaml.Node{}
		n.SetString(v)
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range v {
			n.Content = append(n.Content, yamlNode(e))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Content = append(n.Content, yamlNode(k), yamlNode(v[k]))
		}
		return n
	}
	panic(fmt.Sprintf("jobfile: unexpected JSON value %T", v))
}

// encodeFields appends to the mapping m the set fields of the struct v.
func encodeFields(m *yaml.Node, v reflect.Value, fields []field) error {
	return encodeFieldsAs(m, v, fields, jsonNode)
}

// jsonNode is v's JSON form as a YAML node (yamlNode).
func jsonNode(v reflect.Value) (*yaml.Node, error) {
	val, err := jsonValue(v)
	if err != nil || val == nil {
		return nil, err
	}
	return yamlNode(val), nil
}

// encodeFieldsAs is encodeFields writing each key and value with node.
func encodeFieldsAs(m *yaml.Node, v reflect.Value, fields []field, node func(reflect.Value) (*yaml.Node, error)) error {
	for _, f := range fields {
		fv := v.Field(f.index)
		if fv.IsZero() {
			continue
		}
		var n *yaml.Node
		var err error
		if f.sub != nil {
			n, err = encodeNested(fv, f.sub, node)
		} else {
			n, err = node(fv)
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", f.name, err)
		}
		if n == nil {
			continue
		}
		k, err := node(reflect.ValueOf(f.name))
		if err != nil {
			return fmt.Errorf("field %s: %w", f.name, err)
		}
		m.Content = append(m.Content, k, n)
	}
	return nil
}

// encodeNested is v, a struct, a pointer to one or a slice of them,
// written by its fields; nil when v is empty (left out).
func encodeNested(v reflect.Value, fields []field, node func(reflect.Value) (*yaml.Node, error)) (*yaml.Node, error) {
	switch v.Kind() {
	case reflect.Pointer:
		v = v.Elem()
	case reflect.Slice:
		if v.Len() == 0 {
			return nil, nil
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			m := &yaml.Node{Kind: yaml.MappingNode}
			if err := encodeFieldsAs(m, v.Index(i), fields, node); err != nil {
				return nil, fmt.Errorf("%d: %w", i, err)
			}
			seq.Content = append(seq.Content, m)
		}
		return seq, nil
	}
	m := &yaml.Node{Kind: yaml.MappingNode}
	return m, encodeFieldsAs(m, v, fields, node)
}

// decodeField sets the field f of the struct v from the YAML node n,
// through the field's JSON form. A scalar read into a string field is
// taken as written (params: 42 is "42", an RFC 3339 time stays text).
func decodeField(v reflect.Value, f field, n *yaml.Node) error {
	n = resolve(n)
	dst := v.Field(f.index)
	if f.typ.Kind() == reflect.String && n.Kind == yaml.ScalarNode && n.ShortTag() != "!!null" {
		dst.SetString(n.Value)
		return nil
	}
	plain, err := plainValue(n)
	if err != nil {
		return err
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return err
	}
	ptr := reflect.New(f.typ)
	if err := json.Unmarshal(b, ptr.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("want %s, not %s", kindName(f.typ), te.Value)
		}
		return err
	}
	dst.Set(ptr.Elem())
	return nil
}

// plainValue reads a YAML node as a plain JSON value. Only the scalars
// YAML types as null, bool, int and float are not strings.
func plainValue(n *yaml.Node) (any, error) {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			err := n.Decode(&b)
			return b, err
		case "!!int", "!!float":
			var f any
			if err := n.Decode(&f); err != nil {
				return nil, err
			}
			return f, nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := plainValue(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key must be a plain name", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: key %q appears twice", k.Line, k.Value)
			}
			v, err := plainValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// resolve follows aliases (*anchor) to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// kindName says in a user's words what a field of type t holds.
func kindName(t reflect.Type) string {
	if t == reflect.TypeFor[apiv1.Duration]() {
		return `a duration like "30s"`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return kindName(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}
