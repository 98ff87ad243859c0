package jobfile

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// WorkflowYAML is a workflow as a file holds it, in the order it is
// written: fields at their default are left out.
type WorkflowYAML struct {
	APIVersion       string             `yaml:"apiVersion"`
	Kind             string             `yaml:"kind"`
	Group            string             `yaml:"group"`
	Name             string             `yaml:"name"`
	Description      string             `yaml:"description,omitempty"`
	Params           string             `yaml:"params,omitempty"`
	ScheduleType     string             `yaml:"schedule_type"`
	ScheduleExpr     string             `yaml:"schedule_expr,omitempty"`
	Timezone         string             `yaml:"timezone,omitempty"`
	MisfirePolicy    string             `yaml:"misfire_policy,omitempty"`
	MisfireThreshold string             `yaml:"misfire_threshold,omitempty"`
	MaxCatchup       int                `yaml:"max_catchup,omitempty"`
	Jitter           string             `yaml:"jitter,omitempty"`
	StartAt          *time.Time         `yaml:"start_at,omitempty"`
	EndAt            *time.Time         `yaml:"end_at,omitempty"`
	Enabled          *bool              `yaml:"enabled,omitempty"`
	ExcludeCalendars []string           `yaml:"exclude_calendars,omitempty"`
	IncludeCalendars []string           `yaml:"include_calendars,omitempty"`
	Labels           map[string]string  `yaml:"labels,omitempty"`
	Owner            string             `yaml:"owner,omitempty"`
	Overlap          string             `yaml:"overlap,omitempty"`
	MaxConcurrent    int                `yaml:"max_concurrent,omitempty"`
	Timeout          string             `yaml:"timeout,omitempty"`
	Nodes            []WorkflowNodeYAML `yaml:"nodes"`
	Edges            []WorkflowEdgeYAML `yaml:"edges,omitempty"`
}

// WorkflowNodeYAML is a node as a file holds it: naming its job (job:
// group/name) or with a job of its own (inline:).
type WorkflowNodeYAML struct {
	Name       string              `yaml:"name"`
	Job        string              `yaml:"job,omitempty"`
	Inline     *WorkflowInlineYAML `yaml:"inline,omitempty"`
	Params     *string             `yaml:"params,omitempty"`
	Join       string              `yaml:"join,omitempty"`
	Disabled   bool                `yaml:"disabled,omitempty"`
	ForEach    string              `yaml:"for_each,omitempty"`
	Timeout    string              `yaml:"timeout,omitempty"`
	MaxRetries *int                `yaml:"max_retries,omitempty"`
}

// WorkflowInlineYAML is an inline node's job as a file holds it: a job's
// fields (apiv1.InlineJob), those at their default left out as a job
// file leaves them out (Minimize).
type WorkflowInlineYAML struct {
	Group          string        `yaml:"group,omitempty"`
	Handler        string        `yaml:"handler"`
	Description    string        `yaml:"description,omitempty"`
	Params         string        `yaml:"params,omitempty"`
	MisfirePolicy  string        `yaml:"misfire_policy,omitempty"`
	RouteStrategy  string        `yaml:"route_strategy,omitempty"`
	BlockStrategy  string        `yaml:"block_strategy,omitempty"`
	MaxConcurrency int           `yaml:"max_concurrency,omitempty"`
	Sharding       *shardingYAML `yaml:"sharding,omitempty"`
	Timeout        string        `yaml:"timeout,omitempty"`
	MaxRetries     int           `yaml:"max_retries,omitempty"`
	RetryBackoff   string        `yaml:"retry_backoff,omitempty"`
	RetryInitial   string        `yaml:"retry_initial,omitempty"`
	RetryMax       string        `yaml:"retry_max,omitempty"`
	AlarmWebhook   string        `yaml:"alarm_webhook,omitempty"`
	AlarmEmails    []string      `yaml:"alarm_emails,omitempty"`
	Priority       int           `yaml:"priority,omitempty"`
	ConcurrencyKey string        `yaml:"concurrency_key,omitempty"`
	KeyCap         int           `yaml:"key_cap,omitempty"`
	RateLimit      string        `yaml:"rate_limit,omitempty"`
	KeyRateLimit   string        `yaml:"key_rate_limit,omitempty"`
}

// shardingYAML is a fixed shard count as a file holds it: sharding: {total: N}.
type shardingYAML struct {
	Total int `yaml:"total"`
}

