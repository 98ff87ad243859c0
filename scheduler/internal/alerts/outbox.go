package alerts

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/jetjob/jetjob/scheduler/internal/alertoutbox"
	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// alertable are the statuses whose ends go to the outbox.
var alertable = map[wire.Status]bool{
	wire.StatusFailed: true, wire.StatusTimedOut: true, wire.StatusLost: true,
	wire.StatusExpired: true, wire.StatusSucceeded: true,
}

// RecordEnds writes the ends among moved that a rule may follow from to
// the outbox (package alertoutbox), in tx: the results applier's
// transaction, which records them, so that an end is in the outbox
// exactly when it is recorded. updates are the batch moved came from: an
// end's message is its update's (a terminal move writes the event's).
func RecordEnds(ctx context.Context, tx pgx.Tx, moved []runs.Moved, updates []runs.Update) error {
	if len(moved) == 0 {
		return nil
	}
	return alertoutbox.RecordEnds(ctx, tx, func() []alertoutbox.End {
		msg := make(map[int64]string, len(updates))
		for _, u := range updates {
			msg[u.RunID] = u.Message
		}
		var ends []alertoutbox.End
		for _, m := range moved {
			if alertable[m.Status] {
				ends = append(ends, alertoutbox.End{RunID: m.RunID, JobID: m.JobID, Group: m.Group, Status: string(m.Status),
					Attempt: m.Attempt, Final: m.Final, Message: msg[m.RunID], At: m.FinishedAt})
			}
		}
		return ends
	})
}
