package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A job's flow fields are validated with errors naming each field; good
// ones are stored, answered (rates in their short form), audited, and
// cleared by a PUT that leaves them out. A manual trigger's priority is
// checked, and refused for a workflow.
func TestJobFlowValidation(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	base := apiv1.JobSpec{Group: "g", Name: "j", Handler: "h", ScheduleType: "none"}
	for _, bad := range []struct {
		edit func(*apiv1.JobSpec)
		want string
	}{
		{func(s *apiv1.JobSpec) { s.Priority = 101 }, "priority 101: want -100 to 100"},
		{func(s *apiv1.JobSpec) { s.Priority = -101 }, "priority -101"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey = "tenant" }, "concurrency_key: invalid concurrency key expression"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey = "params.a..b" }, "an empty field"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey = "params.a$" }, "letters, digits"},
		{func(s *apiv1.JobSpec) { s.KeyCap = 2 }, "key_cap needs a concurrency_key"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey, s.KeyCap = "params", 1001 }, "key_cap 1001"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey, s.KeyCap = "params", -1 }, "key_cap -1"},
		{func(s *apiv1.JobSpec) { s.KeyRateLimit = "5/1s" }, "key_rate_limit needs a concurrency_key"},
		{func(s *apiv1.JobSpec) { s.RateLimit = "100" }, "rate_limit: rate \"100\": want COUNT/PERIOD"},
		{func(s *apiv1.JobSpec) { s.RateLimit = "0/1m" }, "rate_limit: rate \"0/1m\": count"},
		{func(s *apiv1.JobSpec) { s.RateLimit = "5/1ms" }, "rate_limit: rate \"5/1ms\": period"},
		{func(s *apiv1.JobSpec) { s.RateLimit = "5/48h" }, "period"},
		{func(s *apiv1.JobSpec) { s.ConcurrencyKey, s.KeyRateLimit = "params", "x/1s" }, "key_rate_limit: rate"},
	} {
		spec := base
		bad.edit(&spec)
		_, err := c.CreateJob(ctx, spec)
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, bad.want) {
			t.Errorf("create %+v: %v, want 400 saying %q", spec, err, bad.want)
		}
	}

	spec := base
	spec.Priority, spec.ConcurrencyKey, spec.KeyCap, spec.RateLimit, spec.KeyRateLimit = -40, "params.tenant.id", 3, "120/2m0s", "1/250ms"
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if j.Priority != -40 || j.ConcurrencyKey != "params.tenant.id" || j.KeyCap != 3 || j.RateLimit != "120/2m" || j.KeyRateLimit != "1/250ms" {
		t.Fatalf("created job answers %+v, want the flow fields given (rates 120/2m, 1/250ms)", j.JobSpec)
	}
	if got, err := c.GetJob(ctx, j.ID); err != nil || got.JobSpec.RateLimit != "120/2m" || got.Priority != -40 {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	entries, err := c.Audit(ctx, client.AuditOptions{Action: "job.create"})
	if err != nil || len(entries.Entries) == 0 {
		t.Fatalf("job.create audit entries: %+v, %v", entries, err)
	}
	var after map[string]any
	if err := json.Unmarshal(entries.Entries[0].After, &after); err != nil {
		t.Fatal(err)
	}
	if after["priority"] != -40.0 || after["concurrency_key"] != "params.tenant.id" || after["key_cap"] != 3.0 ||
		after["rate_limit"] != "120/2m" || after["key_rate_limit"] != "1/250ms" {
		t.Fatalf("job.create audit entry %s does not record the flow fields", entries.Entries[0].After)
	}

	// A PUT without them clears them.
	spec = j.JobSpec
	spec.Priority, spec.ConcurrencyKey, spec.KeyCap, spec.RateLimit, spec.KeyRateLimit = 0, "", 0, "", ""
	spec.Version = j.Version
	if j, err = c.UpdateJob(ctx, j.ID, spec); err != nil {
		t.Fatal(err)
	}
	if j.Priority != 0 || j.ConcurrencyKey != "" || j.KeyCap != 0 || j.RateLimit != "" || j.KeyRateLimit != "" {
		t.Fatalf("updated job answers %+v, want no flow fields", j.JobSpec)
	}

	for _, p := range []int{101, -101} {
		_, err := c.TriggerJobWith(ctx, j.ID, apiv1.TriggerRequest{Priority: &p})
		var ae *client.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 400 || !strings.Contains(ae.Message, "priority") {
			t.Errorf("trigger with priority %d: %v, want 400 naming priority", p, err)
		}
	}
	p := 100
	if _, err := c.TriggerJobWith(ctx, j.ID, apiv1.TriggerRequest{Priority: &p}); err != nil {
		t.Errorf("trigger with priority 100: %v", err)
	}
}
