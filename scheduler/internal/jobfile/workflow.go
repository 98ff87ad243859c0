package jobfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A workflow as a file holds it (docs/workflows.md): one YAML document of
// kind Workflow, with the API's fields, nodes naming their jobs by
// group/name. `jetjob export` writes it after the jobs document, `jetjob
// apply -f` and `jetjob workflows create|apply -f` read it, and the
// console's workflow editor shows and reads the same document, so that
// what a user copies between them means the same everywhere.

// WorkflowKind is the kind of a workflow document.
const WorkflowKind = "Workflow"

// The fields of a workflow document are the API's (apiv1.WorkflowSpec,
// WorkflowNode, InlineJob, WorkflowEdge), in their order, listed as a job
// document's are (fields.go): ParseWorkflow reads the API's JSON, so the
// fields a file writes are the ones it reads, with no second set of types
// to keep in step. Nodes name their jobs by group/name, not by id.
var (
	workflowEdgeFields   = fieldsOf(reflect.TypeFor[apiv1.WorkflowEdge]())
	workflowInlineFields = nest(fieldsOf(reflect.TypeFor[apiv1.InlineJob]()), "sharding", fieldsOf(reflect.TypeFor[apiv1.Sharding]()))
	workflowNodeFields   = nest(fieldsOf(reflect.TypeFor[apiv1.WorkflowNode](), "job_id"), "inline", workflowInlineFields)
	workflowFields       = nest(nest(fieldsOf(reflect.TypeFor[apiv1.WorkflowSpec](), fieldVersion),
		"nodes", workflowNodeFields), "edges", workflowEdgeFields)
)

// inlineDoc is in as a file writes it, its defaults left out as a job
// file leaves them out (Minimize).
func inlineDoc(in *apiv1.InlineJob) *apiv1.InlineJob {
	m := Minimize(in.JobSpec())
	return &apiv1.InlineJob{Group: in.Group, Sharding: m.Sharding, Handler: m.Handler, Description: m.Description, Params: m.Params,
		MisfirePolicy: m.MisfirePolicy, RouteStrategy: m.RouteStrategy, BlockStrategy: m.BlockStrategy,
		MaxConcurrency: m.MaxConcurrency, Timeout: m.Timeout, MaxRetries: m.MaxRetries,
		RetryBackoff: m.RetryBackoff, RetryInitial: m.RetryInitial, RetryMax: m.RetryMax,
		AlarmWebhook: m.AlarmWebhook, AlarmEmails: m.AlarmEmails,
		Priority: m.Priority, ConcurrencyKey: m.ConcurrencyKey, KeyCap: m.KeyCap, RateLimit: m.RateLimit, KeyRateLimit: m.KeyRateLimit}
}

// WorkflowDoc is wf's spec as a file states it: what a user writes, the
// defaults left out, nodes naming their jobs by group/name only.
func WorkflowDoc(wf *apiv1.Workflow) apiv1.WorkflowSpec {
	d := wf.WorkflowSpec
	d.Version, d.Enabled, d.Nodes = 0, nil, nil
	if d.Timezone == "UTC" {
		d.Timezone = ""
	}
	if d.Overlap == "serial" {
		d.Overlap = ""
	}
	if !wf.Enabled {
		off := false
		d.Enabled = &off
	}
	for _, n := range wf.Nodes {
		n.JobID = 0
		if n.Inline != nil {
			n.Inline = inlineDoc(n.Inline)
			if n.Inline.Group == wf.Group {
				n.Inline.Group = "" // the workflow's, as the API stores it
			}
		}
		d.Nodes = append(d.Nodes, n)
	}
	return d
}

// EncodeWorkflow is wf's document as YAML (without a leading "---").
func EncodeWorkflow(wf *apiv1.Workflow) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, yamlNode("apiVersion"), yamlNode(APIVersion), yamlNode("kind"), yamlNode(WorkflowKind))
	if err := encodeFieldsAs(doc, reflect.ValueOf(WorkflowDoc(wf)), workflowFields, workflowValue); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", wf.Group, wf.Name, err)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", wf.Group, wf.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", wf.Group, wf.Name, err)
	}
	return b.Bytes(), nil
}

// workflowValue writes a key or value of a workflow document as yaml.v3
// writes its Go value, as the document always has (a job document writes
// JSON forms, jsonNode): a string YAML 1.1 reads as a boolean is quoted,
// labels are in yaml.v3's order, times are YAML timestamps, empty lists
// are left out. A value with
// a JSON form of its own (apiv1.Duration: "30s") is written as that.
func workflowValue(v reflect.Value) (*yaml.Node, error) {
	if k := v.Kind(); (k == reflect.Slice || k == reflect.Map) && v.Len() == 0 {
		return nil, nil // left out, as omitempty did
	}
	val := v.Interface()
	if _, ok := val.(json.Marshaler); ok && v.Type() != reflect.TypeFor[*time.Time]() {
		var err error
		if val, err = jsonValue(v); err != nil {
			return nil, err
		}
	}
	n := &yaml.Node{}
	return n, n.Encode(val)
}

// ParseWorkflow reads a workflow document: YAML (JSON is YAML too) with
// the API's fields, and optionally apiVersion jetjob/v1 and kind
// Workflow. An unknown field is an error naming it; name prefixes every
// error (a file's name, or what the document is).
func ParseWorkflow(name string, data []byte) (apiv1.WorkflowSpec, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return apiv1.WorkflowSpec{}, fmt.Errorf("%s: %w", name, err)
	}
	return workflowFromDoc(name, doc)
}

// workflowFromDoc reads one workflow from a decoded YAML document.
func workflowFromDoc(name string, doc map[string]any) (apiv1.WorkflowSpec, error) {
	var spec apiv1.WorkflowSpec
	if doc == nil {
		return spec, fmt.Errorf("%s: empty", name)
	}
	if v, ok := doc["apiVersion"]; ok && v != APIVersion {
		return spec, fmt.Errorf("%s: apiVersion %v: want %s", name, v, APIVersion)
	}
	if v, ok := doc["kind"]; ok && v != WorkflowKind {
		return spec, fmt.Errorf("%s: kind %v: want %s", name, v, WorkflowKind)
	}
	delete(doc, "apiVersion")
	delete(doc, "kind")
	b, err := json.Marshal(doc)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("%s: %w", name, err)
	}
	if spec.Group == "" || spec.Name == "" {
		return spec, fmt.Errorf("%s: group and name are required", name)
	}
	if spec.ScheduleType == "" {
		spec.ScheduleType = "none"
	}
	return spec, nil
}
