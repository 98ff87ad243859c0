package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/worker"
)

// A handler's log lines are readable through the API while the run lasts
// (follow mode tails them and ends when the run ends) and after it ended
// (paged by cursor).
func TestRunLogs(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("chatty", func(ctx context.Context, j *worker.Job) error {
			for i := 1; i <= 3; i++ {
				j.Logger.Info(fmt.Sprintf("step %d", i), zap.Int("i", i))
			}
			<-release
			j.Logger.Warn("done")
			return nil
		})
	})
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "chatty", Handler: "chatty", ScheduleType: "none"})
	run := trigger(t, sys.api, job.ID, nil)
	followed := make(chan []string, 1)
	go func() {
		var got []string
		err := sys.api.FollowRunLogs(ctx, run.ID, 0, func(l apiv1.LogLine) error {
			got = append(got, l.Msg)
			if len(got) == 3 {
				close(release) // the run ends only after the tail saw its first lines
			}
			return nil
		})
		if err != nil {
			t.Errorf("follow: %v", err)
		}
		followed <- got
	}()
	select {
	case got := <-followed:
		// Structured fields follow the message as JSON.
		want := []string{`step 1 {"i":1}`, `step 2 {"i":2}`, `step 3 {"i":3}`, "done"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("followed %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("follow did not end after the run ended")
	}
	r, err := sys.api.GetRun(ctx, run.ID)
	if err != nil || r.Status != "SUCCEEDED" {
		t.Fatalf("run %+v, %v: want SUCCEEDED", r, err)
	}

	// After the end: page two lines at a time by cursor.
	var all []apiv1.LogLine
	var from uint64
	for range 10 {
		page, err := sys.api.RunLogs(ctx, run.ID, from, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Lines) == 0 {
			break
		}
		all = append(all, page.Lines...)
		from = page.Next
	}
	if len(all) != 4 || !strings.HasPrefix(all[0].Msg, "step 1") || all[3].Msg != "done" || all[3].Level != "warn" {
		t.Fatalf("paged lines %+v, want the 4 lines in order", all)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Cursor <= all[i-1].Cursor {
			t.Fatalf("cursors not increasing: %d then %d", all[i-1].Cursor, all[i].Cursor)
		}
	}
}
