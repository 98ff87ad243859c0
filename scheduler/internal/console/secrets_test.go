package console_test

import (
	"context"
	"fmt"
	"net/http"
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

	form := jobForm("dump-v2")
	form.Set("version", fmt.Sprint(j.Version))
	form.Set("secret_env", "DB_PW=db")
	if p := op.post(path, form); p.Code != http.StatusSeeOther {
		t.Fatalf("save: %d\n%s", p.Code, p.Body)
	}
	if cur, _ := e.st.GetJob(ctx, j.ID); cur.Name != "dump-v2" || cur.SecretEnv["DB_PW"] != "db" {
		t.Fatalf("after a console edit: %+v, want secret_env DB_PW=db kept", cur)
	}
}
