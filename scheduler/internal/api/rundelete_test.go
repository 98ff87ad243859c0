package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// endedRun is a new run of job, ended CANCELLED (killed before it was
// published): a terminal run to delete.
func (e *env) endedRun(job int64) int64 {
	e.t.Helper()
	id := e.newRun(job)
	if _, err := e.st.CancelRun(context.Background(), store.System, id, "test"); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// DELETE /runs/{id} deletes a terminal run with its log lines, its
// idempotency key and its audit entry (job, status, scheduled time); it
// refuses a run still going (409, "kill it first"), a node run and a
// workflow run (409: the workflow run's record needs them), and a run of a
// group the caller cannot read answers 404 like a missing one.
func TestDeleteRun(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	js := e.js

	// A terminal run with a log line (and another run's, which stays),
	// triggered with an idempotency key.
	code, body := e.do("operator", "POST", fmt.Sprintf("/api/v1/jobs/%d/trigger", e.plain.ID), nil, "Idempotency-Key", "del-1")
	var trig apiv1.Run
	if err := json.Unmarshal(body, &trig); code != 202 || err != nil {
		t.Fatalf("trigger: %d %s", code, body)
	}
	done := trig.ID
	if _, err := e.st.CancelRun(ctx, store.System, done, "test"); err != nil {
		t.Fatal(err)
	}
	kept := e.endedRun(e.plain.ID)
	for _, id := range []int64{done, kept} {
		line, err := wire.EncodeLogLine(&wire.LogLine{RunID: id, JobID: e.plain.ID, Seq: 1, At: time.Now(), Level: "info", Msg: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, stream.Log("a", id), line); err != nil {
			t.Fatal(err)
		}
	}
	logs := func(id int64) int {
		t.Helper()
		code, body := e.do("admin", "GET", fmt.Sprintf("/api/v1/runs/%d/logs", id), nil)
		var l apiv1.RunLogs
		if err := json.Unmarshal(body, &l); code != 200 || err != nil {
			t.Fatalf("logs of run %d: %d %s", id, code, body)
		}
		return len(l.Lines)
	}
	if logs(done) != 1 {
		t.Fatalf("run %d has no log line before its deletion", done)
	}
	run, err := e.st.GetRun(ctx, done)
	if err != nil {
		t.Fatal(err)
	}

	del := func(who string, id int64) (int, string) {
		code, body := e.do(who, "DELETE", fmt.Sprintf("/api/v1/runs/%d", id), nil)
		return code, string(body)
	}
	if code, body := del("viewerB", done); code != 404 {
		t.Errorf("viewer of b deleting a run of a: %d %s, want 404 (hidden)", code, body)
	}
	if code, body := del("viewerA", done); code != 403 {
		t.Errorf("viewer of a deleting a run of a: %d %s, want 403", code, body)
	}
	if code, body := del("operator", done); code != 204 {
		t.Fatalf("operator deleting ended run %d: %d %s, want 204", done, code, body)
	}
	if _, err := e.st.GetRun(ctx, done); err == nil {
		t.Errorf("run %d still there after its deletion", done)
	}
	if code, body := e.do("admin", "GET", fmt.Sprintf("/api/v1/runs/%d/logs", done), nil); code != 404 {
		t.Errorf("logs of deleted run %d: %d %s, want 404", done, code, body)
	}
	lines, _, err := runlog.New(js).Read(ctx, "a", done, 0, 10)
	if err != nil || len(lines) != 0 {
		t.Errorf("log lines of deleted run %d in the stream: %d (%v), want none", done, len(lines), err)
	}
	if logs(kept) != 1 {
		t.Errorf("run %d lost its log line to another run's deletion", kept)
	}
	var keys int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM trigger_keys WHERE run_id = $1`, done).Scan(&keys); err != nil || keys != 0 {
		t.Errorf("%d idempotency keys still name deleted run %d (%v)", keys, done, err)
	}
	var before map[string]any
	var raw string
	if err := e.pool.QueryRow(ctx, `SELECT before FROM audit_log WHERE action = 'run.delete' AND target = $1 AND actor = 'operator'`,
		fmt.Sprintf("run:%d", done)).Scan(&raw); err != nil {
		t.Fatalf("audit entry of the deletion: %v", err)
	}
	if err := json.Unmarshal([]byte(raw), &before); err != nil {
		t.Fatal(err)
	}
	if before["job_id"] != float64(e.plain.ID) || before["status"] != "CANCELLED" || before["scheduled_at"] == nil {
		t.Errorf("audit before %s, want job %d, status CANCELLED and the scheduled time %s", raw, e.plain.ID, run.ScheduledAt)
	}
	if code, body := del("operator", done); code != 404 {
		t.Errorf("deleting run %d again: %d %s, want 404", done, code, body)
	}

	// Refusals: a run not ended, a node run, a workflow run.
	live := e.newRun(e.plain.ID)
	if code, body := del("operator", live); code != 409 || !strings.Contains(body, fmt.Sprintf("run %d is SCHEDULED: kill it first", live)) {
		t.Errorf("deleting a SCHEDULED run: %d %s, want 409 \"kill it first\"", code, body)
	}
	wr := e.workflowRun(true)
	var node int64
	if err := e.pool.QueryRow(ctx, `SELECT run_id FROM workflow_node_runs WHERE workflow_run = $1 LIMIT 1`, wr).Scan(&node); err != nil {
		t.Fatal(err)
	}
	if code, body := del("operator", node); code != 409 || !strings.Contains(body, "node") {
		t.Errorf("deleting node run %d: %d %s, want 409 naming its workflow run", node, code, body)
	}
	if code, body := del("operator", wr); code != 409 || !strings.Contains(body, "workflow run") {
		t.Errorf("deleting workflow run %d: %d %s, want 409", wr, code, body)
	}
	for _, id := range []int64{live, node, wr} {
		if _, err := e.st.GetRun(ctx, id); err != nil {
			t.Errorf("run %d gone after a refused deletion: %v", id, err)
		}
	}
}

// The bulk delete: by ids, each item as DELETE /runs/{id} (deleted, or
// refused with its reason, the others going on); by filter, every run the
// caller can read that GET /runs matches; a filter matching more than the
// bound, or with ids, is refused whole.
func TestBulkDeleteRuns(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a1, a2 := e.endedRun(e.plain.ID), e.endedRun(e.plain.ID)
	live := e.newRun(e.plain.ID)
	bJob := e.job("b", "echo")
	b1 := e.endedRun(bJob.ID)
	bulk := func(who string, req apiv1.RunsBulk) (int, apiv1.RunsBulkResult, string) {
		code, body := e.do(who, "POST", "/api/v1/runs/bulk", req)
		var res apiv1.RunsBulkResult
		_ = json.Unmarshal(body, &res)
		return code, res, string(body)
	}
	code, res, body := bulk("operator", apiv1.RunsBulk{Action: apiv1.BulkDelete, IDs: []int64{a1, live, b1}})
	if code != 200 || res.Done != 1 || res.Failed != 2 || len(res.Results) != 3 ||
		res.Results[0].Status != 204 || res.Results[1].Status != 409 || !strings.Contains(res.Results[1].Error, "kill it first") ||
		res.Results[2].Status != 404 {
		t.Errorf("operator of a deleting %d (ended), %d (scheduled), %d (b's): %d %s; want deleted, refused 409, hidden 404", a1, live, b1, code, body)
	}
	if _, err := e.st.GetRun(ctx, b1); err != nil {
		t.Errorf("b's run %d deleted by an operator of a: %v", b1, err)
	}
	var audits int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM audit_log WHERE action = 'run.delete'`).Scan(&audits); err != nil || audits != 1 {
		t.Errorf("%d run.delete audit entries (%v), want 1", audits, err)
	}

	// By filter: job a's cancelled runs (a2 and the setup's none other).
	filter := fmt.Sprintf("job=%d&status=CANCELLED", e.plain.ID)
	code, res, body = bulk("operator", apiv1.RunsBulk{Action: apiv1.BulkDelete, Filter: filter})
	if code != 200 || res.Done != 1 || res.Failed != 0 || len(res.Results) != 1 || res.Results[0].ID != a2 {
		t.Errorf("bulk delete by filter %q: %d %s, want run %d deleted", filter, code, body, a2)
	}
	// The viewer of b's filter names group a: not theirs to read.
	if code, _, body := bulk("viewerB", apiv1.RunsBulk{Action: apiv1.BulkDelete, Filter: "group=a"}); code != 403 {
		t.Errorf("viewer of b's bulk by filter group=a: %d %s, want 403", code, body)
	}
	if code, _, body := bulk("operator", apiv1.RunsBulk{Action: apiv1.BulkDelete, Filter: filter}); code != 400 || !strings.Contains(body, "no run") {
		t.Errorf("a filter matching nothing: %d %s, want 400", code, body)
	}
	for _, bad := range []apiv1.RunsBulk{
		{Action: apiv1.BulkDelete, Filter: filter, IDs: []int64{live}},
		{Action: apiv1.BulkDelete, Filter: "limit=3"},
		{Action: apiv1.BulkDelete, Filter: "status=NOPE"},
		{Action: apiv1.BulkDelete},
		{Action: "explode", IDs: []int64{live}},
	} {
		if code, _, body := bulk("operator", bad); code != 400 {
			t.Errorf("bulk %+v: %d %s, want 400", bad, code, body)
		}
	}
	// The bound: more ids than a request takes.
	many := make([]int64, 501)
	for i := range many {
		many[i] = int64(i + 1)
	}
	if code, _, body := bulk("operator", apiv1.RunsBulk{Action: apiv1.BulkDelete, IDs: many}); code != 400 || !strings.Contains(body, "at most 500") {
		t.Errorf("bulk delete of 501 ids: %d %s, want 400", code, body)
	}
}
