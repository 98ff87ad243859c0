package runlog

import (
	"context"
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// A page of messages that are not log lines (anyone allowed to publish on
// a run's log subject can write them) is read past, not read again: a
// console paging a run's log reaches the lines after them.
func TestReadGoesPastAPageOfMalformedMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, js := jstest.Streams(t)
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

// Purge deletes a run's lines and only its: another run's, of the same
// group or another, stay.
func TestPurgeDeletesOneRunsLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, js := jstest.Streams(t)
	publish := func(group string, run int64) {
		t.Helper()
		data, err := wire.EncodeLogLine(&wire.LogLine{RunID: run, JobID: 1, Seq: 1, At: time.Now(), Level: "info", Msg: "a line"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, stream.Log(group, run), data); err != nil {
			t.Fatal(err)
		}
	}
	publish("g", 7)
	publish("g", 7)
	publish("g", 8)
	publish("h", 7)
	r := New(js)
	if err := r.Purge(ctx, "g", 7); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		group string
		run   int64
		want  int
	}{{"g", 7, 0}, {"g", 8, 1}, {"h", 7, 1}} {
		lines, _, err := r.Read(ctx, c.group, c.run, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != c.want {
			t.Errorf("run %d of group %s: %d lines after the purge of run 7 of g, want %d", c.run, c.group, len(lines), c.want)
		}
	}
	if err := r.Purge(ctx, "no such group!", 7); err == nil {
		t.Error("purge with an invalid group name: no error")
	}
}
