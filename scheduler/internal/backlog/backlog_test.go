package backlog

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/jstest"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/internal/testwait"
)

func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, _, js := jstest.Streams(t)
	return js
}

// publish stores n triggers on subject and returns when each was stored.
func publish(t *testing.T, js jetstream.JetStream, subject string, n int) []time.Time {
	t.Helper()
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"n":%d}`, i)
	}
	return store(t, js, subject, bodies)
}

// store publishes each body on subject to the triggers stream and returns
// when each was stored.
func store(t *testing.T, js jetstream.JetStream, subject string, bodies [][]byte) []time.Time {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, stream.Triggers)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]time.Time, 0, len(bodies))
	for _, b := range bodies {
		ack, err := js.Publish(ctx, subject, b)
		if err != nil {
			t.Fatal(err)
		}
		m, err := st.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m.Time)
	}
	return out
}

func sample(t *testing.T, js jetstream.JetStream, group string) Group {
	t.Helper()
	snap, err := Sample(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := snap.Group(group)
	return g
}

// expect waits until a sample of group shows the figures, failing the
// test with the last sample after a generous limit. A wait, not one
// sample: JetStream counts a consumer's pending messages asynchronously
// (the stream signals its consumers from a goroutine of its own after it
// acknowledged the publish), so a consumer's info read right after a
// publish may not count the newest messages yet. Sample is right to take
// what the server says: the next one, seconds later, counts them.
func expect(t *testing.T, js jetstream.JetStream, group, what string, pending, inFlight, redelivered int64, oldest time.Time) {
	t.Helper()
	var g Group
	if !testwait.Poll(10*time.Second, func() bool {
		g = sample(t, js, group)
		return g.Pending == pending && g.InFlight == inFlight && g.Redelivered == redelivered && g.OldestPendingAt.Equal(oldest)
	}) {
		t.Errorf("%s: pending %d, in flight %d, redelivered %d, oldest pending stored at %s; want %d, %d, %d, %s",
			what, g.Pending, g.InFlight, g.Redelivered, g.OldestPendingAt, pending, inFlight, redelivered, oldest)
	}
	if oldest.IsZero() != (g.OldestPending == 0) {
		t.Errorf("%s: oldest pending age %s with oldest stored at %s", what, g.OldestPending, g.OldestPendingAt)
	}
}

// Pending counts what no worker has taken: triggers on a subject without
// consumer, then a consumer's undelivered ones; delivered triggers move to
// in flight, a redelivery is counted apart, and the oldest pending trigger
// is the first one not delivered yet, over the shared and directed
// subjects of the group.
func TestSampleCountsWhatNoWorkerHasTaken(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A group whose workers never started: no consumer at all.
	shared := publish(t, js, stream.TriggerAny("a"), 3)
	expect(t, js, "a", "no consumer", 3, 0, 0, shared[0])

	// Its first worker starts and takes one trigger (a run slot).
	cons := groupConsumer(t, js, stream.AnyConsumer("a"), stream.TriggerAny("a"))
	expect(t, js, "a", "consumer created", 3, 0, 0, shared[0])
	first := fetch(t, cons)
	expect(t, js, "a", "one taken", 2, 1, 0, shared[1])

	// Directed triggers of a worker (its consumer exists) and of a worker
	// whose consumer is gone: all pending, the oldest over all of them.
	if _, err := js.CreateOrUpdateConsumer(ctx, stream.Triggers, stream.DirectedConsumerConfig("a", "w1", 30*time.Second, 5)); err != nil {
		t.Fatal(err)
	}
	directed := publish(t, js, stream.TriggerWorker("a", "w1"), 2)
	publish(t, js, stream.TriggerWorker("a", "gone"), 1)
	expect(t, js, "a", "directed", 5, 1, 0, shared[1])

	// Handed back, then every shared trigger taken: the handed-back one
	// is in flight again, and redelivered; the oldest pending is directed.
	if err := first.Nak(); err != nil {
		t.Fatal(err)
	}
	held := fetchN(t, cons, 3)
	expect(t, js, "a", "redelivered", 3, 3, 1, directed[0])

	// Other groups are apart.
	b := publish(t, js, stream.TriggerAny("b"), 1)
	expect(t, js, "b", "group b", 1, 0, 0, b[0])
	expect(t, js, "a", "group a beside b", 3, 3, 1, directed[0])

	// The shared queue done: what is left is directed.
	for _, m := range held {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, js, "a", "shared queue done", 3, 0, 0, directed[0])
}

// groupConsumer creates a group's consumer as its workers do (name
// durable, on subject).
func groupConsumer(t *testing.T, js jetstream.JetStream, durable, subject string) jetstream.Consumer {
	t.Helper()
	cons, err := js.CreateOrUpdateConsumer(context.Background(), stream.Triggers, jetstream.ConsumerConfig{
		Durable: durable, FilterSubject: subject,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, MaxDeliver: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cons
}

func fetch(t *testing.T, cons jetstream.Consumer) jetstream.Msg {
	t.Helper()
	return fetchN(t, cons, 1)[0]
}

// fetchN takes exactly n messages from cons, failing the test otherwise.
func fetchN(t *testing.T, cons jetstream.Consumer, n int) []jetstream.Msg {
	t.Helper()
	batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var held []jetstream.Msg
	for m := range batch.Messages() {
		held = append(held, m)
	}
	if len(held) != n {
		t.Fatalf("fetched %d messages (%v), want %d", len(held), batch.Error(), n)
	}
	return held
}

// The age is measured on the server's clock and grows while the trigger
// waits.
func TestSampleAgeGrows(t *testing.T) {
	js := startJetStream(t)
	publish(t, js, stream.TriggerAny("a"), 1)
	first := sample(t, js, "a")
	var g Group
	if !testwait.Poll(10*time.Second, func() bool {
		g = sample(t, js, "a")
		return g.OldestPending > first.OldestPending+100*time.Millisecond
	}) {
		t.Fatalf("oldest pending age stayed at %s (first %s)", g.OldestPending, first.OldestPending)
	}
}

// A group is reported behind once when its oldest pending trigger passes
// the threshold, and caught up once when it is back under it or has
// nothing pending any more.
func TestWatchLogsEachEpisodeOnce(t *testing.T) {
	w := watch{after: 5 * time.Second, since: map[string]time.Time{}}
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s int, gs ...Group) Snapshot {
		return Snapshot{At: t0.Add(time.Duration(s) * time.Second), Groups: gs}
	}
	g := func(name string, age time.Duration) Group {
		return Group{Group: name, Pending: 10, OldestPending: age}
	}
	steps := []struct {
		snap Snapshot
		want string
	}{
		{at(0, g("a", 1*time.Second), g("b", 0)), ""},
		{at(5, g("a", 5*time.Second), g("b", 0)), ""}, // at the threshold is on time
		{at(10, g("a", 6*time.Second), g("b", 0)), "a behind"},
		{at(15, g("a", 11*time.Second), g("b", 0)), ""},
		{at(20, g("a", 16*time.Second), g("b", 7*time.Second)), "b behind"},
		{at(25, g("a", 2*time.Second), g("b", 12*time.Second)), "a caught up after 15s"},
		{at(30, g("a", 9*time.Second)), "a behind; b caught up after 10s"}, // b gone: nothing stored
		{at(35, g("a", 0)), "a caught up after 5s"},
		{at(40, g("a", 0)), ""},
	}
	for _, s := range steps {
		var got []string
		for _, c := range w.observe(s.snap) {
			if c.began {
				got = append(got, c.group.Group+" behind")
			} else {
				got = append(got, fmt.Sprintf("%s caught up after %s", c.group.Group, c.lasted))
			}
		}
		if have := join(got); have != s.want {
			t.Errorf("at %s: %q, want %q", s.snap.At.Format("15:04:05"), have, s.want)
		}
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{Interval: -1}, {WarnAfter: -1}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if _, err := New(Config{Interval: -time.Second}, Deps{}); err == nil {
		t.Errorf("New with a negative interval: %v", err)
	}
}

// publishBatches stores trigger batch messages of the given numbers of
// runs (one line each) on group's batch subject and returns when each
// was stored.
func publishBatches(t *testing.T, js jetstream.JetStream, group string, sizes ...int) []time.Time {
	t.Helper()
	bodies := make([][]byte, len(sizes))
	for i, n := range sizes {
		lines := make([]string, n)
		for l := range lines {
			lines[l] = fmt.Sprintf(`{"n":%d,"line":%d}`, i, l)
		}
		bodies[i] = []byte(strings.Join(lines, "\n"))
	}
	return store(t, js, stream.TriggerBatch(group), bodies)
}

// A trigger batch counts as the runs it carries: pending with no worker
// consuming batches yet, pending and in flight once one takes a batch,
// redelivered when it hands it back (at the mean runs of the batches in
// flight: here exact), added to the group's other triggers; the oldest
// pending is the first batch not delivered.
func TestSampleCountsTheRunsOfBatches(t *testing.T) {
	js := startJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	stored := publishBatches(t, js, "a", 3, 3)
	expect(t, js, "a", "no consumer", 6, 0, 0, stored[0])

	cons := groupConsumer(t, js, stream.BatchConsumer("a"), stream.TriggerBatch("a"))
	expect(t, js, "a", "consumer created", 6, 0, 0, stored[0])
	first := fetch(t, cons)
	expect(t, js, "a", "a batch taken", 3, 3, 0, stored[1])

	shared := publish(t, js, stream.TriggerAny("a"), 1)
	expect(t, js, "a", "beside the shared queue", 4, 3, 0, stored[1])

	if err := first.Nak(); err != nil {
		t.Fatal(err)
	}
	held := fetchN(t, cons, 2)
	expect(t, js, "a", "handed back and taken again", 1, 6, 3, shared[0])

	for _, m := range held {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expect(t, js, "a", "the batches done", 1, 0, 0, shared[0])

	// Batches of different sizes: each counted as its own runs.
	storedB := publishBatches(t, js, "b", 3, 2)
	consB := groupConsumer(t, js, stream.BatchConsumer("b"), stream.TriggerBatch("b"))
	fetch(t, consB)
	expect(t, js, "b", "group b, its batch of 3 taken", 2, 3, 0, storedB[1])
}

// Past maxBatchReads stored batches the rest are estimated at the mean
// of those read: with batches of one size, exactly.
func TestSampleEstimatesManyBatches(t *testing.T) {
	js := startJetStream(t)
	sizes := make([]int, maxBatchReads+6)
	for i := range sizes {
		sizes[i] = 4
	}
	stored := publishBatches(t, js, "a", sizes...)
	expect(t, js, "a", "many batches", int64(4*len(sizes)), 0, 0, stored[0])
}

// The events applier's lag is the oldest unapplied event's age while the
// first unapplied event moves from sample to sample; one that stayed the
// first for StallAfter means the applier is away, and the lag is 0. An
// empty stream is never still: the next event takes its first sequence.
func TestEventsLagWhileTheApplierMoves(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var w eventsWatch
	look := func(at time.Duration, unapplied int64, first uint64, age time.Duration) Events {
		ev := Events{Unapplied: unapplied, FirstSeq: first, OldestUnapplied: age}
		w.observe(&ev, t0.Add(at))
		return ev
	}
	for _, c := range []struct {
		name      string
		at        time.Duration
		unapplied int64
		first     uint64
		age, lag  time.Duration
	}{
		{"first look", 0, 10, 5, 2 * time.Second, 2 * time.Second},
		{"the same first event 4s later: slow", 4 * time.Second, 10, 5, 6 * time.Second, 6 * time.Second},
		{"unmoved for StallAfter: away", StallAfter, 10, 5, 7 * time.Second, 0},
		{"moved again", 6 * time.Second, 10, 9, 3 * time.Second, 3 * time.Second},
		{"empty", 7 * time.Second, 0, 20, 0, 0},
		{"empty a minute", 67 * time.Second, 0, 20, 0, 0},
		{"an event after a minute empty (the empty stream's first sequence)", 68 * time.Second, 1, 20, time.Second, time.Second},
	} {
		if got := look(c.at, c.unapplied, c.first, c.age).Lag(); got != c.lag {
			t.Errorf("%s: lag %s, want %s", c.name, got, c.lag)
		}
	}
}
