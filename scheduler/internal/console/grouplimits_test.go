package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/store"
	"github.com/jetjob/jetjob/shared/wire"
)

// The workers page shows a group's limits and, to its operators, a form
// that sets them; a refused value comes back with the API's words and
// what was typed.
func TestWorkersPageSetsGroupLimits(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	p := op.open("/workers?group=a")
	mustContain(t, p, `id="group-limits-a"`, `data-max-running="0"`, "no cap", `id="limits-form-a"`, `href="/groups/a/queue"`)

	p = op.post("/groups/a/limits", url.Values{"max_running": {"3"}, "rate_limit": {"100/1m"}})
	if p.Code != http.StatusSeeOther || p.Location != "/workers?group=a&notice=group-limits" {
		t.Fatalf("set limits: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	mustContain(t, op.get(p.Location), "Group limits set", `data-max-running="3"`, `data-rate-limit="100/1m"`,
		`id="max-running-a" name="max_running" inputmode="numeric" size="5" placeholder="0" value="3"`)

	p = op.post("/groups/a/limits", url.Values{"max_running": {"3"}, "rate_limit": {"100 a minute"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad rate: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="field-error-limits-a"`, "COUNT/PERIOD", `value="100 a minute"`)
	p = op.post("/groups/a/limits", url.Values{"max_running": {"many"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad cap: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="field-error-limits-a"`, "want a whole number from 0 (no cap) to 1000", `value="many"`)

	// A viewer sees the limits, no form; posting it anyway is the API's 403.
	v := e.browser().login("viewer")
	p = v.open("/workers?group=a")
	mustContain(t, p, `id="group-limits-a"`, `data-max-running="3"`)
	mustLack(t, p, `id="limits-form-a"`)
	if p := v.post("/groups/a/limits", url.Values{"max_running": {"9"}}); p.Code != http.StatusForbidden {
		t.Fatalf("viewer's forged limits: %d, want 403", p.Code)
	}
}

// The queue page shows the holders, the waiters in the order they start
// (named by job), the rate limit's state and the runs in flight; another
// group's viewer gets 404.
func TestGroupQueuePage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.browser().login("admin")
	admin.post("/groups/a/limits", url.Values{"max_running": {"1"}, "rate_limit": {"10/1s"}})
	job := e.job("a", "echo")
	var ids []int64
	for range 3 {
		p, err := e.st.InsertManualRun(ctx, store.System, job.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.RunID)
	}
	at := time.Now().Add(-time.Minute).UnixMilli()
	put := func(key string, v any) {
		open := stream.Locks
		if stream.BucketOf(key) == stream.RatesBucket {
			open = stream.Rates
		}
		kv, err := open(ctx, e.js, stream.Config{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if _, err := kv.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	put(flowkv.GroupSlotsKey("a"), flowkv.Slots{
		Slots: []flowkv.Holder{{Run: ids[0], Worker: "wa-1"}},
		Queue: []flowkv.Waiter{{Run: ids[1], At: at, Worker: "wa-1"}, {Run: ids[2], At: at + 1000, Worker: "wa-2", P: 9}},
	})
	put(flowkv.RateKey(wire.RateGroup, 0, "a", ""), flowkv.RateState{TAT: time.Now().Add(time.Hour).UnixMilli(), N: 1})

	v := e.browser().login("viewer")
	p := v.open("/groups/a/queue")
	mustContain(t, p, "Queue of group a", "1 of 1 held, 2 waiting", "next start free at",
		`id="queue-running"`, fmt.Sprintf(`id="queue-run-%d"`, ids[0]), job.Name,
		fmt.Sprintf(`id="queue-run-%d" data-place="1"`, ids[2]), fmt.Sprintf(`id="queue-run-%d" data-place="2"`, ids[1]),
		`id="queue-in-flight"`)
	if i, j := strings.Index(p.Body, `id="queue-waiting"`), strings.Index(p.Body, `id="queue-in-flight"`); i < 0 || j < i {
		t.Errorf("the waiting table is not before the runs in flight")
	}
	if p := e.browser().login("viewerB").get("/groups/a/queue"); p.Code != http.StatusNotFound {
		t.Errorf("another group's viewer: %d, want 404", p.Code)
	}
	mustContain(t, v.open("/workers?group=a"), `id="group-queue-link-a"`)
}
