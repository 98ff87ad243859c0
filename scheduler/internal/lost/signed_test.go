package lost

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/scheduler/internal/foreign"
	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/shared/wire"
)

// With signing on, only what a scheduler signed ends runs LOST when it
// comes back spent: an unsigned message, one signed by a key the
// schedulers do not trust, one whose body changed after signing, and one
// signed as a lone trigger but stored as a batch are deleted and counted,
// and the runs they name are left alone. Triggers signed by the
// scheduler's key, or by the previous key of a rotation, end their runs
// LOST.
func TestOnlySignedSpentTriggersEndRuns(t *testing.T) {
	ctx, js, triggers, events := monitorEnv(t)
	signer, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	previous, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	stranger, _, err := trigsign.GeneratePair()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := trigsign.NewVerifier(signer.PublicKey(), previous.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	m := New(js, keys, zaptest.NewLogger(t))
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	body := func(runs ...int64) []byte {
		var ts []*wire.Trigger
		for _, id := range runs {
			ts = append(ts, &wire.Trigger{V: wire.Version, RunID: id, JobID: id, Group: "g", Handler: "h",
				TriggerType: wire.TriggerSchedule, ScheduledAt: at})
		}
		if len(ts) == 1 {
			data, err := wire.EncodeTrigger(ts[0])
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		data, err := wire.EncodeTriggerBatch(ts)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var seqs []uint64
	spend := func(subject string, data []byte, sign func(h nats.Header)) {
		t.Helper()
		msg := nats.NewMsg(subject)
		msg.Data = data
		if sign != nil {
			sign(msg.Header)
		}
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		adv := fmt.Appendf(nil, `{"stream":%q,"consumer":"c","stream_seq":%d,"deliveries":5}`, stream.Triggers, ack.Sequence)
		if err := m.handle(ctx, triggers, adv); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	lone, batch := stream.TriggerAny("g"), stream.TriggerBatch("g")
	before := foreign.Total(foreign.LostUnsigned)

	spend(lone, body(1), nil)
	spend(lone, body(2), func(h nats.Header) { stranger.Sign(h, "g", false, body(2)) })
	spend(lone, body(3), func(h nats.Header) { signer.Sign(h, "g", false, body(33)) })
	spend(batch, body(4, 5), func(h nats.Header) { signer.Sign(h, "g", false, body(4, 5)) })
	spend(lone, body(6), func(h nats.Header) { signer.Sign(h, "other", false, body(6)) })

	spend(lone, body(10), func(h nats.Header) { signer.Sign(h, "g", false, body(10)) })
	spend(batch, body(11, 12), func(h nats.Header) { signer.Sign(h, "g", true, body(11, 12)) })
	spend(lone, body(13), func(h nats.Header) { previous.Sign(h, "g", false, body(13)) })

	if got := foreign.Total(foreign.LostUnsigned) - before; got != 5 {
		t.Errorf("jetjob_foreign_messages_total{source=lost_unsigned} rose by %v, want 5", got)
	}
	for _, seq := range seqs {
		if _, err := triggers.GetMsg(ctx, seq); !errors.Is(err, jetstream.ErrMsgNotFound) {
			t.Errorf("spent message %d still stored (%v): every one is deleted, believed or not", seq, err)
		}
	}
	got, err := events.Fetch(20, jetstream.FetchMaxWait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var lost []int64
	for msg := range got.Messages() {
		evs, err := wire.DecodeEvents(msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			lost = append(lost, ev.RunID)
		}
	}
	slices.Sort(lost)
	if want := []int64{10, 11, 12, 13}; !slices.Equal(lost, want) {
		t.Errorf("runs ended LOST: %v, want %v (only what a trusted key signed)", lost, want)
	}
}
