package wfengine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/workflow"
	"github.com/jetjob/jetjob/shared/wire"
)

// Spec is a workflow's graph as stored (workflows.spec, and a copy on each
// of its runs): nodes naming their jobs by id, and edges.
type Spec struct {
	Nodes []NodeSpec `json:"nodes"`
	Edges []EdgeSpec `json:"edges,omitempty"`
}

// NodeSpec is one node: the job it runs and how.
type NodeSpec struct {
	Name  string `json:"name"`
	JobID int64  `json:"job_id"`
	// Inline, when set, is the node's own job spec: JobID is then the
	// job row the store keeps for it (kind node, owned by the workflow),
	// 0 until the store wrote it.
	Inline *InlineJob `json:"inline,omitempty"`
	// Params is a template (workflow.RenderParams) rendered when the node
	// starts; nil runs the job with its own params.
	Params   *string `json:"params,omitempty"`
	Join     string  `json:"join,omitempty"`
	Disabled bool    `json:"disabled,omitempty"`
	// ForEach is "nodes.<node>.output[.<key>...]": one run per element.
	ForEach string `json:"for_each,omitempty"`
	// TimeoutMS and MaxRetries override the job's timeout and retries
	// for this node's runs (nil: the job's).
	TimeoutMS  *int64 `json:"timeout_ms,omitempty"`
	MaxRetries *int   `json:"max_retries,omitempty"`
}

// InlineJob is an inline node's job spec as stored: the fields of a job
// that make sense for a node, checked and completed with their defaults
// as a job's are when the workflow is written. Group "" is the
// workflow's group (and follows it when the workflow moves).
type InlineJob struct {
	Group          string   `json:"group,omitempty"`
	Handler        string   `json:"handler"`
	Description    string   `json:"description,omitempty"`
	Params         string   `json:"params,omitempty"`
	MisfirePolicy  string   `json:"misfire_policy,omitempty"`
	RouteStrategy  string   `json:"route_strategy,omitempty"`
	BlockStrategy  string   `json:"block_strategy,omitempty"`
	MaxConcurrency int      `json:"max_concurrency,omitempty"`
	Shards         int      `json:"shards,omitempty"` // the fixed shard count (0: none)
	TimeoutMS      int64    `json:"timeout_ms,omitempty"`
	MaxRetries     int      `json:"max_retries,omitempty"`
	RetryBackoff   string   `json:"retry_backoff,omitempty"`
	RetryInitialMS int64    `json:"retry_initial_ms,omitempty"`
	RetryMaxMS     int64    `json:"retry_max_ms,omitempty"`
	AlarmWebhook   string   `json:"alarm_webhook,omitempty"`
	AlarmEmails    []string `json:"alarm_emails,omitempty"`
	// The flow controls (docs/flow-control.md), rates as "COUNT/PERIOD".
	Priority       int    `json:"priority,omitempty"`
	ConcurrencyKey string `json:"concurrency_key,omitempty"`
	KeyCap         int    `json:"key_cap,omitempty"`
	RateLimit      string `json:"rate_limit,omitempty"`
	KeyRateLimit   string `json:"key_rate_limit,omitempty"`
}

// EdgeSpec is an edge From → To, taken when From settles as On says.
type EdgeSpec struct {
	From string `json:"from"`
	To   string `json:"to"`
	On   string `json:"on,omitempty"`
}

// Bounds of a node's overrides: a job's.
const (
	maxNodeTimeoutMS = 7 * 24 * 3600 * 1000
	maxNodeRetries   = 100
)

// Overlap policies: what a workflow's fire does while another of its runs
// is active.
const (
	OverlapSerial       = "serial"        // waits (QUEUED) for the runs before it
	OverlapDiscardLater = "discard_later" // ends DISCARDED
	OverlapCoverEarly   = "cover_early"   // cancels the runs before it
	OverlapBufferOne    = "buffer_one"    // one waits (QUEUED) behind the active run; further fires end DISCARDED
	OverlapConcurrent   = "concurrent"    // runs alongside, up to max_concurrent (0: no cap)
)

// Overlaps lists the overlap policies.
var Overlaps = []string{OverlapSerial, OverlapDiscardLater, OverlapCoverEarly, OverlapBufferOne, OverlapConcurrent}

// Policy is how a workflow's runs relate to each other and how long one
// may take.
type Policy struct {
	Overlap       string
	MaxConcurrent int
	Timeout       time.Duration
}

