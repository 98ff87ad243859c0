package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// consoleWorkflowYAML is the browser test's workflow: extract fans out to
// load and audit, report joins them, cleanup runs after report whatever
// happens to it.
const consoleWorkflowYAML = `apiVersion: jetjob/v1
kind: Workflow
group: g
name: nightly-billing
schedule_type: none
nodes:
  - {name: extract, job: g/wf-extract}
  - {name: load, job: g/wf-load}
  - {name: audit, job: g/wf-audit}
  - {name: report, job: g/wf-report}
  - {name: cleanup, job: g/wf-cleanup}
edges:
  - {from: extract, to: load}
  - {from: extract, to: audit}
  - {from: load, to: report}
  - {from: audit, to: report}
  - {from: report, to: cleanup, on: always}
`

// allNodes is a JavaScript condition: every node of the page's graph has
// status want.
func allNodes(want string) string {
	return `(() => { const ns = [...document.querySelectorAll("#wf-graph g.wf-node")];
		return ns.length === 5 && ns.every(n => n.dataset.status === ` + jsString(want) + `); })()`
}

func nodeStatus(b *tab, node string) string {
	return evalIn[string](b, `(() => { const n = document.querySelector('#wf-graph g.wf-node[data-node="`+node+`"]'); return n ? n.dataset.status : "none"; })()`)
}

