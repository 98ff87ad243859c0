package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The job form's shard count (in Advanced) is stored, refused under its
// own field with the API's words (with sharding_broadcast, out of range),
// shown on the job page's settings and given back by the edit form.
func TestJobFormShards(t *testing.T) {
	e := newEnv(t)
	op := e.browser().login("operator")
	mustContain(t, op.open("/jobs/new"), `id="f-sharding"`)

	form := jobForm("split")
	form.Set("sharding", "4")
	form.Set("route_strategy", "sharding_broadcast")
	p := op.post("/jobs", form)
	if p.Code != http.StatusBadRequest {
		t.Fatalf("shards with a broadcast: %d, want 400\n%s", p.Code, p.Body)
	}
	mustContain(t, p, `id="err-sharding"`, "sharding_broadcast")

	form = jobForm("split")
	form.Set("sharding", "1001")
	if p := op.post("/jobs", form); p.Code != http.StatusBadRequest || !strings.Contains(p.Body, `id="err-sharding"`) {
		t.Fatalf("1001 shards: %d, want 400 under the field\n%s", p.Code, p.Body)
	}

	form = jobForm("split")
	form.Set("sharding", "10")
	if p := op.post("/jobs", form); p.Code != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", p.Code, p.Body)
	}
	js, err := e.st.ListJobs(context.Background(), "a", nil, 0, 10)
	if err != nil || len(js) != 1 || js[0].Shards != 10 {
		t.Fatalf("stored jobs: %+v %v, want one with 10 shards", js, err)
	}
	path := fmt.Sprintf("/jobs/%d", js[0].ID)
	settings := between(t, op.get(path).Body, `id="job-settings"`, "</section>")
	for _, want := range []string{"Fixed shard count", "10"} {
		if !strings.Contains(settings, want) {
			t.Errorf("job settings lack %q:\n%s", want, settings)
		}
	}
	mustContain(t, op.get(path+"/edit"), `id="f-sharding"`, `value="10"`)
}
