package lost

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/jetjob/jetjob/shared/stream"
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
