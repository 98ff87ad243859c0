package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/shared/wire"
)

// PATCH /groups/{name} sets the fields it is given of a group's cap and
// rate limit, refuses values out of range with a message naming the
// field, records each change (and only a change) as group.update with
// the limits before and after, and GET /groups reports them.
func TestGroupLimits(t *testing.T) {
	e := newEnv(t)
	op, admin := e.keys["operator"], e.keys["admin"]
	var g apiv1.Group
	a := e.call(op, "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(5), RateLimit: ptr("100/1m")})
	if a.code != s200 {
		t.Fatalf("PATCH: %d %s", a.code, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), &g); err != nil {
		t.Fatal(err)
	}
	if g.MaxRunning != 5 || g.RateLimit != "100/1m" {
		t.Errorf("PATCH answered max_running %d rate_limit %q, want 5 and 100/1m", g.MaxRunning, g.RateLimit)
	}
	// One field: the other is kept.
	e.call(op, "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(7)})
	var list apiv1.GroupList
	if err := json.Unmarshal([]byte(e.call(e.keys["viewerA"], "GET", "/api/v1/groups", nil).body), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Groups) != 1 || list.Groups[0].MaxRunning != 7 || list.Groups[0].RateLimit != "100/1m" {
		t.Errorf("GET /groups: %+v, want group a with max_running 7 and rate_limit 100/1m", list.Groups)
	}

	for _, c := range []struct {
		body any
		want string
	}{
		{apiv1.GroupLimitsRequest{MaxRunning: ptr(-1)}, "max_running -1 is out of range"},
		{apiv1.GroupLimitsRequest{MaxRunning: ptr(1001)}, "max_running 1001 is out of range"},
		{apiv1.GroupLimitsRequest{RateLimit: ptr("100")}, "want COUNT/PERIOD"},
		{apiv1.GroupLimitsRequest{RateLimit: ptr("0/1m")}, "count must be a whole number"},
		{apiv1.GroupLimitsRequest{RateLimit: ptr("5/1ms")}, "out of range"},
		{apiv1.GroupLimitsRequest{RateLimit: ptr("5/fortnight")}, "period"},
		{apiv1.GroupLimitsRequest{}, "nothing to change"},
		{map[string]any{"max_runing": 3}, "max_runing"},
	} {
		a := e.call(op, "PATCH", "/api/v1/groups/a", c.body)
		if a.code != s400 || !strings.Contains(a.body, c.want) {
			t.Errorf("PATCH %+v: %d %s, want 400 saying %q", c.body, a.code, a.body, c.want)
		}
	}
	if a := e.call(admin, "PATCH", "/api/v1/groups/nosuch", apiv1.GroupLimitsRequest{MaxRunning: ptr(1)}); a.code != s404 {
		t.Errorf("PATCH of a missing group: %d %s, want 404", a.code, a.body)
	}
	if a := e.call(e.keys["viewerB"], "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(1)}); a.code != s404 {
		t.Errorf("PATCH by a viewer of another group: %d, want 404", a.code)
	}
	if a := e.call(e.keys["viewerA"], "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(1)}); a.code != s403 {
		t.Errorf("PATCH by a viewer: %d, want 403", a.code)
	}

	// The same values again change nothing and record nothing; "" lifts
	// the rate limit.
	e.call(op, "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(7), RateLimit: ptr("100/1m")})
	if a := e.call(op, "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{RateLimit: ptr("")}); !strings.Contains(a.body, `"max_running": 7`) || strings.Contains(a.body, "rate_limit") {
		t.Errorf("lifting the rate limit: %s", a.body)
	}
	rows, err := e.pool.Query(context.Background(), `SELECT actor, before::text, after::text FROM audit_log
		WHERE action = 'group.update' AND target = 'group:a' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var actor, before, after string
		if err := rows.Scan(&actor, &before, &after); err != nil {
			t.Fatal(err)
		}
		got = append(got, actor+" "+before+" → "+after)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`operator {"name": "a"} → {"name": "a", "rate_limit": "100/1m", "max_running": 5}`,
		`operator {"name": "a", "rate_limit": "100/1m", "max_running": 5} → {"name": "a", "rate_limit": "100/1m", "max_running": 7}`,
		`operator {"name": "a", "rate_limit": "100/1m", "max_running": 7} → {"name": "a", "max_running": 7}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// GET /groups/{name}/queue reads the group's slots and rate cell from
// JETJOB_LOCKS, in the shapes the workers write (flowkv), orders the
// waiters by priority, fire time and run id, names the runs' jobs, and
// lists the group's runs in flight.
func TestGroupQueue(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.keys["operator"]
	e.call(op, "PATCH", "/api/v1/groups/a", apiv1.GroupLimitsRequest{MaxRunning: ptr(1), RateLimit: ptr("10/1s")})

	// Without any key: nobody holds or waits, the rate is unused, the
	// runs in flight are listed all the same.
	q := e.queue("viewerA", "a")
	if len(q.Running) != 0 || len(q.Waiting) != 0 || q.Rate == nil || q.Rate.Available != 10 || q.LocksError != "" {
		t.Errorf("queue without keys: %+v", q)
	}
	if q.MaxRunning != 1 || q.RateLimit != "10/1s" {
		t.Errorf("queue limits: %d %q, want 1 and 10/1s", q.MaxRunning, q.RateLimit)
	}
	if len(q.InFlight) == 0 || q.InFlight[0].RunID != e.run || q.InFlight[0].JobName != e.plain.Name {
		t.Errorf("in flight without keys: %+v, want the run %d of job %s", q.InFlight, e.run, e.plain.Name)
	}

	other := e.job("a", "echo")
	holder, r2, r3, r4 := e.run, e.newRun(other.ID), e.newRun(e.plain.ID), e.newRun(other.ID)
	if _, err := e.pool.Exec(ctx, `UPDATE job_runs SET status = 'RUNNING', worker_id = 'wa' WHERE id = $1`, holder); err != nil {
		t.Fatal(err)
	}
	foreign := e.newRun(e.job("b", "echo").ID) // a key naming another group's run tells nothing of it
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return at.Add(d).UnixMilli() }
	slots := flowkv.Slots{
		Slots: []flowkv.Holder{{Run: holder, Worker: "wa", Beat: 3}},
		Queue: []flowkv.Waiter{
			{Run: r4, At: ms(0), Worker: "wa", Beat: 1},
			{Run: r2, At: ms(0), Worker: "wa", Beat: 1},
			{Run: r3, At: ms(time.Second), Worker: "wb", Beat: 2, P: 5},
			{Run: foreign, At: ms(-time.Second), Worker: "wx"},
		},
	}
	tat := time.Now().Add(time.Minute).UnixMilli()
	e.putLock(flowkv.GroupSlotsKey("a"), slots)
	e.putLock(flowkv.RateKey(wire.RateGroup, 0, "a", ""), flowkv.RateState{TAT: tat, N: 10})

	q = e.queue("viewerA", "a")
	if q.LocksError != "" {
		t.Fatalf("locks error: %s", q.LocksError)
	}
	if len(q.Running) != 1 || q.Running[0].RunID != holder || q.Running[0].WorkerID != "wa" ||
		q.Running[0].JobID != e.plain.ID || q.Running[0].JobName != e.plain.Name || q.Running[0].Status != "RUNNING" {
		t.Errorf("running: %+v, want run %d of job %s on wa", q.Running, holder, e.plain.Name)
	}
	var order []string
	for _, w := range q.Waiting {
		order = append(order, fmt.Sprintf("%d:%s:%s:p%d", w.RunID, w.JobName, w.WorkerID, w.Priority))
	}
	want := []string{
		fmt.Sprintf("%d:%s:wb:p5", r3, e.plain.Name),
		fmt.Sprintf("%d::wx:p0", foreign),
		fmt.Sprintf("%d:%s:wa:p0", r2, other.Name),
		fmt.Sprintf("%d:%s:wa:p0", r4, other.Name),
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("waiting: %v, want %v (priority, fire time, run id)", order, want)
	}
	if w := q.Waiting[0]; w.FireAt == nil || !w.FireAt.Equal(at.Add(time.Second)) {
		t.Errorf("a waiter's fire time: %v, want %v (its at)", w.FireAt, at.Add(time.Second))
	}
	if q.Rate == nil || q.Rate.Available != 0 || q.Rate.TAT == nil || q.Rate.TAT.UnixMilli() != tat ||
		q.Rate.NextFreeAt.UnixMilli() != tat {
		t.Errorf("rate: %+v, want none available, tat %d, next free at tat (10/1s, the block full)", q.Rate, tat)
	}
	inFlight := map[int64]bool{}
	for _, r := range q.InFlight {
		inFlight[r.RunID] = true
	}
	for _, id := range []int64{holder, r2, r3, r4} {
		if !inFlight[id] {
			t.Errorf("run %d is not listed in flight: %+v", id, q.InFlight)
		}
	}
	if inFlight[foreign] {
		t.Errorf("group b's run %d is listed in flight of group a", foreign)
	}

	// Garbage in a key is reported; the runs in flight are still there.
	if _, err := e.flowBucket(flowkv.GroupSlotsKey("a")).Put(ctx, flowkv.GroupSlotsKey("a"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if q := e.queue("admin", "a"); !strings.Contains(q.LocksError, "group.a_slots") || len(q.InFlight) == 0 {
		t.Errorf("queue over garbage: locks error %q, %d in flight", q.LocksError, len(q.InFlight))
	}
	if a := e.call(e.keys["viewerB"], "GET", "/api/v1/groups/a/queue", nil); a.code != s404 {
		t.Errorf("queue of another group: %d, want 404", a.code)
	}
}

// queue reads a group's queue view as who.
func (e *env) queue(who, group string) apiv1.GroupQueue {
	e.t.Helper()
	a := e.call(e.keys[who], "GET", "/api/v1/groups/"+group+"/queue", nil)
	if a.code != s200 {
		e.t.Fatalf("queue of %s: %d %s", group, a.code, a.body)
	}
	var q apiv1.GroupQueue
	if err := json.Unmarshal([]byte(a.body), &q); err != nil {
		e.t.Fatal(err)
	}
	return q
}

// putLock writes a key of JETJOB_LOCKS as a worker would.
func (e *env) putLock(key string, v any) {
	e.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.flowBucket(key).Put(context.Background(), key, b); err != nil {
		e.t.Fatal(err)
	}
}

// flowBucket is the bucket of a flow key (stream.BucketOf).
func (e *env) flowBucket(key string) interface {
	Put(context.Context, string, []byte) (uint64, error)
} {
	e.t.Helper()
	open := stream.Locks
	if stream.BucketOf(key) == stream.RatesBucket {
		open = stream.Rates
	}
	kv, err := open(context.Background(), e.js, stream.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	return kv
}
