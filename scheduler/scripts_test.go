package scheduler_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/client"
	"github.com/jetjob/jetjob/worker"
	"github.com/jetjob/jetjob/worker/builtin"
)

// scriptHandlers registers the drop-in worker's script handler.
func scriptHandlers(w *worker.Worker) { w.Handle("script", builtin.Script(builtin.ScriptConfig{})) }

// ranVersion waits for run id to succeed and returns the line its script
// printed ("ran vN with P").
func ranVersion(t *testing.T, api *client.Client, id int64) string {
	t.Helper()
	waitStatus(t, api, id, "SUCCEEDED", 60*time.Second)
	var line string
	testwait.Eventually(t, 30*time.Second, fmt.Sprintf("run %d's log line", id), func() bool {
		logs, err := api.RunLogs(t.Context(), id, 0, 100)
		if err != nil {
			return false
		}
		for _, l := range logs.Lines {
			if strings.HasPrefix(l.Msg, "ran v") {
				line, _, _ = strings.Cut(l.Msg, " {")
				return true
			}
		}
		return false
	})
	return line
}

// A script job's runs run the version current when they were planned,
// carried in the trigger: a manual run after a save runs the new one, the
// fires of its schedule after the save too, and a rollback's version runs
// the old source.
func TestScriptJobRunsItsCurrentVersion(t *testing.T) {
	t.Parallel()
	sys := startSystem(t, scriptHandlers)
	src := func(word string) *string {
		s := "#!/bin/bash\necho \"ran v$JETJOB_SCRIPT_VERSION with $1 " + word + "\"\n"
		return &s
	}
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "tick", Handler: "script", ScriptLanguage: "bash",
		Script: src("one"), Params: "p", ScheduleType: "none"})
	if got := ranVersion(t, sys.api, trigger(t, sys.api, job.ID, nil).ID); got != "ran v1 with p one" {
		t.Fatalf("first run printed %q", got)
	}
	if _, err := sys.api.SaveScript(t.Context(), job.ID, apiv1.ScriptSave{Source: *src("two"), Remark: "two"}); err != nil {
		t.Fatal(err)
	}
	if got := ranVersion(t, sys.api, trigger(t, sys.api, job.ID, nil).ID); got != "ran v2 with p two" {
		t.Fatalf("after the save a run printed %q", got)
	}
	if _, err := sys.api.RollbackScript(t.Context(), job.ID, 1); err != nil {
		t.Fatal(err)
	}
	if got := ranVersion(t, sys.api, trigger(t, sys.api, job.ID, nil).ID); got != "ran v3 with p one" {
		t.Fatalf("after the rollback a run printed %q", got)
	}

	// Scheduled fires: every second, then a save; a fire planned after
	// the save runs version 4.
	j, err := sys.api.GetJob(t.Context(), job.ID)
	if err != nil {
		t.Fatal(err)
	}
	spec := j.JobSpec
	spec.ScheduleType, spec.ScheduleExpr, spec.Version, spec.Script = "cron", "* * * * * *", j.Version, nil
	if _, err := sys.api.UpdateJob(t.Context(), job.ID, spec); err != nil {
		t.Fatal(err)
	}
	saved, err := sys.api.SaveScript(t.Context(), job.ID, apiv1.ScriptSave{Source: *src("four"), Remark: "four"})
	if err != nil {
		t.Fatal(err)
	}
	var runID int64
	testwait.Eventually(t, 60*time.Second, "a scheduled run after the save", func() bool {
		runs, err := sys.api.SearchRuns(t.Context(), client.SearchRunsOptions{JobID: job.ID, TriggerTypes: []string{"schedule"}, Statuses: []string{"SUCCEEDED"}})
		if err != nil {
			return false
		}
		for _, r := range runs.Runs {
			if r.ScheduledAt.After(saved.CreatedAt.Add(time.Second)) {
				runID = r.ID
				return true
			}
		}
		return false
	})
	if got := ranVersion(t, sys.api, runID); got != "ran v4 with p four" {
		t.Fatalf("a fire after the save printed %q", got)
	}
}
