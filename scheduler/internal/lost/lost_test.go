package lost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// The monitor reads the advisory the NATS server publishes when a trigger
// runs out of deliveries (the server's own type, marshalled as the server
// does), and drops one that names no message to look up.
func TestParseAdvisory(t *testing.T) {
	data, err := json.Marshal(server.JSConsumerDeliveryExceededAdvisory{
		TypedEvent: server.TypedEvent{Type: server.JSConsumerDeliveryExceededAdvisoryType, ID: "adv1", Time: time.Now().UTC()},
		Stream:     stream.Triggers, Consumer: stream.WorkerConsumer("g", "w1"), StreamSeq: 42, Deliveries: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	adv, ok := parseAdvisory(data)
	if !ok || adv.StreamSeq != 42 || adv.Deliveries != 5 || adv.Stream != stream.Triggers {
		t.Errorf("parseAdvisory(%s) = %+v, %v; want stream_seq 42 after 5 deliveries", data, adv, ok)
	}
	for _, bad := range []string{``, `{`, `null`, `{}`, `{"stream_seq":0,"deliveries":5}`, `{"stream_seq":"42"}`} {
		if adv, ok := parseAdvisory([]byte(bad)); ok {
			t.Errorf("parseAdvisory(%q) = %+v, want it dropped", bad, adv)
		}
	}
}

// A spent trigger's run ends LOST by an ordinary finished event that the
// results applier accepts: on the events subject of the trigger's group
// (the applier ignores an event for a run of another group), with the
// run's fire time (its partition), saying why; a redelivered advisory
// publishes it again under the same Msg-Id, which the stream drops.
func TestLostEvent(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	trig := &wire.Trigger{RunID: 77, JobID: 7, Group: "billing", Handler: "report",
		ScheduledAt: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	ev, subject, msgID := lostEvent(trig, 5, at)

	if subject != stream.Event("billing") {
		t.Errorf("published on %q, want %q", subject, stream.Event("billing"))
	}
	body, err := wire.EncodeEvents(ev)
	if err != nil {
		t.Fatalf("the LOST event does not encode (the applier would never see it): %v", err)
	}
	evs, err := wire.DecodeEvents(body)
	if err != nil || len(evs) != 1 {
		t.Fatalf("DecodeEvents = %v, %v", evs, err)
	}
	got := evs[0]
	if got.Kind != wire.EventFinished || got.Status != wire.StatusLost || got.RunID != 77 || got.JobID != 7 {
		t.Errorf("event %+v, want run 77 of job 7 finished LOST", got)
	}
	if !got.ScheduledAt.Equal(trig.ScheduledAt) || !got.At.Equal(at) {
		t.Errorf("scheduled %s, at %s; want the trigger's fire time %s and %s", got.ScheduledAt, got.At, trig.ScheduledAt, at)
	}
	if !strings.Contains(got.Message, "delivered 5 times") {
		t.Errorf("message %q does not say how often it was delivered", got.Message)
	}

	if _, _, again := lostEvent(trig, 6, at.Add(time.Minute)); again != msgID {
		t.Errorf("Msg-Id %q, then %q for a redelivered advisory: the run's LOST event would be published twice", msgID, again)
	}
	other := *trig
	other.RunID = 78
	if _, _, id := lostEvent(&other, 5, at); id == msgID {
		t.Errorf("runs 77 and 78 share the Msg-Id %q: the second LOST event would be dropped", id)
	}
}

// A spent trigger batch names several runs: the monitor publishes the LOST
// event of every valid one, each under its own Msg-Id (so a run's event is
// stored once however often the advisory comes, and an ended run is left
// as it is by the applier), and deletes the message only then. A line
// that names no run is left out.
func TestSpentBatchEndsEveryRunLost(t *testing.T) {
	ctx, js, triggers, events := monitorEnv(t)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var ts []*wire.Trigger
	for id := int64(101); id <= 103; id++ {
		ts = append(ts, &wire.Trigger{V: wire.Version, RunID: id, JobID: id, Group: "g", Handler: "h",
			TriggerType: wire.TriggerSchedule, ScheduledAt: at})
	}
	data, err := wire.EncodeTriggerBatch(ts)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte("\nnot a trigger")...)
	ack, err := js.Publish(ctx, stream.TriggerBatch("g"), data, jetstream.WithMsgID(wire.BatchMsgID(101)))
	if err != nil {
		t.Fatal(err)
	}
	m := New(js, nil, zaptest.NewLogger(t))
	adv := fmt.Appendf(nil, `{"stream":%q,"consumer":%q,"stream_seq":%d,"deliveries":5}`, stream.Triggers, stream.BatchConsumer("g"), ack.Sequence)
	if err := m.handle(ctx, triggers, adv); err != nil {
		t.Fatal(err)
	}
	if _, err := triggers.GetMsg(ctx, ack.Sequence); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the spent batch is still stored (%v), want it deleted", err)
	}
	// Each run's event once: handling the message's events again (the
	// advisory redelivered after a failure half-way) stores nothing new.
	for _, trig := range ts {
		ev, subject, msgID := lostEvent(trig, 5, time.Now())
		body, err := wire.EncodeEvents(ev)
		if err != nil {
			t.Fatal(err)
		}
		if pa, err := js.Publish(ctx, subject, body, jetstream.WithMsgID(msgID)); err != nil || !pa.Duplicate {
			t.Errorf("run %d's LOST event published again: %+v, %v; want a duplicate of the monitor's", trig.RunID, pa, err)
		}
	}
	batch, err := events.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var lost []int64
	for msg := range batch.Messages() {
		evs, err := wire.DecodeEvents(msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Status != wire.StatusLost || ev.Kind != wire.EventFinished {
				t.Errorf("event %+v, want finished LOST", ev)
			}
			lost = append(lost, ev.RunID)
		}
	}
	slices.Sort(lost)
	if !slices.Equal(lost, []int64{101, 102, 103}) {
		t.Errorf("LOST events for runs %v, want one for each of 101, 102, 103", lost)
	}
	var counted dto.Metric
	if err := m.lost.WithLabelValues("g").Write(&counted); err != nil {
		t.Fatal(err)
	}
	if got := counted.GetCounter().GetValue(); got != 3 {
		t.Errorf("jetjob_lost_runs_total{group=g} = %v, want 3", got)
	}
}

// monitorEnv is a NATS server with jetjob's streams, for a monitor's
// handle: the triggers stream and a consumer of group g's events.
func monitorEnv(t *testing.T) (context.Context, jetstream.JetStream, jetstream.Stream, jetstream.Consumer) {
	t.Helper()
	_, _, js := jstest.Streams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	triggers, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	events, err := js.CreateOrUpdateConsumer(ctx, stream.Events, jetstream.ConsumerConfig{
		Durable: "test", FilterSubject: stream.Event("g"), AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, triggers, events
}
