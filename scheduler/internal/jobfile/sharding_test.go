package jobfile

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A job's fixed shard count is exported as sharding: {total: N}, read back
// as the same, and in sync with its cluster; a file that asks for it with
// route sharding_broadcast, or out of range, is refused before any
// request; total 1 is "not sharded", as the API stores it.
func TestShardingRoundTripsAndIsChecked(t *testing.T) {
	jobs := []apiv1.Job{served(4, "etl", "split", func(j *apiv1.Job) { j.Sharding = &apiv1.Sharding{Total: 10} })}
	names := map[int64]Key{4: {"etl", "split"}}
	groups := []apiv1.Group{{Name: "etl"}}
	f, err := Export(groups, jobs, names)
	if err != nil {
		t.Fatal(err)
	}
	got := encode(t, f)
	if !strings.Contains(got, "    sharding:\n      total: 10\n") {
		t.Fatalf("export does not hold the shard count:\n%s", got)
	}
	back := mustParse(t, got)
	if s := back.Jobs[0].Spec.Sharding; s == nil || s.Total != 10 {
		t.Fatalf("sharding read back as %+v", s)
	}
	mustBeInSync(t, "a sharded job's export", back, groups, jobs)

	one := mustParse(t, "apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: etl\n    name: split\n    handler: shell\n"+
		"    schedule_type: cron\n    schedule_expr: 0 0 2 * * *\n    sharding: {total: 1}\n")
	mustBeInSync(t, "total 1 against a job that is not sharded", one, groups,
		[]apiv1.Job{served(4, "etl", "split", nil)})

	for doc, want := range map[string]string{
		"    route_strategy: sharding_broadcast\n    sharding: {total: 3}\n": "sharding_broadcast",
		"    sharding: {total: 1001}\n":                                      "want 2 to 1000",
	} {
		_, err := Parse("jobs.yaml", []byte("apiVersion: jetjob/v1\nkind: Jobs\njobs:\n  - group: etl\n    name: split\n    handler: shell\n"+doc))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "sharding") {
			t.Errorf("file with\n%s: error %v, want one naming sharding and %q", doc, err, want)
		}
	}
}
