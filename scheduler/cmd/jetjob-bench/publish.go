package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// runPublish measures the broker's floor for fire lag: how long JetStream
// takes to store and acknowledge a burst of triggers published at one
// instant, with nothing else running (no scheduler, no worker, no
// PostgreSQL). Each burst is --publish-bursts of n messages shaped like
// a dispatcher's: a trigger-sized payload, a Nats-Msg-Id, the expected
// stream and the scheduler header, published asynchronously to
// JETJOB_TRIGGERS as provisioned. The stream is purged between bursts.
// The last acknowledgement of a burst bounds from below the fire lag of
// its last run in a jetjob that publishes that many fires due at one
// instant.
func runPublish(ctx context.Context, e *env, res *Result) error {
	if err := e.startNATS(ctx); err != nil {
		return err
	}
	res.Machine = e.machine(ctx)
	nc, err := nats.Connect(e.natsURL)
	if err != nil {
		return fmt.Errorf("publish: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1<<16))
	if err != nil {
		return err
	}
	s, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		return err
	}
	data, err := wire.EncodeTrigger(&wire.Trigger{RunID: 1 << 40, JobID: 1 << 20, Group: "bench", Handler: "noop",
		TriggerType: wire.TriggerSchedule, ScheduledAt: time.Now().UTC(), MisfirePolicy: "fire_once",
		MisfireThresholdMS: 5000, BlockStrategy: "serial"})
	if err != nil {
		return err
	}
	id := 0
	for _, n := range e.o.publishSizes {
		var lasts, handed []float64
		for range e.o.publishBursts {
			if err := s.Purge(ctx); err != nil {
				return err
			}
			t0 := time.Now()
			futs := make([]jetstream.PubAckFuture, n)
			for i := range futs {
				id++
				m := nats.NewMsg(stream.TriggerAny("bench"))
				m.Data = data
				m.Header.Set("Jetjob-Scheduler", "bench-s0")
				if futs[i], err = js.PublishMsgAsync(m, jetstream.WithMsgID(wire.MsgID(int64(id))),
					jetstream.WithExpectStream(stream.Triggers)); err != nil {
					return fmt.Errorf("publish: %w", err)
				}
			}
			handed = append(handed, millis(time.Since(t0)))
			for _, f := range futs {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					return fmt.Errorf("publish: ack: %w", err)
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			lasts = append(lasts, millis(time.Since(t0)))
		}
		slices.Sort(lasts)
		slices.Sort(handed)
		p := PublishBurst{Messages: n, Bursts: len(lasts), HandedP50Ms: round3(handed[len(handed)/2]),
			LastAckP50Ms: round3(lasts[len(lasts)/2]), LastAckMaxMs: round3(lasts[len(lasts)-1])}
		p.MsgsPerSec = round1(float64(n) / (p.LastAckP50Ms / 1000))
		res.Publish = append(res.Publish, p)
		logf("burst of %d: last ack after p50 %.1f ms, max %.1f ms (%.0f msgs/s)", n, p.LastAckP50Ms, p.LastAckMaxMs, p.MsgsPerSec)
	}
	return nil
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
