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
// exactly when it is recorded.
func RecordEnds(ctx context.Context, tx pgx.Tx, moved []runs.Moved) error {
	var ends []alertoutbox.End
	for _, m := range moved {
		if alertable[m.Status] {
			ends = append(ends, alertoutbox.End{RunID: m.RunID, JobID: m.JobID, Group: m.Group, Status: string(m.Status),
				Attempt: m.Attempt, Final: m.Final, Message: m.Message, At: m.FinishedAt})
		}
	}
	return alertoutbox.RecordEnds(ctx, tx, ends)
}