// Validate checks the policy, naming the wrong field.
func (p Policy) Validate() error {
	var errs []error
	switch p.Overlap {
	case OverlapSerial, OverlapDiscardLater, OverlapCoverEarly, OverlapBufferOne, OverlapConcurrent:
	default:
		errs = append(errs, fmt.Errorf("overlap %q: want one of %s", p.Overlap, strings.Join(Overlaps, ", ")))
	}
	if p.MaxConcurrent < 0 || p.MaxConcurrent > 10000 {
		errs = append(errs, fmt.Errorf("max_concurrent %d: want 0 (no cap) to 10000", p.MaxConcurrent))
	}
	if p.MaxConcurrent > 0 && p.Overlap != OverlapConcurrent {
		errs = append(errs, fmt.Errorf("max_concurrent is for overlap concurrent, not %s", p.Overlap))
	}
	if p.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must not be negative", p.Timeout))
	}
	return errors.Join(errs...)
}

// Graph is s as package workflow sees it.
func (s *Spec) Graph() *workflow.Graph {
	g := &workflow.Graph{Nodes: make([]workflow.Node, len(s.Nodes)), Edges: make([]workflow.Edge, len(s.Edges))}
	for i, n := range s.Nodes {
		g.Nodes[i] = workflow.Node{Name: n.Name, Join: workflow.Join(n.Join), Disabled: n.Disabled, ForEach: n.ForEach}
	}
	for i, e := range s.Edges {
		g.Edges[i] = workflow.Edge{From: e.From, To: e.To, On: workflow.Condition(e.On)}
	}
	return g
}

// Node returns the node named name.
func (s *Spec) Node(name string) *NodeSpec {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// Validate checks s whole: the graph (workflow.Graph.Validate names every
// problem), each node's job and params template. Every problem is named;
// the error wraps workflow.ErrInvalid.
func (s *Spec) Validate() error {
	g := s.Graph()
	if err := g.Validate(); err != nil {
		return err
	}
	var problems []string
	for _, n := range s.Nodes {
		switch {
		case n.Inline != nil && n.Inline.Handler == "":
			problems = append(problems, fmt.Sprintf("node %q: its inline job has no handler", n.Name))
		case n.Inline == nil && n.JobID <= 0:
			problems = append(problems, fmt.Sprintf("node %q: names no job", n.Name))
		}
		if n.TimeoutMS != nil && (*n.TimeoutMS < 0 || *n.TimeoutMS > maxNodeTimeoutMS) {
			problems = append(problems, fmt.Sprintf("node %q: timeout %dms: want 0 (none) up to 168h", n.Name, *n.TimeoutMS))
		}
		if n.MaxRetries != nil && (*n.MaxRetries < 0 || *n.MaxRetries > maxNodeRetries) {
			problems = append(problems, fmt.Sprintf("node %q: max_retries %d: want 0 to %d", n.Name, *n.MaxRetries, maxNodeRetries))
		}
		if n.Params == nil {
			continue
		}
		if len(*n.Params) > wire.MaxParamsBytes {
			problems = append(problems, fmt.Sprintf("node %q: params are %d bytes, at most %d", n.Name, len(*n.Params), wire.MaxParamsBytes))
			continue
		}
		if err := workflow.CheckParams(g, n.Name, *n.Params); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", workflow.ErrInvalid, strings.Join(problems, "; "))
	}
	return nil
}

// JobIDs returns the jobs s's nodes run, each once, in node order: the
// jobs they name and the rows of their inline jobs.
func (s *Spec) JobIDs() []int64 { return s.jobIDs(true) }

// RefJobIDs returns the jobs s's nodes name (not their inline jobs), each
// once, in node order: the references a write of s is checked for.
func (s *Spec) RefJobIDs() []int64 { return s.jobIDs(false) }

func (s *Spec) jobIDs(inline bool) []int64 {
	var ids []int64
	seen := map[int64]bool{}
	for _, n := range s.Nodes {
		if n.JobID == 0 || (n.Inline != nil && !inline) {
			continue
		}
		if !seen[n.JobID] {
			seen[n.JobID] = true
			ids = append(ids, n.JobID)
		}
	}
	return ids
}

// Clone is a copy of s whose nodes and edges can be changed without
// changing s's (inline jobs are shared: they are not changed).
func (s Spec) Clone() Spec {
	return Spec{Nodes: slices.Clone(s.Nodes), Edges: slices.Clone(s.Edges)}
}

// Marshal is s as stored.
func (s *Spec) Marshal() ([]byte, error) { return json.Marshal(s) }

// templated reports whether one of nodes renders from its upstream nodes'
// outputs (a params template, a for_each list): only then does starting
// them read outputs.
func (s *Spec) templated(nodes []string) bool {
	for _, name := range nodes {
		if n := s.Node(name); n != nil && (n.Params != nil || n.ForEach != "") {
			return true
		}
	}
	return false
}
