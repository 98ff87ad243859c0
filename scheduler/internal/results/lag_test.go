package results

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
)

// The lag is the age of the stream's first message at the server's time,
// while that message moves; an empty stream and an applier that stopped
// taking messages for stallAfter both say 0.
func TestLagJudgesProgress(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	now := at.Add(time.Hour) // local clock far off the server's: not used while the server says
	l := &Lag{}
	state := func(first uint64, stored time.Time) jetstream.StreamState {
		return jetstream.StreamState{Msgs: 10, FirstSeq: first, FirstTime: stored}
	}
	if got := l.judge(state(5, at.Add(-2*time.Second)), at, now); got != 2*time.Second {
		t.Errorf("first look: lag %s, want 2s (the first message's age at the server's time)", got)
	}
	// The same first message 4 s later: not yet stalled.
	if got := l.judge(state(5, at.Add(-2*time.Second)), at.Add(4*time.Second), now.Add(4*time.Second)); got != 6*time.Second {
		t.Errorf("unmoved for 4s: lag %s, want 6s", got)
	}
	// Unmoved for stallAfter: the applier is away, not slow.
	if got := l.judge(state(5, at.Add(-2*time.Second)), at.Add(stallAfter), now.Add(stallAfter)); got != 0 {
		t.Errorf("unmoved for %s: lag %s, want 0", stallAfter, got)
	}
	// It moves again: the lag counts again.
	if got := l.judge(state(9, at.Add(3*time.Second)), at.Add(6*time.Second), now.Add(6*time.Second)); got != 3*time.Second {
		t.Errorf("moved: lag %s, want 3s", got)
	}
	// Empty, a long while: 0; then a message comes (its sequence is the
	// empty stream's first): its age counts at once.
	empty := jetstream.StreamState{FirstSeq: 20}
	if got := l.judge(empty, at.Add(7*time.Second), now.Add(7*time.Second)); got != 0 {
		t.Errorf("empty: lag %s, want 0", got)
	}
	if got := l.judge(empty, at.Add(60*time.Second), now.Add(60*time.Second)); got != 0 {
		t.Errorf("empty a minute: lag %s, want 0", got)
	}
	if got := l.judge(state(20, at.Add(60*time.Second)), at.Add(61*time.Second), now.Add(61*time.Second)); got != time.Second {
		t.Errorf("a message after a minute empty: lag %s, want 1s", got)
	}
	// No server time in the answer: the local clock stands in.
	if got := l.judge(state(21, now.Add(-time.Second)), time.Time{}, now); got != time.Second {
		t.Errorf("without the server's time: lag %s, want 1s", got)
	}
}

// Against a real JETJOB_EVENTS: an event waiting makes a lag that grows;
// once it is gone (applied and acked, here deleted) the lag is 0.
func TestLagReadsTheEventsStream(t *testing.T) {
	_, _, js := natsembed.StartTest(t)
	ctx := context.Background()
	if err := stream.Provision(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	l := NewLag(js)
	l.every = 0
	if got := l.Sample(ctx); got != 0 {
		t.Errorf("empty stream: lag %s, want 0", got)
	}
	ack, err := js.Publish(ctx, stream.Event("g"), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 10*time.Second, "a lag for the waiting event", func() bool { return l.Sample(ctx) > 0 })
	s, err := js.Stream(ctx, stream.Events)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, ack.Sequence); err != nil {
		t.Fatal(err)
	}
	if got := l.Sample(ctx); got != 0 {
		t.Errorf("after the event left the stream: lag %s, want 0", got)
	}
}
