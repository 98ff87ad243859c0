package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// Lines logged through job.Logger reach the run's subject on JETJOB_LOGS in
// order, with their fields, at every level, before the result is reported.
func TestJobLogLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ev := e.events()
	e.start(Config{}, func(w *Worker) {
		w.Handle("h", func(ctx context.Context, job *Job) error {
			log := job.Logger.With(zap.String("step", "copy"))
			for i := range 5 {
				log.Info(fmt.Sprintf("line %d", i), zap.Int("i", i))
			}
			job.Logger.Debug("quiet detail")
			return nil
		})
	})
	e.publish(trigger(3, "h", ""))
	ev.waitFinished(3)

	cons, err := e.js.OrderedConsumer(e.ctx(), stream.Logs, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{stream.Log(testGroup, 3)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ level, msg string }{
		{"info", `line 0 {"step":"copy","i":0}`},
		{"info", `line 1 {"step":"copy","i":1}`},
		{"info", `line 2 {"step":"copy","i":2}`},
		{"info", `line 3 {"step":"copy","i":3}`},
		{"info", `line 4 {"step":"copy","i":4}`},
		{"debug", "quiet detail"},
	}
	for i, w := range want {
		// The result is published after the lines are stored, so they are
		// all there now.
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("log line %d: %v", i+1, err)
		}
		l, err := wire.DecodeLogLine(m.Data())
		if err != nil {
			t.Fatal(err)
		}
		if l.Seq != int64(i+1) || l.RunID != 3 || l.JobID != 1003 || l.Level != w.level || l.Msg != w.msg || l.At.IsZero() {
			t.Errorf("line %d: %+v, want seq %d %s %q", i+1, l, i+1, w.level, w.msg)
		}
	}
	if m, err := cons.Next(jetstream.FetchMaxWait(2 * testFetchWait)); err == nil {
		t.Errorf("unexpected extra line %s", m.Data())
	} else if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		t.Fatal(err)
	}
}
