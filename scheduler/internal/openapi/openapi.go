// Package openapi builds an OpenAPI 3.1 document from a table of
// operations and the Go types of their documents: the schemas are read
// off the types (json tags, omitempty, pointers, embedded structs) as
// encoding/json writes them, so that a document built from the types a
// server answers and a client decodes cannot disagree with either.
//
// It knows nothing of jetjob: package api holds the table (openapi.go,
// beside its route table) and checks it against the routes; the built
// document is committed as scheduler/apiv1/openapi.json.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// Spec is what the document says besides its operations.
type Spec struct {
	Title, Version, Description string
	// Security are the schemes (components/securitySchemes) any of which
	// authenticates an operation that is not Public.
	Security map[string]any
	// PathParams types a path's {name}; a name not here is a string.
	PathParams map[string]Param
	// Error is the document of every answer that is not a success (the
	// "default" response of every operation), ErrorDescription says
	// which statuses it comes with.
	Error            any
	ErrorDescription string
	// Special gives the schemas of types whose JSON is not their Go
	// shape (a custom MarshalJSON): each becomes a component of the
	// type's name.
	Special map[reflect.Type]map[string]any
	// Docs are descriptions of types ("Job") and fields ("Job.Version"),
	// e.g. their doc comments (Comments reads them).
	Docs map[string]string
}

// Operation documents one route.
type Operation struct {
	// Pattern is the route's pattern as the server's mux has it:
	// "METHOD /path/{param}".
	Pattern     string
	Summary     string
	Description string
	// Public operations need no credentials.
	Public bool
	// Query are the query parameters, and the headers the operation
	// reads (Param.In header).
	Query []Param
	// Body is a value of the request document's type (nil: no body);
	// BodyOptional when it may be left out. Example, when set, is an
	// example body, checked against the schema by whoever validates the
	// document.
	Body         any
	BodyOptional bool
	Example      any
	// Status is the success status (default 200, or 204 without a
	// Response); Response a value of the answer's type.
	Status   int
	Response any
	// ContentType of the success answer when it is not JSON (Response
	// is then a string: the text).
	ContentType string
	// Also are other success answers.
	Also []Answer
}

// Answer is a success answer besides an operation's main one.
type Answer struct {
	Status      int
	Description string
	Response    any
	ContentType string
}

// Param is a query, header or path parameter.
type Param struct {
	Name string
	// In is query (the default) or header; path parameters come from
	// the pattern.
	In string
	// Type is string (the default), integer or boolean.
	Type        string
	Description string
	Required    bool
	Enum        []string
}

// Q is a string query parameter.
func Q(name, description string) Param { return Param{Name: name, Description: description} }

// QInt is an integer query parameter.
func QInt(name, description string) Param {
	return Param{Name: name, Type: "integer", Description: description}
}

// Header is a header the operation reads.
func Header(name, description string) Param {
	return Param{Name: name, In: "header", Description: description}
}

// QBool is a boolean query parameter.
func QBool(name, description string) Param {
	return Param{Name: name, Type: "boolean", Description: description}
}

