package wfengine

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ForgetEnded deletes up to limit workflow runs that ended (any status
// but QUEUED and RUNNING) and were scheduled before before, oldest first,
// with their node runs' keys (workflow_node_runs, ON DELETE CASCADE), and
// returns how many it deleted. Maintenance calls it with the run
// retention's cutoff, the one past which the workflows' own runs and node
// runs are dropped with their days' partitions (package retention). A run
// still active is kept however old: it is still being advanced.
func ForgetEnded(ctx context.Context, tx pgx.Tx, before time.Time, limit int) (int64, error) {
	tag, err := tx.Exec(ctx, `DELETE FROM workflow_runs WHERE id IN (
			SELECT id FROM workflow_runs WHERE status NOT IN ('QUEUED', 'RUNNING') AND scheduled_at < $1
			ORDER BY scheduled_at LIMIT $2)`, before, limit)
	if err != nil {
		return 0, fmt.Errorf("delete workflow runs ended before %s: %w", before.Format(time.RFC3339), err)
	}
	return tag.RowsAffected(), nil
}
