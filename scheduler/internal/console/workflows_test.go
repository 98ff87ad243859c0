package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// wfYAML is a workflow document of group a over jobs x and y.
func wfYAML(name, x, y, extra string) string {
	return fmt.Sprintf(`apiVersion: jetjob/v1
kind: Workflow
group: a
name: %s
nodes:
  - {name: extract, job: a/%s}
  - {name: load, job: a/%s}
  - {name: alert, job: a/%s}
edges:
  - {from: extract, to: load}
  - {from: load, to: alert, on: failure}
%s`, name, x, y, y, extra)
}

// The editor checks a document with the engine's validation (a cycle is
// named, an unknown node too) without saving it, draws its graph, and
// saves it through the API (a job that does not exist is the API's
// refusal); the workflow's page shows the graph, settings and YAML; a
// viewer of another group sees neither the workflow nor its run.
func TestWorkflowEditorAndPages(t *testing.T) {
	e := newEnv(t)
	x, y := e.job("a", "noop"), e.job("a", "noop")
	op := e.browser().login("operator")
	op.open("/workflows/new")

	cyc := wfYAML("wf", x.Name, y.Name, "  - {from: alert, to: extract}\n  - {from: load, to: ghost}\n")
	p := op.post("/workflows", url.Values{"yaml": {cyc}, "op": {"save"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("a document with an unknown node answered %d", p.Code)
	}
	mustContain(t, p, `id="wf-problems"`, "no node &#34;ghost&#34;")
	p = op.post("/workflows", url.Values{"yaml": {wfYAML("wf", x.Name, y.Name, "  - {from: alert, to: extract}\n")}, "op": {"check"}})
	mustContain(t, p, "cycle: ", "extract → load → alert → extract", `data-node="alert"`)
	p = op.post("/workflows", url.Values{"yaml": {"kind: Workflow\ngroup: a\nname: x\nnodez: []\n"}, "op": {"check"}})
	mustContain(t, p, "unknown field &#34;nodez&#34;")
	p = op.post("/workflows", url.Values{"yaml": {wfYAML("wf", x.Name, "missing-job", "")}, "op": {"save"}})
	mustContain(t, p, `id="wf-problems"`, "missing-job")
	if ws, err := e.st.ListWorkflows(context.Background(), "", nil, 0, 10); err != nil || len(ws) != 0 {
		t.Fatalf("refused documents created workflows: %v %v", ws, err)
	}

	good := wfYAML("wf", x.Name, y.Name, "")
	p = op.post("/workflows", url.Values{"yaml": {good}, "op": {"check"}})
	mustContain(t, p, `id="wf-ok"`, `data-edge="load→alert"`, ">failure</text>")
	p = op.post("/workflows", url.Values{"yaml": {good}, "op": {"save"}})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/workflows/") {
		t.Fatalf("save: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	wfPage := strings.Split(p.Location, "?")[0]
	p = op.open(wfPage)
	mustContain(t, p, `id="workflow-title"`, `id="wf-graph"`, `data-node="extract"`, "never run", "job: a/"+x.Name, `id="workflow-trigger"`)
	op.open(wfPage + "/edit")
	list := op.open("/workflows")
	mustContain(t, list, `id="workflows-table"`, ">wf</a>", "never run", `<form class="toolbar" method="get" action="/workflows" id="workflows-filter">`)

	// Triggered: the run's page exists before the engine starts it.
	p = op.post(wfPage+"/trigger", url.Values{})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/workflow-runs/") {
		t.Fatalf("trigger: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	runPage := strings.Split(p.Location, "?")[0]
	p = op.open(runPage)
	mustContain(t, p, `id="wfrun-summary" data-active="true"`, `id="wfrun-starting"`, `data-node="load"`)

	// Another group's viewer: not found, and no row in the list.
	vb := e.browser().login("viewerB")
	for _, path := range []string{wfPage, runPage, wfPage + "/edit"} {
		if p := vb.get(path); p.Code != http.StatusNotFound {
			t.Errorf("viewerB GET %s: %d, want 404", path, p.Code)
		}
	}
	mustLack(t, vb.open("/workflows"), ">wf</a>")
	// A viewer of the group reads it but sees no controls, and a forged
	// trigger is refused.
	v := e.browser().login("viewer")
	mustLack(t, v.open(wfPage), `id="workflow-actions"`, `id="workflow-trigger"`)
	if p := v.post(wfPage+"/trigger", url.Values{}); p.Code != http.StatusForbidden {
		t.Errorf("a viewer's trigger answered %d, want 403", p.Code)
	}
}

// The editor takes a node with a job of its own (inline): checked and
// drawn like any node, saved through the API, shown as an inline job on
// the workflow's page and in its YAML; a node naming a job and carrying
// one too is the API's refusal, shown with the others.
func TestWorkflowEditorInline(t *testing.T) {
	e := newEnv(t)
	x := e.job("a", "noop")
	op := e.browser().login("operator")
	doc := func(extra string) string {
		return fmt.Sprintf(`apiVersion: jetjob/v1
kind: Workflow
group: a
name: inl
nodes:
  - name: extract
    inline: {handler: noop, timeout: 1m%s}
  - {name: load, job: a/%s}
edges:
  - {from: extract, to: load}
`, extra, x.Name)
	}
	p := op.post("/workflows", url.Values{"yaml": {doc("")}, "op": {"check"}})
	mustContain(t, p, `id="wf-ok"`, `data-node="extract"`, `data-edge="extract→load"`)
	p = op.post("/workflows", url.Values{"yaml": {strings.Replace(doc(""), "  - name: extract\n", "  - name: extract\n    job: a/"+x.Name+"\n", 1)}, "op": {"save"}})
	mustContain(t, p, `id="wf-problems"`, "not both")
	p = op.post("/workflows", url.Values{"yaml": {doc(", block_strategy: sometimes")}, "op": {"save"}})
	mustContain(t, p, `id="wf-problems"`, "node &#34;extract&#34;: inline job: ")
	p = op.post("/workflows", url.Values{"yaml": {doc("")}, "op": {"save"}})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/workflows/") {
		t.Fatalf("save: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	p = op.open(strings.Split(p.Location, "?")[0])
	mustContain(t, p, `data-node="extract"`, "inline job, handler noop", "inline:", "handler: noop", "timeout: 1m0s", "job: a/"+x.Name)
}
