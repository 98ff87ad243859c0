package natsembed

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/testtier"
)

// A restarted server on the same store directory and port keeps the
// messages its streams held: what `dev` and the outage tests rely on.
func TestRestartKeepsMessages(t *testing.T) {
	testtier.Needs(t, testtier.NATS)
	dir := t.TempDir()
	s, err := Start(Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	publish := func(url string) {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "t.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	publish(s.ClientURL())
	s.Shutdown()

	s2, err := Start(Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown()
	if s2.Port() != port {
		t.Fatalf("restarted on port %d, want %d", s2.Port(), port)
	}
	nc, err := nats.Connect(s2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages after restart, want 1", info.State.Msgs)
	}
}
