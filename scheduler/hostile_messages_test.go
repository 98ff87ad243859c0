package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
	"github.com/jetjob/jetjob/scheduler/apiv1"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker"
)

// hostileMsg is one message published straight onto a jetjob subject.
type hostileMsg struct {
	what    string
	subject string
	data    []byte
	// logged says the message itself must be logged exactly once with its
	// subject and stream sequence (false for a well-formed trigger the
	// worker cannot tell from a real one: what it causes is checked instead).
	logged bool
	// refused marks a trigger no scheduler signed: logged twice, by the
	// worker that refuses it and by the lost-run monitor that deletes it
	// once its deliveries run out.
	refused bool
	seq     uint64
	// header is published as it is; nil: a message on a trigger subject
	// is signed as a scheduler signs what it publishes (so that what
	// follows the signature check is tested too).
	header nats.Header
}

// Malformed and foreign messages on jetjob.trigger.* and jetjob.event.*
// are each logged once with their subject and stream sequence and then
// terminated or skipped: none stays in a stream for redelivery, none
// changes a run it has no business with, and neither the worker nor the
// results applier stops — runs triggered afterwards complete. Triggers are
// signed as a scheduler would sign them, but for those that test the
// signature itself: those never run.
func TestHostileMessages(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	sys := startSystem(t, func(w *worker.Worker) {
		w.Handle("ok", func(context.Context, *worker.Job) error { return nil })
	}, func(c *systemConfig) {
		c.Logger = zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	})
	ctx := context.Background()
	job := createJob(t, sys.api, apiv1.JobSpec{Group: "g", Name: "ok", Handler: "ok", ScheduleType: "none"})
	runOK := func() *apiv1.Run {
		t.Helper()
		return waitStatus(t, sys.api, trigger(t, sys.api, job.ID, nil).ID, "SUCCEEDED", 20*time.Second)
	}
	done := runOK() // a finished run of group g
	// A run of another group, which has no worker: it waits, TRIGGERED.
	if _, err := sys.api.CreateGroup(ctx, apiv1.Group{Name: "h"}); err != nil {
		t.Fatal(err)
	}
	hJob := createJob(t, sys.api, apiv1.JobSpec{Group: "h", Name: "other", Handler: "ok", ScheduleType: "none"})
	hRun := trigger(t, sys.api, hJob.ID, nil)

	now := time.Now().UTC()
	trig := func(mut func(*wire.Trigger)) []byte {
		tr := wire.Trigger{V: wire.Version, RunID: 990001, JobID: job.ID, Group: "g", Handler: "ok",
			TriggerType: wire.TriggerManual, ScheduledAt: now}
		mut(&tr)
		if tr.V == wire.Version {
			b, err := wire.EncodeTrigger(&tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		// EncodeTrigger writes only the current version: by hand, then.
		return []byte(fmt.Sprintf(`{"v":%d,"run_id":%d,"job_id":%d,"group":%q,"handler":%q,"trigger_type":"manual","scheduled_at":%q,"attempt":0,"shard_index":0,"shard_total":0}`,
			tr.V, tr.RunID, tr.JobID, tr.Group, tr.Handler, now.Format(time.RFC3339Nano)))
	}
	event := func(e wire.Event) []byte {
		if e.At.IsZero() {
			e.At = now
		}
		if e.JobID == 0 {
			e.JobID = job.ID
		}
		b, err := wire.EncodeEvents(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	finished := func(run int64, status wire.Status, at time.Time, msg string) wire.Event {
		return wire.Event{Kind: wire.EventFinished, RunID: run, Status: status, ScheduledAt: at, Message: msg, WorkerID: "intruder"}
	}
	anyG, evG := stream.TriggerAny("g"), stream.Event("g")
	msgs := []*hostileMsg{
		{what: "trigger: not JSON", subject: anyG, data: []byte("{not json"), logged: true},
		{what: "trigger: empty", subject: anyG, data: []byte{}, logged: true},
		{what: "trigger: JSON but no trigger", subject: anyG, data: []byte(`{"hello":"world"}`), logged: true},
		{what: "trigger: version 2, unknown run", subject: anyG, data: trig(func(tr *wire.Trigger) { tr.V = 2 }), logged: true},
		{what: "trigger: a run of group h on g's subject", subject: anyG, data: trig(func(tr *wire.Trigger) {
			tr.RunID, tr.JobID, tr.Group, tr.ScheduledAt = hRun.ID, hJob.ID, "h", hRun.ScheduledAt
		}), logged: true},
		{what: "trigger: group g naming a run of group h", subject: anyG, data: trig(func(tr *wire.Trigger) {
			tr.RunID, tr.ScheduledAt = hRun.ID, hRun.ScheduledAt
		})},
		{what: "trigger: unknown run, handler with a NUL", subject: anyG, data: trig(func(tr *wire.Trigger) {
			tr.RunID, tr.Handler = 990002, "no\x00pe"
		})},
		{what: "events: not JSON", subject: evG, data: []byte("{{{"), logged: true},
		{what: "events: version 2", subject: evG, data: []byte(fmt.Sprintf(`{"v":2,"events":[{"kind":"finished","run_id":%d,"job_id":%d,"status":"FAILED","at":%q}]}`,
			done.ID, job.ID, now.Format(time.RFC3339Nano))), logged: true},
		{what: "events: empty batch", subject: evG, data: []byte(`{"v":1,"events":[]}`), logged: true},
		{what: "events: started with a terminal status", subject: evG, data: []byte(fmt.Sprintf(`{"v":1,"events":[{"kind":"started","run_id":%d,"job_id":%d,"status":"SUCCEEDED","at":%q}]}`,
			done.ID, job.ID, now.Format(time.RFC3339Nano))), logged: true},
		{what: "events: a map on a failed event", subject: evG, data: []byte(fmt.Sprintf(`{"v":1,"events":[{"kind":"finished","run_id":%d,"job_id":%d,"status":"FAILED","at":%q,"map":[1,2]}]}`,
			done.ID, job.ID, now.Format(time.RFC3339Nano))), logged: true},
		{what: "events: a map that is no list", subject: evG, data: []byte(fmt.Sprintf(`{"v":1,"events":[{"kind":"finished","run_id":990006,"job_id":%d,"status":"SUCCEEDED","at":%q,"map":{"a":1}}]}`,
			job.ID, now.Format(time.RFC3339Nano))), logged: true},
		{what: "events: a map of too many items", subject: evG, data: []byte(fmt.Sprintf(`{"v":1,"events":[{"kind":"finished","run_id":990007,"job_id":%d,"status":"SUCCEEDED","at":%q,"map":[0%s]}]}`,
			job.ID, now.Format(time.RFC3339Nano), strings.Repeat(",0", wire.MaxMapItems))), logged: true},
		{what: "events: subject naming no group", subject: "jetjob.event.g.x", data: event(finished(done.ID, wire.StatusFailed, done.ScheduledAt, "x")), logged: true},
		{what: "events: unknown run", subject: evG, data: event(finished(990003, wire.StatusFailed, now, "who?")), logged: true},
		{what: "events: unknown run, no scheduled_at", subject: evG, data: event(finished(990004, wire.StatusFailed, time.Time{}, "who?")), logged: true},
		{what: "events: unknown run, NUL in message", subject: evG, data: event(finished(990005, wire.StatusFailed, now, "bin\x00ary")), logged: true},
		{what: "events: a run of group h on g's subject", subject: evG, data: event(finished(hRun.ID, wire.StatusFailed, hRun.ScheduledAt, "not yours")), logged: true},
		{what: "events: a finished run", subject: evG, data: event(finished(done.ID, wire.StatusFailed, done.ScheduledAt, "too late")), logged: true},
		{what: "events: the same again (duplicate)", subject: evG, data: event(finished(done.ID, wire.StatusFailed, done.ScheduledAt, "too late")), logged: true},
		{what: "events: a started event for a finished run", subject: evG, data: event(wire.Event{Kind: wire.EventStarted, RunID: done.ID,
			Status: wire.StatusRunning, ScheduledAt: done.ScheduledAt}), logged: true},
		// Group g's credential may publish on jetjob.log.g.* and
		// jetjob.event.g whatever run it names (hostile_foreign_test.go).
		{what: "log line: a run of group h on g's log subject", subject: stream.Log("g", hRun.ID), data: foreignLogLine(t, hRun.ID, hJob.ID)},
		{what: "events: a started event for a run of group h on g's subject", subject: evG, data: event(wire.Event{Kind: wire.EventStarted,
			RunID: hRun.ID, JobID: hJob.ID, Status: wire.StatusRunning, ScheduledAt: hRun.ScheduledAt, WorkerID: "intruder"}), logged: true},
		// Triggers no scheduler signed (hostile_foreign_test.go): refused
		// before anything runs, logged once per subject and key.
		unsignedTrigger(anyG, trig(func(tr *wire.Trigger) { tr.RunID = 990010 })),
		strangerTrigger(t, anyG, trig(func(tr *wire.Trigger) { tr.RunID = 990011 })),
		replayedTrigger(anyG, "h", trig(func(tr *wire.Trigger) { tr.RunID = 990012 })),
		loneAsBatch(stream.TriggerBatch("g"), trig(func(tr *wire.Trigger) { tr.RunID = 990013 })),
	}
	foreignBefore := foreign.Total(foreign.Events)
	unsignedBefore := foreign.Total(foreign.LostUnsigned)
	js, err := jetstream.New(sys.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		nm := nats.NewMsg(m.subject)
		nm.Data = m.data
		if m.header != nil {
			nm.Header = m.header
		} else {
			signAsScheduler(nm)
		}
		ack, err := js.PublishMsg(ctx, nm)
		if err != nil {
			t.Fatalf("publish %s: %v", m.what, err)
		}
		m.seq = ack.Sequence
	}

	// Normal runs still complete, after every bad message was handled.
	for range 3 {
		runOK()
	}
	// Every bad message is gone from its stream: nothing left to redeliver.
	// A refused trigger comes back 5 s after each refusal until its
	// deliveries run out (5), then the lost-run monitor deletes it.
	testwait.Eventually(t, 60*time.Second, "the bad messages to leave the streams", func() bool {
		return streamMsgs(t, js, stream.Triggers, "jetjob.trigger.g.>") == 0 && streamMsgs(t, js, stream.Events, "jetjob.event.>") == 0
	})
	for _, c := range []struct{ stream, consumer string }{{stream.Events, stream.EventsConsumer}, {stream.Triggers, stream.AnyConsumer("g")}} {
		info, err := js.Consumer(ctx, c.stream, c.consumer)
		if err != nil {
			t.Fatal(err)
		}
		ci := info.CachedInfo()
		if ci.NumAckPending != 0 || ci.NumPending != 0 {
			t.Errorf("consumer %s: %d pending, %d awaiting ack, want none", c.consumer, ci.NumPending, ci.NumAckPending)
		}
	}

	// Each logged once, with its subject and stream sequence.
	for _, m := range msgs {
		if !m.logged {
			continue
		}
		n := logs.FilterField(zap.Uint64("stream_seq", m.seq)).FilterField(zap.String("subject", m.subject)).Len()
		want := 1
		if m.refused {
			want = 2
		}
		if n != want {
			t.Errorf("%s (seq %d): logged %d times with its subject and sequence, want %d", m.what, m.seq, n, want)
		}
	}
	// What the well-formed foreign triggers caused was refused by the applier.
	for _, id := range []int64{990001, 990002, hRun.ID} {
		if logs.FilterMessageSnippet("does not exist in its subject's group").FilterField(zap.Int64("run_id", id)).Len() == 0 {
			t.Errorf("no warning for the events about run %d", id)
		}
	}
	// No run was touched by a message that had no business with it.
	if r, err := sys.api.GetRun(ctx, done.ID); err != nil || r.Status != "SUCCEEDED" || r.Message != "" {
		t.Errorf("finished run after hostile events: %+v (%v), want SUCCEEDED as it was", r, err)
	}
	if r, err := sys.api.GetRun(ctx, hRun.ID); err != nil || (r.Status != "SCHEDULED" && r.Status != "TRIGGERED") || r.WorkerID != "" {
		t.Errorf("group h's run after hostile messages on group g: %+v (%v), want it untouched, waiting for a worker of h", r, err)
	}
	var n int
	if err := sys.pool.QueryRow(ctx, `SELECT count(*) FROM job_runs WHERE id >= 990000`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d runs created by forged messages (%v)", n, err)
	}
	// The worker is still there.
	if l, err := sys.api.ListWorkers(ctx, "g"); err != nil || len(l.Workers) != 1 {
		t.Errorf("workers of g after hostile messages: %+v (%v)", l, err)
	}
	checkForeignRefused(t, sys, hRun.ID, foreignBefore)
	checkUnsignedNeverRan(t, logs, 990010, 990011, 990012, 990013)
	if got := foreign.Total(foreign.LostUnsigned) - unsignedBefore; got != 4 {
		t.Errorf("%v spent triggers deleted unsigned by the lost-run monitor, want the 4 no scheduler signed", got)
	}
}

// streamMsgs counts the messages of a stream on subjects matching filter.
func streamMsgs(t *testing.T, js jetstream.JetStream, name, filter string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}
