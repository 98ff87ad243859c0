package main

import (
	"strings"
	"testing"
)

// A file holds a jobs document, then workflows: each is read strictly (an
// unknown field is named), and the jobs document keeps its line numbers.
func TestSplitWorkflows(t *testing.T) {
	data := `apiVersion: jetjob/v1
kind: Jobs
jobs: []
---
apiVersion: jetjob/v1
kind: Workflow
group: g
name: nightly
nodes:
  - {name: a, job: g/extract}
  - {name: b, job: g/load, params: '{"rows": {{ .nodes.a.output.rows }}}'}
edges:
  - {from: a, to: b}
`
	jobs, wfs, err := splitWorkflows("f.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(jobs), "apiVersion: jetjob/v1\nkind: Jobs") {
		t.Errorf("jobs document %q", jobs)
	}
	if len(wfs) != 1 || wfs[0].Name != "nightly" || len(wfs[0].Nodes) != 2 || wfs[0].Nodes[1].Job != "g/load" ||
		*wfs[0].Nodes[1].Params != `{"rows": {{ .nodes.a.output.rows }}}` || wfs[0].ScheduleType != "none" {
		t.Errorf("workflows %+v", wfs)
	}
	_, _, err = splitWorkflows("f.yaml", []byte("kind: Workflow\ngroup: g\nname: x\nnodez: []\n"))
	if err == nil || !strings.Contains(err.Error(), `unknown field "nodez"`) {
		t.Errorf("unknown field: %v", err)
	}
	jobs, wfs, err = splitWorkflows("f.yaml", []byte("kind: Workflow\ngroup: g\nname: x\nnodes: []\n"))
	if err != nil || jobs != nil || len(wfs) != 1 {
		t.Errorf("workflows only: %q %v %v", jobs, wfs, err)
	}
	// The jobs document after a workflow keeps its own lines.
	jobs, _, err = splitWorkflows("f.yaml", []byte("kind: Workflow\ngroup: g\nname: x\nnodes: []\n---\nkind: Jobs\n"))
	if err != nil || strings.Count(string(jobs), "\n") != 6 {
		t.Errorf("jobs document after a workflow: %q %v", jobs, err)
	}
}
