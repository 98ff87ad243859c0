package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/wire"
)

// foreignLogLine is a well-formed log line of run (of job), as a worker of
// another group than the run's can publish it on its own group's subject.
func foreignLogLine(t *testing.T, run, job int64) []byte {
	t.Helper()
	data, err := wire.EncodeLogLine(&wire.LogLine{RunID: run, JobID: job, Seq: 1, At: time.Now().UTC(),
		Level: "error", Msg: "written by a worker of another group"})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkForeignRefused checks, after TestHostileMessages published its
// messages, what a message on group g's subjects about run hRun of group h
// left behind: no line in the run's log (runlog reads h's subject only),
// and the foreign events counted (jetjob_foreign_messages_total), at least
// the two about hRun, besides being logged.
func checkForeignRefused(t *testing.T, sys *system, hRun int64, eventsBefore float64) {
	t.Helper()
	logs, err := sys.api.RunLogs(context.Background(), hRun, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs.Lines) != 0 {
		t.Errorf("group h's run %d shows %d log lines, the first %q: written on group g's subject, want none", hRun, len(logs.Lines), logs.Lines[0].Msg)
	}
	if n := foreign.Total(foreign.Events) - eventsBefore; n < 2 {
		t.Errorf("%v foreign events counted, want at least the 2 about group h's run", n)
	}
}
