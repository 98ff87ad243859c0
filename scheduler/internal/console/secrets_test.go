package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/store"
)

// The job form carries a job's secret_env (names only), so an edit saved
// in the console keeps the job's secrets, and the job page names them.
func TestJobFormKeepsSecretEnv(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.st.CreateSecret(ctx, store.System, "a", "db", []byte("hunter2-value")); err != nil {
		t.Fatal(err)
	}
	j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "dump", Handler: "echo", ScheduleType: "none",
		Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial",
		SecretEnv: map[string]string{"DB_PW": "db"}})
	if err != nil {
		t.Fatal(err)
	}
	op := e.browser().login("operator")
	path := fmt.Sprintf("/jobs/%d", j.ID)
	p := op.open(path + "/edit")
	mustContain(t, p, `id="f-secret_env"`, `value="DB_PW=db"`)
	mustLack(t, p, "hunter2-value")
	mustLack(t, op.open(path), "hunter2-value")

	form := jobForm("dump-v2", "version", fmt.Sprint(j.Version), "secret_env", "DB_PW=db")
	if p := op.post(path, form); p.Code != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Code, p.Body)
	}
	if cur, _ := e.st.GetJob(ctx, j.ID); cur.Name != "dump-v2" || cur.SecretEnv["DB_PW"] != "db" {
		t.Fatalf("after a console edit: %+v, want secret_env DB_PW=db kept", cur)
	}
}

// The secrets page lists names, never values: an operator with scripts
// creates a secret, rotates it and deletes it; a refused create keeps the
// name and drops the value typed in; a viewer of the group sees the list
// without the forms, and the API refuses their write; a secret a job
// still names is not deleted, said on the page.
func TestSecretsPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	op := e.browser().login("operator")
	p := op.open("/secrets")
	mustContain(t, p, `id="no-secrets"`, `id="new-secret-form"`, `type="password"`)

	const first, second = "first-value-9f2c", "second-value-7a1e"
	p = op.post("/secrets", url.Values{"group": {"a"}, "name": {"db-pass"}, "value": {first}})
	if p.Code != http.StatusSeeOther || !strings.HasPrefix(p.Location, "/secrets?group=a") {
		t.Fatalf("create: %d → %q\n%s", p.Code, p.Location, p.Body)
	}
	p = op.open(p.Location)
	mustContain(t, p, "Secret created", "db-pass", `id="secrets-table"`)
	mustLack(t, p, first)
	list, err := e.st.ListSecrets(ctx, "a", nil)
	if err != nil || len(list) != 1 {
		t.Fatalf("secrets of a: %+v %v", list, err)
	}
	sec := list[0]
	mustContain(t, p, fmt.Sprintf(`id="secret-%d"`, sec.ID), fmt.Sprintf(`id="rotate-%d"`, sec.ID), fmt.Sprintf(`id="delete-%d"`, sec.ID))

	// A refused create: the name comes back, the value does not.
	p = op.post("/secrets", url.Values{"group": {"a"}, "name": {"bad name"}, "value": {second}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("create with a bad name: %d, want 400", p.Code)
	}
	mustContain(t, p, `id="field-error-secret"`, `value="bad name"`)
	mustLack(t, p, second)

	rot := fmt.Sprintf("/secrets/%d/rotate", sec.ID)
	if p := op.post(rot, url.Values{"value": {second}, "list_group": {"a"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("rotate: %d\n%s", p.Code, p.Body)
	}
	got, err := e.st.GetSecret(ctx, sec.ID)
	if err != nil || got.Version != 2 {
		t.Fatalf("after a rotation: %+v %v, want version 2", got, err)
	}
	p = op.open("/secrets?group=a")
	mustLack(t, p, first, second)
	if p := op.post(rot, url.Values{"value": {""}}); p.Code != http.StatusBadRequest {
		t.Errorf("rotate to an empty value: %d, want 400", p.Code)
	} else {
		mustContain(t, p, fmt.Sprintf(`id="rotate-error-%d"`, sec.ID))
	}

	// A viewer reads the list without the forms; a write is refused.
	viewer := e.browser().login("viewer")
	p = viewer.open("/secrets")
	mustContain(t, p, "db-pass")
	mustLack(t, p, fmt.Sprintf(`id="rotate-%d"`, sec.ID), `id="new-secret-form"`, first, second)
	if p := viewer.post(rot, url.Values{"value": {"x"}}); p.Code != http.StatusForbidden {
		t.Errorf("a viewer's rotation: %d, want 403", p.Code)
	}
	if cur, _ := e.st.GetSecret(ctx, sec.ID); cur.Version != 2 {
		t.Errorf("a viewer's rotation changed the secret to version %d", cur.Version)
	}

	// Named by a job: the delete is refused on the page.
	j, err := e.st.CreateJob(ctx, store.System, store.Job{Group: "a", Name: "dump", Handler: "echo", ScheduleType: "none",
		Timezone: "UTC", MisfirePolicy: "skip", RouteStrategy: "any", BlockStrategy: "serial",
		SecretEnv: map[string]string{"DB_PW": "db-pass"}})
	if err != nil {
		t.Fatal(err)
	}
	del := fmt.Sprintf("/secrets/%d/delete", sec.ID)
	p = op.post(del, url.Values{"list_group": {"a"}})
	if p.Code != http.StatusBadRequest {
		t.Fatalf("delete of a secret a job names: %d, want 400", p.Code)
	}
	mustContain(t, p, fmt.Sprintf(`id="rotate-error-%d"`, sec.ID), "referenced by jobs", fmt.Sprintf(`href="/jobs/%d"`, j.ID))
	if err := e.st.DeleteJob(ctx, store.System, j.ID); err != nil {
		t.Fatal(err)
	}
	if p := op.post(del, url.Values{"list_group": {"a"}}); p.Code != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", p.Code, p.Body)
	}
	if list, _ := e.st.ListSecrets(ctx, "a", nil); len(list) != 0 {
		t.Errorf("after the delete: %+v", list)
	}
}
