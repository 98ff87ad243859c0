package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// An operator ticks runs on the runs page and kills them: the first POST
// asks to confirm, naming how many; the confirmed one kills those of the
// operator's group and lists the others as refused, each audited as a kill.
func TestBulkKillRuns(t *testing.T) {
	e := newEnv(t)
	ja, jb := e.job("a", "echo"), e.job("b", "echo")
	a1, a2, b1 := e.run(ja), e.run(ja), e.run(jb)
	op := e.browser().login("operator")
	mustContain(t, op.open("/runs"), `id="bulk-form"`, fmt.Sprintf(`value="%d" form="bulk-form"`, a1))
	// A viewer gets no selection.
	mustLack(t, e.browser().login("viewer").get("/runs"), `id="bulk-form"`)

	ids := []string{strconv.FormatInt(a1, 10), strconv.FormatInt(a2, 10), strconv.FormatInt(b1, 10)}
	p := op.post("/runs/bulk", url.Values{"action": {"kill"}, "id": ids, "group": {"a"}})
	mustContain(t, p, `id="bulk-confirm"`, "Kill 3 runs?", `href="/runs?group=a"`)
	if k := e.killed(); len(k) != 0 {
		t.Fatalf("killed %v before the confirmation", k)
	}
	p = op.post("/runs/bulk", url.Values{"action": {"kill"}, "id": ids, "confirm": {"yes"}})
	if p.Code != http.StatusOK {
		t.Fatalf("confirmed bulk kill: %d\n%s", p.Code, p.Body)
	}
	// b1 is another group's: hidden from the operator, so refused as not found.
	mustContain(t, p, `id="bulk-done">2<`, `id="bulk-failed">1<`, fmt.Sprintf(`<a href="/runs/%d">%d</a></td><td>404`, b1, b1))
	if k := e.killed(); !slices.Contains(k, a1) || !slices.Contains(k, a2) || slices.Contains(k, b1) {
		t.Errorf("kill requests %v, want %d and %d only", k, a1, a2)
	}
	var audited int
	if err := e.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE action = 'run.kill' AND actor = 'operator'`).Scan(&audited); err != nil {
		t.Fatal(err)
	}
	if audited != 2 {
		t.Errorf("%d run.kill audit rows, want one per killed run (2)", audited)
	}
}

// "Every run matching the filter" takes the page's search, not the ticks;
// re-run triggers each run's job again.
func TestBulkRerunMatching(t *testing.T) {
	e := newEnv(t)
	ja := e.job("a", "echo")
	runs := e.finishedRuns(ja, "FAILED", "SUCCEEDED", "FAILED")
	admin := e.browser().login("admin")
	p := admin.post("/runs/bulk", url.Values{"action": {"rerun"}, "scope": {"matching"}, "status": {"FAILED"}, "job": {strconv.FormatInt(ja.ID, 10)}})
	mustContain(t, p, "Re-run 2 runs?", fmt.Sprintf(`name="id" value="%d"`, runs[0]), fmt.Sprintf(`name="id" value="%d"`, runs[2]))
	mustLack(t, p, fmt.Sprintf(`name="id" value="%d"`, runs[1]))
	p = admin.post("/runs/bulk", url.Values{"action": {"rerun"}, "confirm": {"yes"},
		"id": {strconv.FormatInt(runs[0], 10), strconv.FormatInt(runs[2], 10)}})
	mustContain(t, p, `id="bulk-done">2<`)
	for range 2 {
		select {
		case f := <-e.fired:
			if f.JobID != ja.ID {
				t.Errorf("a re-run fired job %d, want %d", f.JobID, ja.ID)
			}
		default:
			t.Fatal("fewer than two re-runs were fired")
		}
	}
	// Nothing selected is said, not done.
	p = admin.post("/runs/bulk", url.Values{"action": {"kill"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("a bulk kill of nothing: %d", p.Code)
	}
	mustContain(t, p, "No run selected")
}
