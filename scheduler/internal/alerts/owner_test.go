package alerts

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/egress"
	"github.com/jetjob/jetjob/scheduler/internal/alarm"
	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
	"github.com/jetjob/jetjob/scheduler/internal/smtptest"
	"github.com/jetjob/jetjob/shared/wire"
)

// An email channel naming "owner" sends each job's alert to that job's
// owner when the owner is an email address, with the channel's other
// addresses; a job whose owner is no address (a team's name) leaves only
// those, and a channel of "owner" alone then fails its delivery saying so.
func TestOwnerIsAnEmailChannelsRecipient(t *testing.T) {
	w := newWorld(t)
	srv := smtptest.Start(t, smtptest.Options{})
	policy, err := egress.New(egress.Config{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	sender, err := alarm.New(alarm.Config{Timeout: 5 * time.Second, SMTP: alarm.SMTP{Host: srv.IP.String(), Port: srv.Port, From: "jetjob@example.com"}},
		alarm.Deps{Log: zaptest.NewLogger(t), Egress: policy})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Backoff: time.Hour}, Deps{Pool: w.pool, Log: zaptest.NewLogger(t), Sender: sender})
	if err != nil {
		t.Fatal(err)
	}
	channel := func(name, target string) int64 {
		ch, err := CreateChannel(w.ctx, w.pool, alarm.Channel{Name: name, Kind: alarm.KindEmail, Group: pgtest.Group, Target: target}, "admin")
		if err != nil {
			t.Fatal(err)
		}
		return ch.ID
	}
	withOps, ownerOnly := channel("owner-and-ops", "owner, ops@example.com"), channel("owner-only", "owner")
	w.rule(Rule{Name: "failures", JobID: w.jobID, Group: pgtest.Group, Events: []alarm.Event{alarm.EventFailed}, Threshold: 1,
		Channels: []int64{withOps, ownerOnly}})
	setOwner := func(owner string) {
		if _, err := w.pool.Exec(w.ctx, `UPDATE jobs SET owner = $2 WHERE id = $1`, w.jobID, owner); err != nil {
			t.Fatal(err)
		}
	}
	recipients := func(m smtptest.Message) string {
		for _, l := range strings.Split(m.Data, "\r\n") {
			if strings.HasPrefix(l, "To: ") {
				return strings.TrimPrefix(l, "To: ")
			}
		}
		return ""
	}

	setOwner("ana@example.com")
	w.end(wire.StatusFailed)
	e.Round(w.ctx)
	msgs := srv.Messages()
	if len(msgs) != 2 {
		t.Fatalf("%d mails for one failure on two channels, want 2", len(msgs))
	}
	var to []string
	for _, m := range msgs {
		to = append(to, recipients(m))
	}
	if !strings.Contains(strings.Join(to, "|"), "ana@example.com") || !strings.Contains(strings.Join(to, "|"), "ops@example.com") {
		t.Errorf("mails to %q, want the owner ana@example.com and ops@example.com", to)
	}

	// An owner that is a team's name: the owner-only channel has nobody.
	if _, err := w.pool.Exec(w.ctx, `UPDATE alerts SET state = 'closed'`); err != nil {
		t.Fatal(err)
	}
	setOwner("billing-team")
	w.end(wire.StatusFailed)
	e.Round(w.ctx)
	var lastErr string
	if err := w.pool.QueryRow(w.ctx, `SELECT last_error FROM alert_deliveries WHERE channel_id = $1 AND state <> 'sent'`, ownerOnly).
		Scan(&lastErr); err != nil {
		t.Fatalf("the owner-only channel's second delivery: %v (want one not sent)", err)
	}
	if !strings.Contains(lastErr, `owner "billing-team" is not an email address`) {
		t.Errorf("owner-only delivery error %q, want it to say the owner is no address", lastErr)
	}
	if got := srv.Messages(); len(got) != 3 || recipients(got[2]) != "<ops@example.com>" && recipients(got[2]) != "ops@example.com" {
		t.Errorf("after the second failure %d mails, the last to %q; want a third, to ops@example.com alone", len(got), recipients(got[len(got)-1]))
	}
}
