package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// Tests of references between jobs (child_job_ids): who may make them,
// what a refusal says, and how far one fire may reach through them
// (issue #26, findings 1 and 12).

// withChildren is spec with child_job_ids set.
func withChildren(spec apiv1.JobSpec, ids ...int64) apiv1.JobSpec {
	spec.ChildJobIDs = ids
	return spec
}

// decodeJob reads a job document from an answer.
func decodeJob(t *testing.T, body []byte) apiv1.Job {
	t.Helper()
	var j apiv1.Job
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatalf("decode job: %v: %s", err, body)
	}
	return j
}

// sameAnswer reports whether two refusals say the same once the id each
// named is blanked out: a foreign id must be indistinguishable from a
// missing one.
func sameAnswer(a []byte, idA int64, b []byte, idB int64) bool {
	blank := func(s []byte, id int64) string {
		return strings.ReplaceAll(string(s), strconv.FormatInt(id, 10), "<id>")
	}
	return blank(a, idA) == blank(b, idB)
}

// An operator may name as a child only a job they could trigger
// themselves: one of a group they operate, and, when its handler runs
// commands, only with the scripts permission. Anything else is answered
// exactly like an id that does not exist, on create and on update, so that
// children can neither reach into another group nor probe its ids.
func TestChildLinksNeedTrigger(t *testing.T) {
	e := newEnv(t)
	foreign := e.job("b", "echo")    // another group's job
	script := e.job("a", "deploy")   // group a's own command handler
	const missing = int64(987654321) // no such job
	refused := func(who string, spec apiv1.JobSpec, method, path string) []byte {
		t.Helper()
		code, body := e.do(who, method, path, spec)
		if code != http.StatusBadRequest {
			t.Fatalf("%s %s %s with children %v: %d %s, want 400", who, method, path, spec.ChildJobIDs, code, body)
		}
		return body
	}

	// Create: the reference is refused, worded as for a missing job.
	missingBody := refused("opNoScripts", withChildren(jobSpec("a", "echo", "probe"), missing), "POST", "/api/v1/jobs")
	for _, c := range []struct {
		who    string
		target int64
		why    string
	}{
		{"opNoScripts", foreign.ID, "a job of a group the caller does not operate"},
		{"opNoScripts", e.shell.ID, "a shell job, without scripts"},
		{"opNoScripts", script.ID, "a job of the group's command handler, without scripts"},
		{"operator", foreign.ID, "a job of a group the caller does not operate, even with scripts on its own"},
		{"viewerB", e.plain.ID, "(viewer of b) cannot create in a anyway, checked by its rule first"},
	} {
		spec := withChildren(jobSpec("a", "echo", fmt.Sprint("probe", e.next())), c.target)
		code, body := e.do(c.who, "POST", "/api/v1/jobs", spec)
		if c.who == "viewerB" {
			if code != http.StatusForbidden {
				t.Errorf("%s: %d %s, want 403", c.why, code, body)
			}
			continue
		}
		if code != http.StatusBadRequest {
			t.Errorf("%s: %s naming job %d as a child: %d %s, want 400", c.why, c.who, c.target, code, body)
			continue
		}
		if !sameAnswer(body, c.target, missingBody, missing) {
			t.Errorf("%s: the refusal %s differs from a missing job's %s", c.why, body, missingBody)
		}
	}

	// Allowed: what the caller could trigger itself.
	for _, c := range []struct {
		who    string
		target int64
	}{
		{"opNoScripts", e.plain.ID},
		{"operator", e.shell.ID},
		{"operator", script.ID},
		{"admin", foreign.ID},
	} {
		spec := withChildren(jobSpec("a", "echo", fmt.Sprint("ok", e.next())), c.target)
		if code, body := e.do(c.who, "POST", "/api/v1/jobs", spec); code != http.StatusCreated {
			t.Errorf("%s naming job %d as a child: %d %s, want 201", c.who, c.target, code, body)
		}
	}

	// Update: adding a reference is checked the same way.
	own := e.job("a", "echo")
	spec := withChildren(jobSpec("a", "echo", own.Name), foreign.ID)
	spec.Version = own.Version
	body := refused("opNoScripts", spec, "PUT", fmt.Sprintf("/api/v1/jobs/%d", own.ID))
	spec.ChildJobIDs = []int64{missing}
	if other := refused("opNoScripts", spec, "PUT", fmt.Sprintf("/api/v1/jobs/%d", own.ID)); !sameAnswer(body, foreign.ID, other, missing) {
		t.Errorf("update: a foreign child answers %s, a missing one %s", body, other)
	}

	// The probe of the issue: nothing the operator made can start the
	// other group's job.
	code, list := e.do("admin", "GET", "/api/v1/jobs?group=a&limit=1000", nil)
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, list)
	}
	var jobs apiv1.JobList
	if err := json.Unmarshal(list, &jobs); err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Jobs {
		for _, c := range j.ChildJobIDs {
			if c == foreign.ID && !strings.HasPrefix(j.Name, "ok") {
				t.Errorf("job %s/%s names group b's job %d as a child", j.Group, j.Name, c)
			}
		}
	}
	if code, body := e.do("opNoScripts", "POST", "/api/v1/jobs", withChildren(jobSpec("a", "echo", "twice"), e.plain.ID, e.plain.ID)); code != http.StatusBadRequest {
		t.Errorf("the same child twice: %d %s", code, body)
	}
}

