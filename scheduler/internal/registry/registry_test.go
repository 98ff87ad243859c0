package registry

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/fakeclock"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func newRegistry(t *testing.T, ttl time.Duration) (*Registry, *fakeclock.Clock) {
	t.Helper()
	r := New(nil, stream.Config{WorkerTTL: ttl}, zaptest.NewLogger(t))
	clk := fakeclock.New(t0)
	r.now = clk.Now
	return r, clk
}

// heartbeat is a valid heartbeat of worker id in group, as a worker
// encodes it; beatAt is the worker's own clock.
func heartbeat(t *testing.T, group, id string, beatAt time.Time) []byte {
	t.Helper()
	data, err := wire.EncodeWorkerInfo(&wire.WorkerInfo{ID: id, Group: group, Host: "h", Handlers: []string{"echo"},
		Capacity: 4, StartedAt: beatAt.Add(-time.Minute), BeatAt: beatAt})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (r *Registry) beat(t *testing.T, group, id string) {
	t.Helper()
	r.heard(stream.WorkerKey(group, id), jetstream.KeyValuePut, heartbeat(t, group, id, r.now()))
}

func names(ws []wire.WorkerInfo) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Group+"/"+w.ID)
	}
	return out
}

// A worker is live while its last heartbeat arrived less than the TTL ago
// by this process's clock: a worker that died (its key is not deleted,
// and a watcher is not told about the bucket's expiry) drops out one TTL
// after its last beat, and one that beats again is back.
func TestLiveWhileTheLastHeartbeatIsYoungerThanTheTTL(t *testing.T) {
	r, clk := newRegistry(t, 6*time.Second)
	r.beat(t, "g", "a")
	clk.Advance(4 * time.Second)
	r.beat(t, "g", "b")

	clk.Advance(2 * time.Second) // a's beat is exactly the TTL old
	if got := names(r.Live("g")); !slices.Equal(got, []string{"g/a", "g/b"}) {
		t.Errorf("at t0+6s: live %v, want a and b", got)
	}
	clk.Advance(time.Millisecond)
	if got := names(r.Live("g")); !slices.Equal(got, []string{"g/b"}) {
		t.Errorf("at t0+6.001s: live %v, want only b (a's beat is older than the TTL)", got)
	}
	r.beat(t, "g", "a")
	clk.Advance(5 * time.Second)
	if got := names(r.Live("g")); !slices.Equal(got, []string{"g/a"}) {
		t.Errorf("at t0+11s: live %v, want a (beat again at t0+6s), not b (last beat at t0+4s)", got)
	}
}

// Age is judged by when the heartbeat arrived here, never by the time the
// worker wrote in it: a worker whose clock is an hour off either way is
// live while it beats, and gone a TTL after.
func TestLivenessIgnoresTheWorkersClock(t *testing.T) {
	r, clk := newRegistry(t, 6*time.Second)
	r.heard(stream.WorkerKey("g", "slow"), jetstream.KeyValuePut, heartbeat(t, "g", "slow", t0.Add(-time.Hour)))
	r.heard(stream.WorkerKey("g", "fast"), jetstream.KeyValuePut, heartbeat(t, "g", "fast", t0.Add(time.Hour)))
	if got := names(r.Live("g")); !slices.Equal(got, []string{"g/fast", "g/slow"}) {
		t.Errorf("live %v, want both workers whatever their clocks say", got)
	}
	clk.Advance(7 * time.Second)
	if got := r.Live("g"); len(got) != 0 {
		t.Errorf("live %v a TTL after their last beats, want none", names(got))
	}
}

// A worker that stops deletes its key (or the key is purged): it is gone
// at once, without waiting out the TTL.
func TestDeletedWorkerIsGoneAtOnce(t *testing.T) {
	r, _ := newRegistry(t, 0)
	r.beat(t, "g", "a")
	r.beat(t, "g", "b")
	r.beat(t, "g", "c")
	r.heard(stream.WorkerKey("g", "a"), jetstream.KeyValueDelete, nil)
	r.heard(stream.WorkerKey("g", "c"), jetstream.KeyValuePurge, nil)
	if got := names(r.Live("")); !slices.Equal(got, []string{"g/b"}) {
		t.Errorf("live %v after a's delete and c's purge, want only b", got)
	}
}

// Live lists a group's workers, or with "" every group's, by group and id:
// routing's candidates and the console's list come out in a stable order.
func TestLiveByGroupAndID(t *testing.T) {
	r, _ := newRegistry(t, 0)
	for _, w := range [][2]string{{"ops", "w2"}, {"billing", "w9"}, {"ops", "w10"}, {"billing", "w1"}, {"ops", "w1"}} {
		r.beat(t, w[0], w[1])
	}
	if got, want := names(r.Live("")), []string{"billing/w1", "billing/w9", "ops/w1", "ops/w10", "ops/w2"}; !slices.Equal(got, want) {
		t.Errorf("Live(\"\") = %v, want %v", got, want)
	}
	if got, want := names(r.Live("ops")), []string{"ops/w1", "ops/w10", "ops/w2"}; !slices.Equal(got, want) {
		t.Errorf("Live(ops) = %v, want %v", got, want)
	}
	if got := r.Live("nobody"); len(got) != 0 {
		t.Errorf("Live(nobody) = %v, want none", names(got))
	}
}

// Anyone who can write the bucket could put anything in it: a heartbeat
// that does not decode, or one claiming a group other than its key's (a
// worker of one group placing itself among another group's routing
// targets), is ignored.
func TestIgnoresMalformedAndForeignHeartbeats(t *testing.T) {
	r, _ := newRegistry(t, 0)
	r.heard("ops.intruder", jetstream.KeyValuePut, heartbeat(t, "billing", "intruder", t0))
	r.heard("ops.w1", jetstream.KeyValuePut, []byte(`{"v":1,"id":"w1"`))
	r.heard("ops.w2", jetstream.KeyValuePut, []byte(`{"v":1,"id":"w2","group":"ops","handlers":[],"capacity":0}`))
	r.heard("opsx.w3", jetstream.KeyValuePut, heartbeat(t, "ops", "w3", t0))
	if got := r.Live(""); len(got) != 0 {
		t.Errorf("live %v, want none of the malformed or foreign heartbeats", names(got))
	}
}