// Build returns the document, indented JSON with a final newline: the
// same table and types always give the same bytes.
func Build(spec Spec, ops []Operation) ([]byte, error) {
	g := newSchemas(spec.Special, spec.Docs)
	errSchema, err := g.of(reflect.TypeOf(spec.Error))
	if err != nil {
		return nil, fmt.Errorf("error document: %w", err)
	}
	paths := map[string]map[string]any{}
	ids := map[string]string{}
	var security []any
	for _, name := range sortedKeys(spec.Security) {
		security = append(security, map[string]any{name: []string{}})
	}
	for _, op := range ops {
		method, path, ok := strings.Cut(op.Pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("operation %q: want a pattern \"METHOD /path\"", op.Pattern)
		}
		o, err := g.operation(spec, op, method, path)
		if err != nil {
			return nil, fmt.Errorf("operation %s: %w", op.Pattern, err)
		}
		id := o["operationId"].(string)
		if other, dup := ids[id]; dup {
			return nil, fmt.Errorf("operations %s and %s both have the id %s", other, op.Pattern, id)
		}
		ids[id] = op.Pattern
		if op.Public {
			o["security"] = []any{}
		}
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		if _, dup := paths[path][strings.ToLower(method)]; dup {
			return nil, fmt.Errorf("operation %s is documented twice", op.Pattern)
		}
		paths[path][strings.ToLower(method)] = o
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": spec.Title, "version": spec.Version, "description": spec.Description},
		"servers": []any{map[string]any{"url": "/"}},
		"paths":   paths,
		"components": map[string]any{
			"schemas":         g.components,
			"securitySchemes": spec.Security,
			"responses": map[string]any{"Error": map[string]any{
				"description": spec.ErrorDescription,
				"content":     map[string]any{"application/json": map[string]any{"schema": errSchema}},
			}},
		},
		"security": security,
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (g *schemas) operation(spec Spec, op Operation, method, path string) (map[string]any, error) {
	o := map[string]any{"operationId": operationID(method, path), "tags": []string{tag(path)}}
	if op.Summary == "" {
		return nil, fmt.Errorf("no summary")
	}
	o["summary"] = op.Summary
	if op.Description != "" {
		o["description"] = op.Description
	}
	var params []any
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		p, ok := spec.PathParams[m[1]]
		if !ok {
			p = Param{Name: m[1]}
		}
		p.Name, p.Required = m[1], true
		params = append(params, param(p, "path"))
	}
	for _, p := range op.Query {
		in := p.In
		if in == "" {
			in = "query"
		}
		params = append(params, param(p, in))
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if op.Body != nil {
		s, err := g.of(reflect.TypeOf(op.Body))
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		media := map[string]any{"schema": s}
		if op.Example != nil {
			media["example"] = op.Example
		}
		o["requestBody"] = map[string]any{"required": !op.BodyOptional,
			"content": map[string]any{"application/json": media}}
	}
	responses := map[string]any{"default": map[string]any{"$ref": "#/components/responses/Error"}}
	main := Answer{Status: op.Status, Response: op.Response, ContentType: op.ContentType, Description: op.Summary}
	if main.Status == 0 {
		main.Status = http.StatusOK
		if op.Response == nil {
			main.Status = http.StatusNoContent
		}
	}
	for _, a := range append([]Answer{main}, op.Also...) {
		r, err := g.answer(a)
		if err != nil {
			return nil, fmt.Errorf("answer %d: %w", a.Status, err)
		}
		code := fmt.Sprint(a.Status)
		if prev, ok := responses[code].(map[string]any); ok {
			// Another content type of one status: one response, both types.
			content, _ := prev["content"].(map[string]any)
			for k, v := range r["content"].(map[string]any) {
				content[k] = v
			}
			continue
		}
		responses[code] = r
	}
	o["responses"] = responses
	return o, nil
}

func (g *schemas) answer(a Answer) (map[string]any, error) {
	desc := a.Description
	if desc == "" {
		desc = http.StatusText(a.Status)
	}
	r := map[string]any{"description": desc}
	if a.Response == nil {
		return r, nil
	}
	if a.ContentType != "" {
		r["content"] = map[string]any{a.ContentType: map[string]any{"schema": map[string]any{"type": "string"}}}
		return r, nil
	}
	s, err := g.of(reflect.TypeOf(a.Response))
	if err != nil {
		return nil, err
	}
	r["content"] = map[string]any{"application/json": map[string]any{"schema": s}}
	return r, nil
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func param(p Param, in string) map[string]any {
	typ := p.Type
	if typ == "" {
		typ = "string"
	}
	s := map[string]any{"type": typ}
	if typ == "integer" {
		s["format"] = "int64"
	}
	if len(p.Enum) > 0 {
		s["enum"] = p.Enum
	}
	out := map[string]any{"name": p.Name, "in": in, "schema": s}
	if p.Required {
		out["required"] = true
	}
	if p.Description != "" {
		out["description"] = p.Description
	}
	return out
}

// operationID names an operation after its method and path:
// "GET /api/v1/jobs/{id}/runs" is getJobsByIdRuns.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/api/v1"), "/") {
		if v, ok := strings.CutPrefix(seg, "{"); ok {
			b.WriteString("By")
			seg = strings.TrimSuffix(v, "}")
		}
		for _, w := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// tag groups an operation by its path's first segment under /api/v1
// ("jobs"); the paths outside it, and documents like openapi.json, are
// "service".
func tag(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/v1/")
	seg, _, _ := strings.Cut(rest, "/")
	if !ok || strings.Contains(seg, ".") {
		return "service"
	}
	return seg
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