// A link outlives the permission that made it: it was authorized when it
// was made, and editing the parent re-checks only the references the edit
// adds, so whoever may edit the parent keeps (or drops) a link to a job
// they could not name themselves, but never adds one.
func TestChildLinkKeptAcrossEdits(t *testing.T) {
	e := newEnv(t)
	foreign := e.job("b", "echo")
	code, body := e.do("admin", "POST", "/api/v1/jobs", withChildren(jobSpec("a", "echo", "parent"), foreign.ID))
	if code != http.StatusCreated {
		t.Fatalf("admin links a to b: %d %s", code, body)
	}
	parent := decodeJob(t, body)
	path := fmt.Sprintf("/api/v1/jobs/%d", parent.ID)

	// The operator of a edits the parent, keeping its link.
	spec := parent.JobSpec
	spec.Description, spec.Version = "edited by the operator", parent.Version
	code, body = e.do("opNoScripts", "PUT", path, spec)
	if code != http.StatusOK {
		t.Fatalf("an edit keeping the admin's link: %d %s, want 200", code, body)
	}
	parent = decodeJob(t, body)
	if len(parent.ChildJobIDs) != 1 || parent.ChildJobIDs[0] != foreign.ID {
		t.Fatalf("children after the edit: %v, want [%d]", parent.ChildJobIDs, foreign.ID)
	}
	// Adding a second child of b next to the kept one is refused.
	other := e.job("b", "echo")
	spec = parent.JobSpec
	spec.ChildJobIDs, spec.Version = []int64{foreign.ID, other.ID}, parent.Version
	if code, body := e.do("opNoScripts", "PUT", path, spec); code != http.StatusBadRequest || !strings.Contains(string(body), strconv.FormatInt(other.ID, 10)) ||
		strings.Contains(string(body), strconv.FormatInt(foreign.ID, 10)) {
		t.Errorf("adding job %d next to the kept %d: %d %s, want 400 naming only the added one", other.ID, foreign.ID, code, body)
	}
	// Dropping it needs nothing.
	spec.ChildJobIDs = nil
	if code, body := e.do("opNoScripts", "PUT", path, spec); code != http.StatusOK {
		t.Errorf("dropping the link: %d %s", code, body)
	}

	// Moving a parent to another group hands its links to that group's
	// operators: every link is checked anew, as the mover's.
	both := e.newUser(store.Grant{Group: "a", Role: "operator"}, store.Grant{Group: "b", Role: "operator"})
	e.keys[both] = e.newKey(both, nil).Secret
	if _, err := e.st.CreateGroup(context.Background(), store.System, store.Group{Name: "c"}); err != nil {
		t.Fatal(err)
	}
	third := e.job("c", "echo")
	code, body = e.do("admin", "POST", "/api/v1/jobs", withChildren(jobSpec("a", "echo", "mover"), third.ID))
	if code != http.StatusCreated {
		t.Fatalf("admin links a to c: %d %s", code, body)
	}
	moved := decodeJob(t, body)
	spec = moved.JobSpec
	spec.Group, spec.Version = "b", moved.Version
	movePath := fmt.Sprintf("/api/v1/jobs/%d", moved.ID)
	if code, body := e.do(both, "PUT", movePath, spec); code != http.StatusBadRequest || !strings.Contains(string(body), strconv.FormatInt(third.ID, 10)) {
		t.Errorf("moving a parent to b with its link to c's job: %d %s, want 400", code, body)
	}
	spec.Group = "a"
	spec.Description = "kept in a"
	if code, body := e.do(both, "PUT", movePath, spec); code != http.StatusOK {
		t.Errorf("editing it in place, link kept: %d %s, want 200", code, body)
	}
}

