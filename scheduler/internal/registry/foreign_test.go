package registry

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
)

// The key a heartbeat is put under is what NATS permissions bind (a
// group's credential may write $KV.JETJOB_WORKERS.<group>.<its ids>), so
// the heartbeat counts only when it names exactly that group and worker: a
// worker of group ops writing under its own key a heartbeat of another
// group, or of another worker of its group (which routing would then send
// that worker's triggers for), is refused and counted.
func TestHeartbeatMustNameItsKey(t *testing.T) {
	r, _ := newRegistry(t, 0)
	before := foreign.Total(foreign.Heartbeat)
	r.heard(stream.WorkerKey("ops", "w1"), jetstream.KeyValuePut, heartbeat(t, "billing", "w1", t0))
	r.heard(stream.WorkerKey("ops", "w1"), jetstream.KeyValuePut, heartbeat(t, "ops", "w2", t0))
	r.heard(stream.WorkerKey("ops", "w3"), jetstream.KeyValuePut, heartbeat(t, "ops", "w3", t0))
	if got := names(r.Live("")); len(got) != 1 || got[0] != "ops/w3" {
		t.Errorf("live %v, want only ops/w3 (the heartbeat under its own key)", got)
	}
	if n := foreign.Total(foreign.Heartbeat) - before; n != 2 {
		t.Errorf("%v foreign heartbeats counted, want 2", n)
	}
}
