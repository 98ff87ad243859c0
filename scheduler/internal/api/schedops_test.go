package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
)

// groupGClient is a client of a fresh server whose store holds the group
// "g", where the schedule operation tests make their jobs and workflows.
func groupGClient(t *testing.T) *client.Client {
	t.Helper()
	srv, pool := server(t)
	if _, err := pool.Exec(context.Background(), `INSERT INTO job_groups (name) VALUES ('g')`); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every schedule operation input is validated: a bad one answers 400
// naming the field, and a good one is stored and shown.
func TestScheduleOpsValidation(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	base := apiv1.JobSpec{Group: "g", Name: "j", Handler: "h", ScheduleType: "cron", ScheduleExpr: "0 */10 * * * *"}
	start := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	end := start.Add(-time.Minute)
	for _, bad := range []struct {
		edit func(*apiv1.JobSpec)
		want string
	}{
		{func(s *apiv1.JobSpec) { s.Jitter = apiv1.Duration(10 * time.Minute) }, "jitter"},
		{func(s *apiv1.JobSpec) { s.Jitter = apiv1.Duration(-time.Second) }, "jitter"},
		{func(s *apiv1.JobSpec) { s.MisfireThreshold = apiv1.Duration(-time.Second) }, "misfire_threshold"},
		{func(s *apiv1.JobSpec) { s.MaxCatchup = -1 }, "max_catchup"},
		{func(s *apiv1.JobSpec) { s.StartAt, s.EndAt = &start, &end }, "start_at"},
	} {
		spec := base
		bad.edit(&spec)
		_, err := c.CreateJob(ctx, spec)
		if ae, ok := err.(*client.APIError); !ok || ae.StatusCode != 400 || !strings.Contains(ae.Message, bad.want) {
			t.Errorf("create %+v: %v, want 400 naming %s", spec, err, bad.want)
		}
	}

	spec := base
	spec.Jitter, spec.MisfireThreshold, spec.MaxCatchup = apiv1.Duration(time.Minute), apiv1.Duration(time.Minute), 7
	spec.StartAt = &start
	j, err := c.CreateJob(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(j.Jitter) != time.Minute || time.Duration(j.MisfireThreshold) != time.Minute || j.MaxCatchup != 7 ||
		j.StartAt == nil || !j.StartAt.Equal(start) {
		t.Errorf("stored job %+v does not show the schedule options given", j)
	}
	if j.NextFireAt == nil || j.NextFireAt.Before(start) {
		t.Errorf("next fire %v is before start_at %s", j.NextFireAt, start)
	}
	next, err := c.NextFires(ctx, j.ID, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range next.Times {
		if at.Before(start) || (i > 0 && !at.After(next.Times[i-1])) {
			t.Errorf("next fires %v: want ascending, none before start_at %s", next.Times, start)
		}
	}

	if _, err := c.EnableJobWith(ctx, j.ID, apiv1.EnableRequest{CatchUp: "all"}); err == nil || !strings.Contains(err.Error(), "catch_up") {
		t.Errorf("enable with catch_up all: %v, want 400 naming catch_up", err)
	}
	if _, err := c.DisableJobWith(ctx, j.ID, apiv1.DisableRequest{Note: strings.Repeat("x", 1001)}); err == nil || !strings.Contains(err.Error(), "note") {
		t.Errorf("disable with a 1001-character note: %v, want 400 naming note", err)
	}
	// Enable and disable still take no body.
	if _, err := c.DisableJob(ctx, j.ID); err != nil {
		t.Errorf("disable without a body: %v", err)
	}
	if _, err := c.EnableJob(ctx, j.ID); err != nil {
		t.Errorf("enable without a body: %v", err)
	}
}

// A replace that enables a disabled job (what jetjob apply sends) drops
// the note of its disable, as enabling it does; one that keeps it
// disabled keeps the note.
func TestReplaceThatEnablesDropsThePauseNote(t *testing.T) {
	c := groupGClient(t)
	ctx := context.Background()
	j, err := c.CreateJob(ctx, apiv1.JobSpec{Group: "g", Name: "paused", Handler: "h", ScheduleType: "cron", ScheduleExpr: "0 */10 * * * *"})
	if err != nil {
		t.Fatal(err)
	}
	off, err := c.DisableJobWith(ctx, j.ID, apiv1.DisableRequest{Note: "db migration"})
	if err != nil {
		t.Fatal(err)
	}
	spec := off.JobSpec
	spec.Description, spec.Version = "still paused", off.Version
	kept, err := c.UpdateJob(ctx, j.ID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Enabled || kept.PausedNote != "db migration" || kept.PausedAt == nil {
		t.Fatalf("a replace that leaves the job disabled: enabled %v, note %q, at %v; want the note kept", kept.Enabled, kept.PausedNote, kept.PausedAt)
	}
	on := true
	spec.Enabled, spec.Version = &on, kept.Version
	got, err := c.UpdateJob(ctx, j.ID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Enabled || got.PausedNote != "" || got.PausedAt != nil || got.PausedBy != "" {
		t.Fatalf("a replace that enables: enabled %v, note %q, at %v, by %q; want no pause left", got.Enabled, got.PausedNote, got.PausedAt, got.PausedBy)
	}
}
