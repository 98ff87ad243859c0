package reroute

import (
	"slices"
	"testing"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Only directed subjects that hold triggers of a worker the registry does
// not list are drained: a live worker's queue, an empty one, the group's
// shared queue and its trigger batches are left alone, and liveness is asked of the
// worker in its own group (an id may be live in another group).
func TestStrandedPicksTheDeadWorkersQueues(t *testing.T) {
	live := map[string]bool{"g/alive": true, "other/w2": true}
	subjects := map[string]uint64{
		stream.TriggerWorker("g", "alive"): 5,
		stream.TriggerWorker("g", "w2"):    3, // dead in g, though w2 of other is live
		stream.TriggerWorker("g", "idle"):  0, // dead, nothing waiting
		stream.TriggerWorker("h", "w1"):    1,
		stream.TriggerAny("g"):             9,
		stream.TriggerBatch("g"):           7, // trigger batches are never moved (nor routed)
		"jetjob.trigger.g.w":               4, // not a directed subject
		"jetjob.trigger.g.x.w3":            4,
	}
	got := stranded(subjects, func(group, id string) bool { return live[group+"/"+id] })
	want := []directed{
		{subject: stream.TriggerWorker("g", "w2"), group: "g", worker: "w2"},
		{subject: stream.TriggerWorker("h", "w1"), group: "h", worker: "w1"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("stranded = %+v, want %+v", got, want)
	}
	if got := stranded(subjects, func(string, string) bool { return true }); len(got) != 0 {
		t.Errorf("with every worker live: stranded = %+v, want none", got)
	}
}

// The copy goes to the group's shared queue with the original's bytes.
// Its Msg-Id derives from the original's stream sequence: two schedulers
// moving the same trigger (or one retrying after a failed ack) produce one
// copy, yet it differs from the run's own Msg-Id, which the stream saw
// when the original was published and would drop the copy as a duplicate.
// Its header counts the dead worker's deliveries, so the worker that gets
// a trigger that may have started asks before running it.
func TestCopyOfADirectedTrigger(t *testing.T) {
	data := []byte(`{"v":1,"run_id":42}`)
	cp, id := copyOf("g", data, 42, 1007, 3)
	if cp.Subject != stream.TriggerAny("g") {
		t.Errorf("copy on %q, want the shared queue %q", cp.Subject, stream.TriggerAny("g"))
	}
	if string(cp.Data) != string(data) {
		t.Errorf("copy carries %q, want the original %q", cp.Data, data)
	}
	if got := cp.Header.Get(stream.ReroutedHeader); got != "2" {
		t.Errorf("%s = %q, want 2 (delivered 3 times, this drain's delivery aside)", stream.ReroutedHeader, got)
	}
	if _, again := copyOf("g", data, 42, 1007, 4); again != id {
		t.Errorf("Msg-Id %q then %q for the same original: two schedulers would publish two copies", id, again)
	}
	if id == wire.MsgID(42) {
		t.Errorf("copy's Msg-Id %q is the run's own: the duplicate window would drop the copy", id)
	}
	if _, other := copyOf("g", data, 42, 2001, 1); other == id {
		t.Errorf("Msg-Id %q for a later directed trigger of the same run too: its copy would be dropped", other)
	}

	// A trigger published to a worker that was already dead reaches
	// nobody before this drain: its copy says so, and needs no start check.
	if cp, _ := copyOf("g", data, 43, 1008, 1); cp.Header.Get(stream.ReroutedHeader) != "0" {
		t.Errorf("first delivery: %s = %q, want 0", stream.ReroutedHeader, cp.Header.Get(stream.ReroutedHeader))
	}
}
