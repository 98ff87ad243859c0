package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// A params template is checked when the job is written (a mistake answers
// 400 naming it), and a manual trigger's run stores its params rendered
// for the run's time in the job's zone.
func TestParamsTemplateValidatedAndRenderedOnTrigger(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	spec := apiv1.JobSpec{Group: "g", Name: "t", Handler: "h", ScheduleType: "none", Timezone: "Pacific/Auckland",
		ParamsTemplate: true, Params: `{{ .ScheduledAt | dat "2006" }}`}
	_, err := c.CreateJob(ctx, spec)
	if ae, ok := err.(*client.APIError); !ok || ae.StatusCode != 400 || !strings.Contains(ae.Message, `function "dat" not defined`) {
		t.Errorf("a template calling an unknown function: %v, want 400 naming it", err)
	}
	spec.Params = `day={{ .ScheduledAt | date "2006-01-02" }}`
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	run, err := c.TriggerJobWith(ctx, j.ID, apiv1.TriggerRequest{At: &at})
	if err != nil {
		t.Fatal(err)
	}
	auckland, _ := time.LoadLocation("Pacific/Auckland")
	if want := "day=" + at.In(auckland).Format("2006-01-02"); run.Params != want {
		t.Errorf("triggered run's params %q, want %q", run.Params, want)
	}
	// Params given with the trigger are the run's as they are.
	own := "day=manual"
	run, err = c.TriggerJobWith(ctx, j.ID, apiv1.TriggerRequest{Params: &own})
	if err != nil {
		t.Fatal(err)
	}
	if run.Params != own {
		t.Errorf("a trigger with its own params stored %q", run.Params)
	}
}