// inlineDoc is in as a file writes it, its defaults left out.
func inlineDoc(in *apiv1.InlineJob) *WorkflowInlineYAML {
	m := Minimize(apiv1.JobSpec{Handler: in.Handler, Description: in.Description, Params: in.Params,
		ScheduleType: "none", MisfirePolicy: in.MisfirePolicy, RouteStrategy: in.RouteStrategy,
		BlockStrategy: in.BlockStrategy, MaxConcurrency: in.MaxConcurrency, Sharding: in.Sharding, Timeout: in.Timeout, MaxRetries: in.MaxRetries,
		RetryBackoff: in.RetryBackoff, RetryInitial: in.RetryInitial, RetryMax: in.RetryMax,
		AlarmWebhook: in.AlarmWebhook, AlarmEmails: in.AlarmEmails,
		Priority: in.Priority, ConcurrencyKey: in.ConcurrencyKey, KeyCap: in.KeyCap, RateLimit: in.RateLimit, KeyRateLimit: in.KeyRateLimit})
	var sharding *shardingYAML
	if m.Sharding != nil {
		sharding = &shardingYAML{Total: m.Sharding.Total}
	}
	return &WorkflowInlineYAML{Group: in.Group, Sharding: sharding, Handler: m.Handler, Description: m.Description, Params: m.Params,
		MisfirePolicy: m.MisfirePolicy, RouteStrategy: m.RouteStrategy, BlockStrategy: m.BlockStrategy,
		MaxConcurrency: m.MaxConcurrency, Timeout: optDur(m.Timeout), MaxRetries: m.MaxRetries,
		RetryBackoff: m.RetryBackoff, RetryInitial: optDur(m.RetryInitial), RetryMax: optDur(m.RetryMax),
		AlarmWebhook: m.AlarmWebhook, AlarmEmails: m.AlarmEmails,
		Priority: m.Priority, ConcurrencyKey: m.ConcurrencyKey, KeyCap: m.KeyCap, RateLimit: m.RateLimit, KeyRateLimit: m.KeyRateLimit}
}

// WorkflowEdgeYAML is an edge as a file holds it.
type WorkflowEdgeYAML struct {
	From string `yaml:"from"`
	To   string `yaml:"to"`
	On   string `yaml:"on,omitempty"`
}

func optDur(d apiv1.Duration) string {
	if d == 0 {
		return ""
	}
	return time.Duration(d).String()
}

// WorkflowDoc is wf as a file writes it: what a user writes, the defaults
// left out.
func WorkflowDoc(wf *apiv1.Workflow) WorkflowYAML {
	d := WorkflowYAML{APIVersion: APIVersion, Kind: WorkflowKind, Group: wf.Group, Name: wf.Name,
		Description: wf.Description, Params: wf.Params, ScheduleType: wf.ScheduleType, ScheduleExpr: wf.ScheduleExpr,
		MisfirePolicy: wf.MisfirePolicy, MisfireThreshold: optDur(wf.MisfireThreshold), MaxCatchup: wf.MaxCatchup,
		Jitter: optDur(wf.Jitter), StartAt: wf.StartAt, EndAt: wf.EndAt, MaxConcurrent: wf.MaxConcurrent,
		Timeout: optDur(wf.Timeout), ExcludeCalendars: wf.ExcludeCalendars, IncludeCalendars: wf.IncludeCalendars,
		Labels: wf.Labels, Owner: wf.Owner}
	if wf.Timezone != "UTC" {
		d.Timezone = wf.Timezone
	}
	if wf.Overlap != "serial" {
		d.Overlap = wf.Overlap
	}
	if !wf.Enabled {
		off := false
		d.Enabled = &off
	}
	for _, n := range wf.Nodes {
		nd := WorkflowNodeYAML{Name: n.Name, Job: n.Job, Params: n.Params, Join: n.Join, Disabled: n.Disabled, ForEach: n.ForEach,
			MaxRetries: n.MaxRetries}
		if n.Timeout != nil {
			nd.Timeout = time.Duration(*n.Timeout).String()
		}
		if n.Inline != nil {
			nd.Inline = inlineDoc(n.Inline)
			if nd.Inline.Group == wf.Group {
				nd.Inline.Group = "" // the workflow's, as the API stores it
			}
		}
		d.Nodes = append(d.Nodes, nd)
	}
	for _, e := range wf.Edges {
		d.Edges = append(d.Edges, WorkflowEdgeYAML(e))
	}
	return d
}

// EncodeWorkflow is wf's document as YAML (without a leading "---").
func EncodeWorkflow(wf *apiv1.Workflow) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(WorkflowDoc(wf)); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", wf.Group, wf.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("workflow %s/%s: %w", wf.Group, wf.Name, err)
	}
	return b.Bytes(), nil
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
