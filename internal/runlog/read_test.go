package runlog

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// A page of messages that are not log lines (anyone allowed to publish on
// a run's log subject can write them) is read past, not read again: a
// console paging a run's log reaches the lines after them.
func TestReadGoesPastAPageOfMalformedMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, js := natsembed.StartTest(t)
	if err := stream.Provision(ctx, js, stream.Config{}); err != nil {
		t.Fatal(err)
	}
	const run = 42
	for _, junk := range []string{"not json", `{"v":99}`, "{}"} {
		if _, err := js.Publish(ctx, stream.Log("g", run), []byte(junk)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := wire.EncodeLogLine(&wire.LogLine{RunID: run, JobID: 1, Seq: 1, At: time.Now(), Level: "info", Msg: "after the junk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, stream.Log("g", run), data); err != nil {
		t.Fatal(err)
	}

	r := New(js)
	var got []Line
	from := uint64(0)
	for range 5 {
		lines, next, err := r.Read(ctx, "g", run, from, 3)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lines...)
		if len(got) > 0 || next == from {
			break
		}
		from = next
	}
	if len(got) != 1 || got[0].Msg != "after the junk" {
		t.Fatalf("read %+v, want the one line after three malformed messages", got)
	}
}
