package results

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

func events(t *testing.T, evs ...wire.Event) []byte {
	t.Helper()
	data, err := wire.EncodeEvents(evs...)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// An events message counts for the group its subject names (the applier
// then touches only that group's runs), with its events in order.
func TestDecodeNamesTheSubjectsGroup(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	data := events(t,
		wire.Event{Kind: wire.EventStarted, RunID: 8, JobID: 1, WorkerID: "w1", Status: wire.StatusRunning, At: at, ScheduledAt: at},
		wire.Event{Kind: wire.EventFinished, RunID: 8, JobID: 1, WorkerID: "w1", Status: wire.StatusSucceeded, At: at.Add(time.Second), ScheduledAt: at})
	group, evs, err := decode(stream.Event("billing"), data)
	if err != nil || group != "billing" {
		t.Fatalf("decode = %q, %v; want group billing", group, err)
	}
	if len(evs) != 2 || evs[0].Status != wire.StatusRunning || evs[1].Status != wire.StatusSucceeded {
		t.Errorf("events %+v, want RUNNING then SUCCEEDED", evs)
	}
}

// Anyone who may publish on the events subjects can send anything: a
// message on a subject naming no group, or one that does not decode, or
// one of another protocol version, can never be applied and is dropped
// (terminated) rather than redelivered forever.
func TestDecodeRefusesWhatCanNeverBeApplied(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	good := events(t, wire.Event{Kind: wire.EventFinished, RunID: 8, JobID: 1, Status: wire.StatusFailed, At: at, ScheduledAt: at})
	for _, c := range []struct {
		name, subject, data, want string
	}{
		{"no group", "jetjob.event.", string(good), "is not jetjob.event.<group>"},
		{"two tokens", "jetjob.event.a.b", string(good), "is not jetjob.event.<group>"},
		{"another subject", "jetjob.trigger.billing.any", string(good), "is not jetjob.event.<group>"},
		{"malformed", stream.Event("billing"), `{"v":1,"events":[`, "malformed"},
		{"empty", stream.Event("billing"), `{"v":1,"events":[]}`, "empty"},
		{"another version", stream.Event("billing"), strings.Replace(string(good), `"v":1`, `"v":99`, 1), ""},
	} {
		_, evs, err := decode(c.subject, []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: decode = %v, %v; want an error saying %q", c.name, evs, err, c.want)
		}
		if c.name == "another version" && !errors.Is(err, wire.ErrVersion) {
			t.Errorf("another version: %v, want wire.ErrVersion", err)
		}
	}
}
