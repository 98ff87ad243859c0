package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// TestExampleWorker runs the example against an embedded NATS as a
// scheduler would drive it: a report run succeeds with its progress in the
// run log, a sleep run past its timeout returns at once (it honours its
// context, so it is not abandoned), /metrics counts them, and cancelling
// the context stops the worker cleanly.
func TestExampleWorker(t *testing.T) {
	srv, _, js := natsembed.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The schedulers provision the streams; triggers published before the
	// worker's consumer exists wait in the stream for it.
	if err := stream.Provision(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	events, err := js.CreateConsumer(ctx, stream.Events, jetstream.ConsumerConfig{FilterSubject: stream.Event("example")})
	if err != nil {
		t.Fatal(err)
	}

	signer, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, config{natsURL: srv.ClientURL(), group: "example", metricsAddr: "127.0.0.1:0",
			triggerKeys: trigsign.EncodePublicKey(signer.PublicKey())},
			zaptest.NewLogger(t), func(a string) { addr <- a })
	}()

	publish(ctx, t, js, signer, &wire.Trigger{RunID: 1, JobID: 1, Group: "example", Handler: "report", Params: "2",
		TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC()})
	if ev := finished(ctx, t, events, 1); ev.Status != wire.StatusSucceeded {
		t.Fatalf("report run: %s %q, want SUCCEEDED", ev.Status, ev.Message)
	}
	last, err := js.Stream(ctx, stream.Logs)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := last.GetLastMsgForSubject(ctx, stream.Log("example", 1))
	if err != nil {
		t.Fatalf("report run logged nothing: %v", err)
	}
	line, err := wire.DecodeLogLine(raw.Data)
	if err != nil || !strings.Contains(line.Msg, `"step":2`) {
		t.Fatalf("last log line of the report run: %+v, %v; want step 2", line, err)
	}

	began := time.Now()
	publish(ctx, t, js, signer, &wire.Trigger{RunID: 2, JobID: 2, Group: "example", Handler: "sleep", Params: "1m", TimeoutMS: 200,
		TriggerType: wire.TriggerManual, ScheduledAt: time.Now().UTC()})
	ev := finished(ctx, t, events, 2)
	if ev.Status != wire.StatusTimedOut || strings.Contains(ev.Message, "abandoned") {
		t.Fatalf("sleep run: %s %q, want TIMED_OUT without being abandoned", ev.Status, ev.Message)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("sleep run took %s to time out after 200ms: it did not honour its context", took)
	}

	body := get(ctx, t, "http://"+<-addr+"/metrics")
	for _, want := range []string{
		`jetjob_worker_runs_started_total{group="example",handler="report"} 1`,
		`jetjob_worker_runs_started_total{group="example",handler="sleep"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("worker did not stop")
	}
}

// publish publishes trig signed by signer, as a scheduler does.
func publish(ctx context.Context, t *testing.T, js jetstream.JetStream, signer *trigsign.Signer, trig *wire.Trigger) {
	t.Helper()
	data, err := wire.EncodeTrigger(trig)
	if err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg(stream.TriggerAny(trig.Group))
	m.Data = data
	signer.Sign(m.Header, trig.Group, false, data)
	if _, err := js.PublishMsg(ctx, m, jetstream.WithMsgID(wire.MsgID(trig.RunID))); err != nil {
		t.Fatal(err)
	}
}

// finished reads events until run's finished event.
func finished(ctx context.Context, t *testing.T, cons jetstream.Consumer, run int64) wire.Event {
	t.Helper()
	for ctx.Err() == nil {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			t.Fatalf("waiting for run %d to finish: %v", run, err)
		}
		evs, err := wire.DecodeEvents(msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		_ = msg.Ack()
		for _, e := range evs {
			if e.RunID == run && e.Kind == wire.EventFinished {
				return e
			}
		}
	}
	t.Fatalf("run %d did not finish", run)
	return wire.Event{}
}

func get(ctx context.Context, t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
