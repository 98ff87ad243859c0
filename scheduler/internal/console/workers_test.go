package console_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jetjob/jetjob/shared/wire"
)

func TestWorkersPage(t *testing.T) {
	e := newEnv(t)
	now := time.Now()
	e.workers = []wire.WorkerInfo{
		{ID: "wa-1", Group: "a", Host: "host-a1", PID: 41, Version: "v1.2.3", Handlers: []string{"echo", "report"},
			Capacity: 8, Running: []int64{7, 9, 11}, StartedAt: now.Add(-time.Hour), BeatAt: now},
		{ID: "wb-1", Group: "b", Host: "host-b1", PID: 42, Capacity: 4, Running: []int64{}, StartedAt: now, BeatAt: now},
	}

	admin := e.browser().login("admin")
	p := admin.open("/workers")
	// Group a: its worker with host, handlers, 3 of 8 slots busy.
	mustContain(t, p, `id="groups-table"`, `id="workers-a"`, `data-worker="wa-1"`, "host-a1", "echo, report",
		"<td>3 / 8</td>", `id="workers-b"`, `id="new-group-form"`)

	// A viewer of b sees b only, and no group form.
	vb := e.browser().login("viewerB")
	p = vb.get("/workers")
	mustContain(t, p, `id="workers-b"`, "host-b1")
	mustLack(t, p, `data-group="a"`, "host-a1", `id="new-group-form"`)

	// A group without workers says how to start one.
	e.workers = nil
	mustContain(t, admin.get("/workers?group=a"), "No live worker", "jetjob-worker --group a")
}

func TestWorkersPageCreatesGroups(t *testing.T) {
	e := newEnv(t)
	admin := e.browser().login("admin")

	// A bad name comes back with the API's words and what was typed.
	p := admin.post("/groups", url.Values{"name": {"bad name!"}, "title": {"Billing"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("bad group name: %d\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="field-error-group"`, `value="bad name!"`, `value="Billing"`)

	p = admin.post("/groups", url.Values{"name": {"billing"}, "title": {"Billing"}, "command_handlers": {"script, deploy"}})
	if p.Code != http.StatusSeeOther || p.Location != "/workers?group=billing&notice=group-created" {
		t.Fatalf("create group: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	mustContain(t, admin.get(p.Location), "Group created.", `id="group-billing"`, "script, deploy")

	// A viewer sees no form, and posting it anyway is the API's 403.
	v := e.browser().login("viewer")
	mustLack(t, v.get("/workers"), `id="new-group-form"`)
	p = v.post("/groups", url.Values{"name": {"sneaky"}})
	if p.Code != http.StatusForbidden {
		t.Fatalf("viewer's forged group POST: %d, want 403", p.Code)
	}
	mustLack(t, admin.get("/workers"), "sneaky")
}
