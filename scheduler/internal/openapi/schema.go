package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// schemas turns Go types into JSON Schemas (2020-12, as OpenAPI 3.1
// takes them) the way encoding/json writes and reads them: every named
// struct becomes a component under #/components/schemas, referenced by
// name.
type schemas struct {
	// components by name; byType finds the name of a type seen before,
	// so that two types of one name are caught rather than merged.
	components map[string]any
	byType     map[reflect.Type]string
	// special are the types whose JSON is not their Go shape: a custom
	// marshaler, time.Time, json.RawMessage.
	special map[reflect.Type]map[string]any
	// docs are the doc comments of types and fields ("Type",
	// "Type.Field"), when known.
	docs map[string]string
}

func newSchemas(special map[reflect.Type]map[string]any, docs map[string]string) *schemas {
	sp := map[reflect.Type]map[string]any{
		reflect.TypeFor[time.Time]():       {"type": "string", "format": "date-time"},
		reflect.TypeFor[json.RawMessage](): anyJSON(),
	}
	for t, s := range special {
		sp[t] = s
	}
	return &schemas{components: map[string]any{}, byType: map[reflect.Type]string{}, special: sp, docs: docs}
}

var (
	marshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshal = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
)

// of is the schema of t. nullable: a nil value of t is written as null
// (a nil slice, map or pointer in a field without omitempty).
func (g *schemas) of(t reflect.Type) (map[string]any, error) {
	if s, ok := g.special[t]; ok {
		if t.Name() == "" || t.PkgPath() == "time" || t == reflect.TypeFor[json.RawMessage]() {
			return s, nil
		}
		return g.ref(t, func() (map[string]any, error) { return s, nil })
	}
	if t.Kind() == reflect.Pointer {
		return g.of(t.Elem())
	}
	if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) || t.Implements(textMarshal) {
		return nil, fmt.Errorf("type %s has its own JSON encoding: give its schema in Spec.Special", t)
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int32, reflect.Int16, reflect.Int8:
		return map[string]any{"type": "integer", "format": "int32"}, nil
	case reflect.Int, reflect.Int64: // a Go int is 64 bits wide on the platforms jetjob builds for
		return map[string]any{"type": "integer", "format": "int64"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Interface:
		return anyJSON(), nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := g.of(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map %s: only string keys have a JSON form here", t)
		}
		vals, err := g.of(t.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		return g.ref(t, func() (map[string]any, error) { return g.object(t) })
	}
	return nil, fmt.Errorf("type %s (%s) has no JSON schema here", t, t.Kind())
}

// ref registers t's schema as a component (built once) and returns a
// reference to it.
func (g *schemas) ref(t reflect.Type, build func() (map[string]any, error)) (map[string]any, error) {
	name := componentName(t)
	if seen, ok := g.byType[t]; ok {
		return map[string]any{"$ref": "#/components/schemas/" + seen}, nil
	}
	if _, taken := g.components[name]; taken {
		return nil, fmt.Errorf("two types are named %s (one is %s): rename one", name, t)
	}
	g.byType[t] = name
	g.components[name] = nil // taken, while the fields are built
	s, err := build()
	if err != nil {
		return nil, err
	}
	if d := g.docs[t.Name()]; d != "" {
		s = withDescription(s, d)
	}
	g.components[name] = s
	return map[string]any{"$ref": "#/components/schemas/" + name}, nil
}

// componentName is t's name with its first letter upper case (an
// unexported document type of the server, like readiness, is named as a
// client would name it).
func componentName(t reflect.Type) string {
	n := t.Name()
	return strings.ToUpper(n[:1]) + n[1:]
}

func withDescription(s map[string]any, d string) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["description"] = d
	return out
}

// field is a struct field as encoding/json sees it.
type field struct {
	name     string
	typ      reflect.Type
	owner    reflect.Type // the struct that declares it, for its doc
	goName   string
	depth    int
	tagged   bool
	optional bool // omitempty or omitzero: may be absent
}

// object is a struct's schema: its JSON fields, embedded structs'
// promoted as encoding/json promotes them (the shallowest wins; two at
// one depth cancel out unless exactly one is tagged).
func (g *schemas) object(t reflect.Type) (map[string]any, error) {
	var all []field
	collectFields(t, 0, map[reflect.Type]bool{}, &all)
	byName := map[string][]field{}
	var order []string
	for _, f := range all {
		if _, ok := byName[f.name]; !ok {
			order = append(order, f.name)
		}
		byName[f.name] = append(byName[f.name], f)
	}
	props := map[string]any{}
	var required []string
	for _, name := range order {
		f, ok := dominant(byName[name])
		if !ok {
			continue
		}
		s, err := g.of(f.typ)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.goName, err)
		}
		if !f.optional && nilable(f.typ) {
			s = nullable(s)
		}
		if d := g.docs[f.owner.Name()+"."+f.goName]; d != "" {
			s = withDescription(s, d)
		}
		props[name] = s
		if !f.optional {
			required = append(required, name)
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

func collectFields(t reflect.Type, depth int, seen map[reflect.Type]bool, out *[]field) {
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, depth+1, seen, out)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		f := field{name: name, typ: ft, owner: t, goName: sf.Name, depth: depth, tagged: name != ""}
		if name == "" {
			f.name = sf.Name
		}
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				f.optional = true
			}
		}
		*out = append(*out, f)
	}
}

// dominant is encoding/json's choice among fields of one JSON name.
func dominant(fs []field) (field, bool) {
	least := fs[0].depth
	for _, f := range fs {
		least = min(least, f.depth)
	}
	var top []field
	for _, f := range fs {
		if f.depth == least {
			top = append(top, f)
		}
	}
	if len(top) == 1 {
		return top[0], true
	}
	var tagged []field
	for _, f := range top {
		if f.tagged {
			tagged = append(tagged, f)
		}
	}
	if len(tagged) == 1 {
		return tagged[0], true
	}
	return field{}, false
}

// nilable reports whether a field of type t, without omitempty, may be
// written null: a nil pointer. A nil slice or map would be written null
// too, but the documents a server built on this package answers must
// hold empty ones instead (a list is a list, for clients in every
// language): the document says so, and validating a server's answers
// against it checks it.
func nilable(t reflect.Type) bool {
	return t.Kind() == reflect.Pointer
}

// nullable lets s be null as well.
func nullable(s map[string]any) map[string]any {
	if typ, ok := s["type"].(string); ok {
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []string{typ, "null"}
		return out
	}
	if len(s) == 0 {
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// anyJSON is the schema of any JSON value, null included, its types
// spelled out: an empty schema means as much, but not to every validator
// (kin-openapi takes it as not nullable).
func anyJSON() map[string]any {
	return map[string]any{"type": []string{"object", "array", "string", "number", "boolean", "null"}}
}
