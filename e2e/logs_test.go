package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// apiLog reads a run's log lines through the logs API.
func (c *cluster) apiLog(runID int64) []string {
	c.t.Helper()
	var out []string
	var from uint64
	for {
		page, err := c.api().RunLogs(c.ctx(), runID, from, 500)
		if err != nil {
			c.t.Fatalf("logs of run %d: %v", runID, err)
		}
		for _, l := range page.Lines {
			out = append(out, l.Msg)
		}
		if len(page.Lines) == 0 || page.Next <= from {
			return out
		}
		from = page.Next
	}
}

// streamLog reads the log lines of run runID of group straight from
// JETJOB_LOGS with an ordered consumer, without the scheduler.
func streamLog(t *testing.T, js jetstream.JetStream, group string, runID int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, stream.Logs, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{stream.Log(group, runID)},
	})
	if err != nil {
		t.Fatalf("log consumer for run %d: %v", runID, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("log consumer for run %d: %v", runID, err)
	}
	var out []string
	for pending := info.NumPending; pending > 0; pending-- {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("reading the log of run %d from %s: %v", runID, stream.Logs, err)
		}
		line, err := wire.DecodeLogLine(msg.Data())
		if err != nil {
			t.Errorf("run %d: undecodable log line %q: %v", runID, msg.Data(), err)
			continue
		}
		if line.RunID != runID {
			t.Errorf("log line of run %d on the subject of run %d", line.RunID, runID)
		}
		out = append(out, line.Msg)
	}
	return out
}
