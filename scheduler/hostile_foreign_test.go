package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/trigsign"
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

// signAsScheduler signs m, if it is on a trigger subject, as the tests'
// schedulers sign what they publish.
func signAsScheduler(m *nats.Msg) {
	group, ok := stream.ParseTrigger(m.Subject)
	if !ok {
		return
	}
	_, batch := stream.ParseTriggerBatch(m.Subject)
	testTriggerSigner.Sign(m.Header, group, batch, m.Data)
}

// unsignedTrigger is a trigger on subject with no signature: what anyone
// allowed to publish there could send.
func unsignedTrigger(subject string, data []byte) *hostileMsg {
	return &hostileMsg{what: "trigger: unsigned", subject: subject, data: data, logged: true, refused: true, header: nats.Header{}}
}

// strangerTrigger is a trigger signed by a key no worker accepts.
func strangerTrigger(t *testing.T, subject string, data []byte) *hostileMsg {
	t.Helper()
	s, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{}
	group, _ := stream.ParseTrigger(subject)
	s.Sign(h, group, false, data)
	return &hostileMsg{what: "trigger: signed by a key no worker accepts", subject: subject, data: data, logged: true, refused: true, header: h}
}

// replayedTrigger is a trigger a scheduler signed for group from,
// published on subject (another group's).
func replayedTrigger(subject, from string, data []byte) *hostileMsg {
	h := nats.Header{}
	testTriggerSigner.Sign(h, from, false, data)
	return &hostileMsg{what: "trigger: signed for group " + from + ", replayed on " + subject, subject: subject, data: data, logged: true, refused: true, header: h}
}

// loneAsBatch is a lone trigger's signature on a trigger batch subject.
func loneAsBatch(subject string, data []byte) *hostileMsg {
	h := nats.Header{}
	group, _ := stream.ParseTrigger(subject)
	testTriggerSigner.Sign(h, group, false, data)
	return &hostileMsg{what: "trigger batch: signed as a lone trigger", subject: subject, data: data, logged: true, refused: true, header: h}
}

// checkUnsignedNeverRan checks that the runs of the triggers no scheduler
// signed never ran: a run that ran would have reported on itself, and the
// applier would have warned about its events (these runs exist nowhere).
// The caller has waited for the trigger and event streams to drain.
func checkUnsignedNeverRan(t *testing.T, logs *observer.ObservedLogs, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if n := logs.FilterMessageSnippet("does not exist in its subject's group").FilterFieldKey("run_id").Filter(func(e observer.LoggedEntry) bool {
			for _, f := range e.Context {
				if f.Key == "run_id" && f.Integer == id {
					return true
				}
			}
			return false
		}).Len(); n != 0 {
			t.Errorf("run %d reported on: its trigger, which no scheduler signed, ran", id)
		}
	}
}
