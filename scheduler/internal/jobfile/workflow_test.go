package jobfile

import (
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/scheduler/apiv1"
)

const inlineDoc1 = `apiVersion: jetjob/v1
kind: Workflow
group: billing
name: nightly
schedule_type: none
exclude_calendars:
  - cn-holidays
include_calendars:
  - cn-workdays
labels:
  team: billing
owner: ana@example.com
nodes:
  - name: extract
    inline:
      handler: shell
      params: '{"cmd": "extract"}'
      block_strategy: discard_later
      timeout: 10m0s
      max_retries: 2
      priority: 5
      concurrency_key: params.cmd
      key_cap: 1
      rate_limit: 10/1m
      key_rate_limit: 2/1s
  - name: load
    job: billing/load
    params: '{"rows": {{ .nodes.extract.output.rows }}}'
  - name: page
    inline:
      group: ops
      handler: pager
      route_strategy: round
edges:
  - from: extract
    to: load
  - from: load
    to: page
    "on": failure
`

// A node with a job of its own reads into the API's inline spec, and a
// workflow as the API answers it (its defaults filled in) writes back the
// same document: what export writes, apply reads unchanged.
func TestWorkflowInlineRoundTrip(t *testing.T) {
	spec, err := ParseWorkflow("nightly.yaml", []byte(inlineDoc1))
	if err != nil {
		t.Fatal(err)
	}
	ex := spec.Nodes[0].Inline
	if ex == nil || ex.Handler != "shell" || time.Duration(ex.Timeout) != 10*time.Minute || ex.MaxRetries != 2 ||
		ex.BlockStrategy != "discard_later" || spec.Nodes[0].Job != "" ||
		ex.Priority != 5 || ex.ConcurrencyKey != "params.cmd" || ex.KeyCap != 1 || ex.RateLimit != "10/1m" || ex.KeyRateLimit != "2/1s" {
		t.Fatalf("extract reads %+v (job %q), want its inline spec", ex, spec.Nodes[0].Job)
	}
	if spec.Labels["team"] != "billing" || spec.Owner != "ana@example.com" || len(spec.ExcludeCalendars) != 1 || len(spec.IncludeCalendars) != 1 {
		t.Errorf("labels %v owner %q calendars %v/%v, want the file's", spec.Labels, spec.Owner, spec.ExcludeCalendars, spec.IncludeCalendars)
	}
	if spec.Nodes[1].Job != "billing/load" || spec.Nodes[1].Inline != nil {
		t.Errorf("load reads job %q inline %v, want the reference", spec.Nodes[1].Job, spec.Nodes[1].Inline)
	}
	if pg := spec.Nodes[2].Inline; pg == nil || pg.Group != "ops" || pg.RouteStrategy != "round" {
		t.Errorf("page reads %+v, want group ops, route round", pg)
	}
	// As stored: the defaults a job gets filled in.
	stored := apiv1.Workflow{WorkflowSpec: spec, Enabled: true}
	stored.Timezone, stored.Overlap = "UTC", "serial"
	for _, n := range stored.Nodes {
		if in := n.Inline; in != nil {
			in.MisfirePolicy, in.RetryBackoff = string(policy.DefaultMisfire), policy.DefaultRetryBackoff
			in.RetryInitial, in.RetryMax = apiv1.Duration(policy.DefaultRetryInitial), apiv1.Duration(policy.DefaultRetryMax)
			if in.RouteStrategy == "" {
				in.RouteStrategy = string(policy.DefaultRoute)
			}
			if in.BlockStrategy == "" {
				in.BlockStrategy = string(policy.DefaultBlock)
			}
		}
	}
	out, err := EncodeWorkflow(&stored)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != inlineDoc1 {
		t.Errorf("written back:\n%s\nwant:\n%s", out, inlineDoc1)
	}
}

// A field an inline job does not have is named, as any unknown field.
func TestWorkflowInlineUnknownField(t *testing.T) {
	doc := strings.Replace(inlineDoc1, "      max_retries: 2\n", "      max_retries: 2\n      schedule_expr: '@every 1s'\n", 1)
	_, err := ParseWorkflow("nightly.yaml", []byte(doc))
	if err == nil || !strings.Contains(err.Error(), `unknown field "schedule_expr"`) {
		t.Errorf("an inline job with a schedule: %v, want the unknown field named", err)
	}
}
