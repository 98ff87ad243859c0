package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/runlog"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// checkNoForeignLogLines proves that group a's credential, which may
// publish log lines of its own group's runs (jetjob.log.a.*), cannot put a
// line into the log of group b's run: it publishes a well-formed line on
// jetjob.log.a.<run> naming run of group b, and reads b's run back the way
// the API and console do (runlog, with the scheduler's connection js). Only
// the line b's own worker wrote (own, its text) may show.
func checkNoForeignLogLines(t *testing.T, ctx context.Context, c *cluster, js jetstream.JetStream, run int64, own string) {
	t.Helper()
	forger, forgerV := c.connect(WorkerUser("a"), aPW, stream.WorkerInboxPrefix("a"))
	fjs, err := jetstream.New(forger)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.EncodeLogLine(&wire.LogLine{RunID: run, JobID: 400, Seq: 2, At: time.Now().UTC(),
		Level: "error", Msg: "forged by group a"})
	if err != nil {
		t.Fatal(err)
	}
	// Allowed by a's permissions: the subject names a's group.
	if _, err := fjs.Publish(ctx, stream.Log("a", run), data); err != nil {
		t.Fatalf("publishing on a's own log subject: %v", err)
	}
	if got := forgerV.only(t, forger); len(got) > 0 {
		t.Fatalf("a's credential was refused on its own log subject: %q", got)
	}
	lines, _, err := runlog.New(js).Read(ctx, "b", run, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, l := range lines {
		msgs = append(msgs, l.Msg)
	}
	if len(msgs) != 1 || !strings.Contains(msgs[0], own) {
		t.Errorf("log of group b's run %d reads %q, want only its worker's line %q (never one published on group a's subject)", run, msgs, own)
	}
}
