package openapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type base struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Enabled *bool  `json:"enabled,omitempty"` // shadowed by doc.Enabled
	Left    string
}

type other struct {
	Left string // conflicts with base.Left at one depth: dropped
}

type doc struct {
	base
	other
	Enabled bool              `json:"enabled"`
	Tags    []string          `json:"tags"`
	Opt     []string          `json:"opt,omitempty"`
	At      time.Time         `json:"at"`
	When    *time.Time        `json:"when,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Counts  map[string]int64  `json:"counts"`
	Child   *child            `json:"child"`
	Hidden  string            `json:"-"`
	Zero    time.Time         `json:"zero,omitzero"`
	ByName  map[string]string `json:"by_name,omitempty"`
	//lint:ignore U1000 an unexported field, to check that it is left out
	hidden int
}

type child struct {
	N uint16 `json:"n"`
}

// The schemas say what encoding/json writes: embedded fields promoted
// (the shallower wins, a conflict at one depth drops both), omitempty
// and omitzero optional, pointers without them nullable; slices and maps
// are never null.
func TestSchemasFollowEncodingJSON(t *testing.T) {
	g := newSchemas(nil, map[string]string{"doc.Tags": "the tags"})
	if _, err := g.of(reflect.TypeFor[doc]()); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(g.components)
	var got map[string]struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	d := got["Doc"]
	if want := "id name enabled tags at counts child"; strings.Join(d.Required, " ") != want {
		t.Errorf("required %v, want %s", d.Required, want)
	}
	for _, name := range []string{"Left", "Hidden", "hidden"} {
		if _, ok := d.Properties[name]; ok {
			t.Errorf("property %s present: %v", name, d.Properties[name])
		}
	}
	want := map[string]string{
		"enabled": `{"type":"boolean"}`,
		"tags":    `{"description":"the tags","items":{"type":"string"},"type":"array"}`,
		"opt":     `{"items":{"type":"string"},"type":"array"}`,
		"at":      `{"format":"date-time","type":"string"}`,
		"when":    `{"format":"date-time","type":"string"}`,
		"raw":     `{"type":["object","array","string","number","boolean","null"]}`,
		"counts":  `{"additionalProperties":{"format":"int64","type":"integer"},"type":"object"}`,
		"child":   `{"anyOf":[{"$ref":"#/components/schemas/Child"},{"type":"null"}]}`,
		"zero":    `{"format":"date-time","type":"string"}`,
	}
	for name, w := range want {
		if b, _ := json.Marshal(d.Properties[name]); string(b) != w {
			t.Errorf("%s: %s, want %s", name, b, w)
		}
	}
	if _, ok := got["Child"]; !ok {
		t.Errorf("no component Child: %v", got)
	}
}

type marshals struct{}

func (marshals) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

// A type with its own JSON encoding needs its schema given; two types of
// one name are refused rather than merged.
func TestSchemasRefuseWhatTheyCannotKnow(t *testing.T) {
	if _, err := newSchemas(nil, nil).of(reflect.TypeFor[marshals]()); err == nil || !strings.Contains(err.Error(), "Spec.Special") {
		t.Errorf("a custom marshaler: %v, want an error pointing at Spec.Special", err)
	}
	g := newSchemas(map[reflect.Type]map[string]any{reflect.TypeFor[marshals](): {"type": "string"}}, nil)
	if s, err := g.of(reflect.TypeFor[marshals]()); err != nil || s["$ref"] != "#/components/schemas/Marshals" {
		t.Errorf("a custom marshaler with its schema given: %v %v", s, err)
	}
	type child struct{ X int }
	g = newSchemas(nil, nil)
	_, err1 := g.of(reflect.TypeFor[doc]())
	_, err2 := g.of(reflect.TypeFor[child]())
	if err1 != nil || err2 == nil || !strings.Contains(err2.Error(), "two types are named Child") {
		t.Errorf("two types named child: %v, %v", err1, err2)
	}
}

func TestOperationIDs(t *testing.T) {
	for in, want := range map[string]string{
		"GET /api/v1/jobs/{id}/runs":                     "getJobsByIdRuns",
		"POST /api/v1/workflow-runs/{id}/mark-succeeded": "postWorkflowRunsByIdMarkSucceeded",
		"GET /healthz":                       "getHealthz",
		"GET /api/v1/openapi.json":           "getOpenapiJson",
		"DELETE /api/v1/users/{name}/grants": "deleteUsersByNameGrants",
	} {
		method, path, _ := strings.Cut(in, " ")
		if got := operationID(method, path); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