// Deleting a command-running job is writing it: it needs scripts, like
// creating or editing one (issue #26, finding 14).
func TestDeleteScriptJobNeedsScripts(t *testing.T) {
	e := newEnv(t)
	for _, h := range []string{"shell", "deploy"} {
		j := e.job("a", h)
		path := fmt.Sprintf("/api/v1/jobs/%d", j.ID)
		code, body := e.do("opNoScripts", "DELETE", path, nil)
		if code != http.StatusForbidden || !strings.Contains(string(body), "scripts") {
			t.Errorf("operator without scripts deletes a %s job: %d %s, want 403 naming scripts", h, code, body)
		}
		if _, err := e.st.GetJob(context.Background(), j.ID); err != nil {
			t.Errorf("the %s job is gone after a refused delete: %v", h, err)
		}
		if code, body := e.do("operator", "DELETE", path, nil); code != http.StatusNoContent {
			t.Errorf("operator with scripts deletes a %s job: %d %s, want 204", h, code, body)
		}
	}
	if code, body := e.do("opNoScripts", "DELETE", fmt.Sprintf("/api/v1/jobs/%d", e.job("a", "echo").ID), nil); code != http.StatusNoContent {
		t.Errorf("operator without scripts deletes a plain job: %d %s, want 204", code, body)
	}
	if code, body := e.do("viewerB", "DELETE", fmt.Sprintf("/api/v1/jobs/%d", e.shell.ID), nil); code != http.StatusNotFound {
		t.Errorf("a stranger deletes a shell job: %d %s, want 404", code, body)
	}
}

// One fire may cause at most 100 runs through child jobs (the default
// cap): a link that would let some job reach further is refused, saying
// how far it would reach. Each path counts, since each one triggers a run.
func TestChildLinkReachCap(t *testing.T) {
	e := newEnv(t)
	create := func(name string, children ...int64) (int, []byte) {
		t.Helper()
		return e.do("admin", "POST", "/api/v1/jobs", withChildren(jobSpec("a", "echo", name), children...))
	}
	mustCreate := func(name string, children ...int64) apiv1.Job {
		t.Helper()
		code, body := create(name, children...)
		if code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, code, body)
		}
		return decodeJob(t, body)
	}
	// The shape: 1 → 10 → 10, the middle jobs sharing the leaves.
	var leaves, mids []int64
	for i := range 10 {
		leaves = append(leaves, mustCreate(fmt.Sprint("leaf", i)).ID)
	}
	for i := range 9 {
		mids = append(mids, mustCreate(fmt.Sprint("mid", i), leaves...).ID)
	}
	last := mustCreate("mid9")
	mids = append(mids, last.ID)
	// 9 × (1 + 10) + 1 = 100: exactly the cap.
	root := mustCreate("root", mids...)

	// Giving the last middle job its leaves makes the root reach 110.
	spec := withChildren(jobSpec("a", "echo", last.Name), leaves...)
	spec.Version = last.Version
	code, body := e.do("admin", "PUT", fmt.Sprintf("/api/v1/jobs/%d", last.ID), spec)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "110") || !strings.Contains(string(body), "100") {
		t.Fatalf("a link that makes an ancestor reach 110 runs: %d %s, want 400 naming 110 and the cap 100", code, body)
	}
	if strings.Contains(string(body), strconv.FormatInt(root.ID, 10)) {
		t.Errorf("the refusal names the ancestor job %d, which the writer may not know: %s", root.ID, body)
	}
	// A new job over the cap itself: 10 × (1 + 10) = 110.
	wide10 := append(slices.Clone(mids[:9]), mustCreate("mid10", leaves...).ID)
	code, body = create("wide", wide10...)
	if code != http.StatusBadRequest || !strings.Contains(string(body), "110") {
		t.Fatalf("a job reaching 110 runs: %d %s, want 400 naming 110", code, body)
	}
	// A diamond counts each path: two ways to the same leaf are two runs.
	a := mustCreate("diamond-a", leaves...)
	b := mustCreate("diamond-b", leaves...)
	_ = mustCreate("diamond", a.ID, b.ID) // 2 × 11 = 22: fine
	var fans []int64
	for i := range 4 {
		fans = append(fans, mustCreate(fmt.Sprint("fan", i), a.ID, b.ID).ID) // 2 + 2 × 10 = 22 each
	}
	code, body = create("fan-top", fans...) // 4 × 23 = 92
	if code != http.StatusCreated {
		t.Fatalf("reach 92: %d %s", code, body)
	}
	code, body = create("fan-over", append(fans, mustCreate("fan4", a.ID, b.ID).ID)...) // 5 × 23 = 115
	if code != http.StatusBadRequest || !strings.Contains(string(body), "115") {
		t.Fatalf("reach 115 through diamonds: %d %s, want 400 naming 115", code, body)
	}
}

