package jobfile

import (
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// A declared group's limits are configuration: the plan changes an
// existing group's max_running and rate_limit to the file's (left out:
// none), compares rates by value ("100/60s" is the server's "100/1m"),
// refuses values out of range with the line, and a file written back
// reads the same.
func TestPlanGroupLimits(t *testing.T) {
	f := mustParse(t, header+`groups:
  - name: billing
    max_running: 5
    rate_limit: 100/1m
  - name: ops
  - name: same
    rate_limit: 5/1s
  - name: fresh
    max_running: 2
jobs: []
`)
	cluster := []apiv1.Group{{Name: "billing", MaxRunning: 3}, {Name: "ops", MaxRunning: 4, RateLimit: "1/1h0m0s"},
		{Name: "same", RateLimit: "5/1s"}}
	p, err := MakePlan("jobs.yaml", f, cluster, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `+ group fresh
~ group billing  max_running: 3 → 5
~ group billing  rate_limit: "" → "100/1m"
~ group ops  max_running: 4 → 0
~ group ops  rate_limit: "1/1h" → ""
`
	if got := planText(t, p); !strings.HasPrefix(got, want) || !strings.Contains(got, "1 group(s) to create; 2 group(s) to update") {
		t.Errorf("plan:\n%s\nwant it to start with\n%s", got, want)
	}
	if len(p.NewGroups) != 1 || p.NewGroups[0].MaxRunning != 2 {
		t.Errorf("new groups: %+v, want fresh with max_running 2", p.NewGroups)
	}
	if c := p.GroupChanges[0]; c.Name != "billing" || *c.Limits.MaxRunning != 5 || *c.Limits.RateLimit != "100/1m" {
		t.Errorf("billing's change: %+v", c)
	}

	data, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "  - name: billing\n    max_running: 5\n    rate_limit: 100/1m\n") {
		t.Errorf("encoded:\n%s", data)
	}
	again := mustParse(t, string(data))
	if g, w := again.Groups[0], f.Groups[0]; g.Name != w.Name || g.MaxRunning != w.MaxRunning || g.RateLimit != w.RateLimit {
		t.Errorf("read back %+v, want %+v", again.Groups[0], f.Groups[0])
	}

	f = mustParse(t, header+"groups:\n  - name: billing\n    max_running: 1001\n  - name: ops\n    rate_limit: lots\njobs: []\n")
	_, err = MakePlan("jobs.yaml", f, cluster, nil, false)
	for _, w := range []string{"jobs.yaml:4: groups[0].max_running: max_running 1001 is out of range", "jobs.yaml:6: groups[1].rate_limit: rate \"lots\""} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
}
