package main

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A job's source is stored and returned; an edit that leaves it out (the
// console, a job file, jobs update) keeps it; a bad one is refused.
func TestJobSourceKeptByEdits(t *testing.T) {
	api := isolatedAPI(t, "g")
	c, err := client.New(api.URL, bootstrapToken)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "imported", Handler: "h", ScheduleType: "none", Source: "xxl-job xxl_job#7"})
	if err != nil || j.Source != "xxl-job xxl_job#7" {
		t.Fatalf("create: %+v, %v", j, err)
	}
	spec := j.JobSpec
	spec.Source, spec.Params, spec.Version = "", "edited", j.Version
	u, err := c.UpdateJob(ctx, j.ID, spec)
	if err != nil || u.Source != "xxl-job xxl_job#7" || u.Params != "edited" {
		t.Errorf("an edit without the source: %+v, %v", u, err)
	}
	got := adminJSON[apiv1.Job](t, api, "jobs", "get", strconv.FormatInt(j.ID, 10))
	if got.Source != "xxl-job xxl_job#7" {
		t.Errorf("jobs get: source %q", got.Source)
	}
	_, err = c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "bad", Handler: "h", ScheduleType: "none", Source: strings.Repeat("x", 201)})
	if err == nil || !strings.Contains(err.Error(), "source: at most 200 characters") {
		t.Errorf("a 201-character source: %v", err)
	}
}