// An inline node's job is authorized as a job a node names: the writer
// must be able to trigger it (operator of its group, and scripts when its
// handler runs commands), through the same refs.Check; an edit re-checks
// only the inline jobs it changes. A refusal names the node.
func TestInlineNodesNeedTrigger(t *testing.T) {
	e := newEnv(t)
	inline := func(name string, in apiv1.InlineJob) apiv1.WorkflowSpec {
		return apiv1.WorkflowSpec{Group: "a", Name: name, ScheduleType: "none",
			Nodes: []apiv1.WorkflowNode{{Name: "x", Inline: &in}}}
	}
	for _, c := range []struct {
		who  string
		in   apiv1.InlineJob
		want int
		why  string
	}{
		{"opNoScripts", apiv1.InlineJob{Handler: "echo"}, http.StatusCreated, "a plain handler of its own group"},
		{"opNoScripts", apiv1.InlineJob{Group: "b", Handler: "echo"}, http.StatusBadRequest, "a group it does not operate"},
		{"opNoScripts", apiv1.InlineJob{Handler: "shell"}, http.StatusBadRequest, "a shell command without scripts"},
		{"opNoScripts", apiv1.InlineJob{Handler: "deploy"}, http.StatusBadRequest, "the group's command handler without scripts"},
		{"operator", apiv1.InlineJob{Handler: "shell"}, http.StatusCreated, "a shell command with scripts"},
		{"operator", apiv1.InlineJob{Group: "b", Handler: "echo"}, http.StatusBadRequest, "another group, even with scripts on its own"},
		{"admin", apiv1.InlineJob{Group: "b", Handler: "echo"}, http.StatusCreated, "an admin, anywhere"},
	} {
		code, body := e.do(c.who, "POST", "/api/v1/workflows", inline(fmt.Sprint("wf", e.next()), c.in))
		if code != c.want {
			t.Errorf("%s: %s writing inline %+v: %d %s, want %d", c.why, c.who, c.in, code, body, c.want)
			continue
		}
		if code == http.StatusBadRequest && !strings.Contains(string(body), `node \"x\": inline job with handler`) {
			t.Errorf("%s: the refusal %s does not name the node", c.why, body)
		}
	}

	// Kept across an edit that does not change it; a change is checked.
	code, body := e.do("operator", "POST", "/api/v1/workflows", inline("kept", apiv1.InlineJob{Handler: "shell", Params: "date"}))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	var wf apiv1.Workflow
	if err := json.Unmarshal(body, &wf); err != nil {
		t.Fatal(err)
	}
	spec := wf.WorkflowSpec
	spec.Description, spec.Version = "edited by someone without scripts", wf.Version
	if code, body := e.do("opNoScripts", "PUT", fmt.Sprintf("/api/v1/workflows/%d", wf.ID), spec); code != http.StatusOK {
		t.Fatalf("an edit keeping the inline job: %d %s, want 200", code, body)
	} else if err := json.Unmarshal(body, &wf); err != nil {
		t.Fatal(err)
	}
	spec = wf.WorkflowSpec
	spec.Nodes[0].Inline.Params, spec.Version = "rm -rf /tmp/x", wf.Version
	if code, body := e.do("opNoScripts", "PUT", fmt.Sprintf("/api/v1/workflows/%d", wf.ID), spec); code != http.StatusBadRequest ||
		!strings.Contains(string(body), "not a job you may trigger") {
		t.Errorf("an edit changing the shell command without scripts: %d %s, want 400 saying why", code, body)
	}
}
