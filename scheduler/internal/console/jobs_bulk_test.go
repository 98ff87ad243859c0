package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
)

// Bulk operations on ticked jobs: only the jobs the user may operate have
// a box; a first POST confirms (how many, which, a disable's note field),
// the confirmed one goes through the API's bulk endpoint and lists each
// job's result: done, or refused and why.
func TestBulkJobs(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a1, a2, a3 := e.job("a", "echo"), e.job("a", "echo"), e.job("a", "echo")
	b1 := e.job("b", "echo")
	op := e.browser().login("operator")
	p := op.open("/jobs")
	mustContain(t, p, `id="jobs-bulk"`, `id="jobs-select-all"`, fmt.Sprintf(`id="select-%d"`, a1.ID))
	mustLack(t, e.browser().login("viewer").get("/jobs"), `id="jobs-bulk"`, `id="jobs-select-all"`)
	mustContain(t, e.browser().login("admin").get("/jobs"), fmt.Sprintf(`id="select-%d"`, b1.ID))

	ids := []string{strconv.FormatInt(a1.ID, 10), strconv.FormatInt(a2.ID, 10), strconv.FormatInt(b1.ID, 10)}
	names := []string{fmt.Sprintf("%d:%s", a1.ID, a1.Name)}
	p = op.post("/jobs/bulk", url.Values{"action": {"disable"}, "id": ids, "name": names, "back": {"/jobs?group=a"}})
	mustContain(t, p, `id="jobs-bulk-confirm"`, "Disable 3 jobs?", `id="jobs-bulk-note"`, `href="/jobs?group=a"`, ">"+a1.Name+"</a>")
	p = op.post("/jobs/bulk", url.Values{"action": {"disable"}, "id": ids, "note": {"db migration"}, "confirm": {"yes"}})
	if p.Code != http.StatusOK {
		t.Fatalf("confirmed bulk disable: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="jobs-bulk-done">2<`, `id="jobs-bulk-refused">1<`,
		fmt.Sprintf(`id="bulk-item-%d" data-ok="false"`, b1.ID), "no such job")
	for _, id := range []int64{a1.ID, a2.ID} {
		j, _ := e.st.GetJob(ctx, id)
		if j.Enabled || j.PausedNote != "db migration" {
			t.Errorf("job %d after the bulk disable: enabled %t, note %q", id, j.Enabled, j.PausedNote)
		}
	}
	if j, _ := e.st.GetJob(ctx, b1.ID); !j.Enabled {
		t.Errorf("group b's job was disabled by a's operator")
	}

	// Delete: the confirmation names how many; then they are gone.
	p = op.post("/jobs/bulk", url.Values{"action": {"delete"}, "id": ids[:2]})
	mustContain(t, p, "Delete 2 jobs?", "cannot be undone", `id="jobs-bulk-confirm-submit"`)
	p = op.post("/jobs/bulk", url.Values{"action": {"delete"}, "id": ids[:2], "confirm": {"yes"}})
	mustContain(t, p, `id="jobs-bulk-done">2<`)
	if _, err := e.st.GetJob(ctx, a1.ID); err == nil {
		t.Errorf("job %d still there after the bulk delete", a1.ID)
	}
	if _, err := e.st.GetJob(ctx, a3.ID); err != nil {
		t.Errorf("job %d, not ticked, gone: %v", a3.ID, err)
	}

	// Nothing ticked, an unknown action, a bad id: 400 with the reason.
	p = op.post("/jobs/bulk", url.Values{"action": {"enable"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("a bulk enable of nothing: %d", p.Code)
	}
	mustContain(t, p, "No job selected")
	for _, f := range []url.Values{{"action": {"explode"}, "id": ids}, {"action": {"enable"}, "id": {"x"}}} {
		if p := op.post("/jobs/bulk", f); p.Code != http.StatusBadRequest {
			t.Errorf("bulk %v: %d, want 400", f, p.Code)
		}
	}
}