// A workflow's life in the console: written as YAML in the editor (a
// cycle is named and nothing is saved), created, triggered; its run page
// follows the run without a reload, shows the node whose job failed the
// first time, and after "Retry from failed" turns every node green.
func TestConsoleWorkflow(t *testing.T) {
	var loadFails atomic.Int32
	loadFails.Store(1)
	held := make(chan struct{}) // report waits until the page was read
	sys := startSystem(t, func(w *worker.Worker) {
		registerConsoleHandlers(w, nil)
		w.Handle("wf-flaky", func(context.Context, *worker.Job) error {
			if loadFails.Add(-1) >= 0 {
				return errors.New("warehouse locked: try again")
			}
			return nil
		})
		w.Handle("wf-gate", heldUntil(held))
	})
	consoleUsers(t, sys)
	for name, handler := range map[string]string{"wf-extract": "noop", "wf-load": "wf-flaky", "wf-audit": "noop",
		"wf-report": "wf-gate", "wf-cleanup": "noop"} {
		createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: name, Handler: handler, ScheduleType: "none", BlockStrategy: "concurrent"})
	}
	b := signedInTab(t, sys, "/workflows", "ada")
	b.do("open the editor", chromedp.Click(chromedp.ID("new-workflow")), chromedp.WaitVisible(chromedp.ID("wf-yaml")))

	// A cycle: the check names it and draws the graph; nothing is saved.
	cyclic := consoleWorkflowYAML + "  - {from: cleanup, to: extract}\n"
	b.do("check a cyclic workflow", chromedp.SetValue(chromedp.ID("wf-yaml"), cyclic), chromedp.Click(chromedp.ID("wf-save")),
		chromedp.WaitVisible(chromedp.ID("wf-problems")))
	if p := b.text("#wf-problems"); !strings.Contains(p, "cycle: ") || !strings.Contains(p, "cleanup → extract") {
		t.Fatalf("the editor's problems %q do not name the cycle", p)
	}
	if list, err := sys.api.ListWorkflows(t.Context(), "", 0, 10); err != nil || len(list.Workflows) != 0 {
		t.Fatalf("a cyclic workflow was saved: %+v %v", list, err)
	}

	b.do("check the workflow", chromedp.SetValue(chromedp.ID("wf-yaml"), consoleWorkflowYAML), chromedp.Click(chromedp.ID("wf-check")),
		chromedp.WaitVisible(chromedp.ID("wf-ok")))
	if n := evalIn[int](b, `document.querySelectorAll("#wf-preview g.wf-node").length`); n != 5 {
		t.Fatalf("the preview draws %d nodes, want 5", n)
	}
	b.do("create the workflow", chromedp.Click(chromedp.ID("wf-save")), chromedp.WaitVisible(chromedp.ID("workflow-title")))
	wfPath := strings.TrimPrefix(strings.Split(b.location(), "?")[0], sys.url)

	b.do("trigger it", chromedp.Click(chromedp.CSS("#workflow-trigger-box summary")), chromedp.Click(chromedp.ID("wf-trigger-submit")),
		chromedp.WaitVisible(chromedp.ID("wfrun-summary")))
	runPath := strings.TrimPrefix(strings.Split(b.location(), "?")[0], sys.url)
	if !strings.HasPrefix(runPath, "/workflow-runs/") {
		t.Fatalf("after triggering, the browser is at %s", runPath)
	}
	// The page follows the run: load fails, report is skipped, the run
	// ends FAILED — without a reload.
	evalIn[bool](b, "(window.__noReload = true, true)")
	b.waitText("#wfrun-status", "FAILED", 60*time.Second)
	if got := nodeStatus(b, "load"); got != "FAILED" {
		t.Fatalf("node load shows %s, want FAILED", got)
	}
	if got := nodeStatus(b, "report"); got != "SKIPPED" {
		t.Fatalf("node report shows %s, want SKIPPED", got)
	}
	if !evalIn[bool](b, "window.__noReload === true") {
		t.Fatal("the run page reloaded: it did not follow the run live")
	}
	if msg := b.text("#wfnode-load"); !strings.Contains(msg, "warehouse locked") {
		t.Errorf("node load's row %q lacks its run's message", msg)
	}
	if href := evalIn[string](b, `document.getElementById("nodelog-load").getAttribute("href")`); !strings.HasSuffix(href, "#run-log") {
		t.Errorf("node load's log link %q", href)
	}

	// Retry from failed: load runs again, report waits on the gate until
	// the page has shown it running; then every node turns green live.
	// The page already shows the trigger's notice: wait for the retry's,
	// so that the marker below is set on the page the retry opened.
	b.do("retry from failed", chromedp.Click(chromedp.ID("retry-submit")))
	b.waitText(".flash", "Retrying", 30*time.Second)
	evalIn[bool](b, "(window.__noReload = true, true)")
	b.waitFor("report running", `(() => { const n = document.querySelector('#wf-graph g.wf-node[data-node="report"]'); return n && n.dataset.status === "RUNNING"; })()`, 60*time.Second)
	close(held)
	b.waitFor("every node green", allNodes("SUCCEEDED"), 60*time.Second)
	b.waitText("#wfrun-status", "SUCCEEDED", 30*time.Second)
	if !evalIn[bool](b, "window.__noReload === true") {
		t.Fatal("the run page reloaded after the retry: it did not follow the run live")
	}
	if n := evalIn[int](b, `document.querySelectorAll("#retry-form, #cancel-form").length`); n != 0 {
		t.Errorf("a succeeded run still shows %d run operations", n)
	}

	// The workflow's page colours its graph by that run.
	b.open(wfPath)
	b.waitFor("the workflow page's graph green", allNodes("SUCCEEDED"), 30*time.Second)

	// A viewer of the group sees the run and no operation.
	v := newTab(t, sys.url)
	v.signIn(runPath, "vic")
	if got := v.text("#wfrun-status"); got != "SUCCEEDED" {
		t.Fatalf("the viewer's run page shows %q", got)
	}
	if n := evalIn[int](v, `document.querySelectorAll("#wfrun-summary form").length`); n != 0 {
		t.Fatalf("a viewer sees %d operation forms", n)
	}

	if dir := os.Getenv("JETJOB_CONSOLE_SCREENSHOTS"); dir != "" {
		workflowScreenshots(t, b, dir, wfPath, runPath)
	}
}

// workflowScreenshots saves docs/img's pictures of the workflow pages (make
// console-screenshots), at a laptop's width and a phone's.
func workflowScreenshots(t *testing.T, b *tab, dir, wfPath, runPath string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
	}{{"", 1280, 900}, {"-375", 375, 812}} {
		b.do(fmt.Sprintf("a %d px viewport", size.w), chromedp.EmulateViewport(size.w, size.h))
		for _, shot := range []struct{ name, path string }{
			{"console-workflow", wfPath},
			{"console-workflow-run", runPath},
		} {
			b.open(shot.path)
			if w := evalIn[int](b, "document.documentElement.scrollWidth"); w > int(size.w) {
				t.Errorf("%s is %d px wide on a %d px screen", shot.path, w, size.w)
			}
			file := filepath.Join(dir, shot.name+size.suffix+".png")
			b.screenshot(file)
			t.Logf("screenshot %s", file)
		}
	}
}
