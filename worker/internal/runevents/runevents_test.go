package runevents

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
	"github.com/jetjob/jetjob/worker/internal/testnats"
)

// Publish returns once the event is stored in JETJOB_EVENTS, on the
// group's subject, in a message whose id names the group, the worker, its
// start and the batch; once the publisher stopped it fails.
func TestPublish(t *testing.T) {
	e := testnats.New(t)
	p := New(e.JS, "g", "w1", zaptest.NewLogger(t))
	ctx, cancel := context.WithCancel(context.Background())
	go p.Run(ctx)
	at := time.Unix(1000, 0).UTC()
	ev := wire.Event{Kind: wire.EventStarted, RunID: 1, JobID: 7, WorkerID: "w1", Status: wire.StatusRunning, At: at}
	if err := p.Publish(ev, ""); err != nil {
		t.Fatal(err)
	}
	s, err := e.JS.Stream(e.Ctx(), stream.Events)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := s.GetLastMsgForSubject(e.Ctx(), stream.Event("g"))
	if err != nil {
		t.Fatalf("the event is not stored once Publish returned: %v", err)
	}
	if id := msg.Header.Get(jetstream.MsgIDHeader); !regexp.MustCompile(`^events-g-w1-\d+-1$`).MatchString(id) {
		t.Errorf("message id %q, want events-g-w1-<start ns>-1", id)
	}
	got, err := wire.DecodeEvents(msg.Data)
	if err != nil || len(got) != 1 || got[0].RunID != 1 || got[0].Kind != wire.EventStarted {
		t.Errorf("stored events %+v (%v), want run 1's started event", got, err)
	}

	cancel()
	<-p.Done()
	if err := p.Publish(ev, ""); !errors.Is(err, ErrStopped) {
		t.Errorf("Publish after the stop: %v, want ErrStopped", err)
	}
}
