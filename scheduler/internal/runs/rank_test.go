package runs_test

import (
	"testing"

	"github.com/jetjob/jetjob/shared/wire"
)

// The statements compare ranks with the SQL function jetjob_status_rank
// (migration 0001), a copy of wire.Status.Rank that a migration cannot
// import: this keeps the two equal for every status.
func TestStatusRankMatchesSQL(t *testing.T) {
	f := setup(t)
	for _, st := range wire.Statuses {
		var rank int
		if err := f.pool.QueryRow(f.ctx, `SELECT jetjob_status_rank($1)`, string(st)).Scan(&rank); err != nil {
			t.Fatal(err)
		}
		if rank != st.Rank() {
			t.Errorf("jetjob_status_rank(%s) = %d, wire.Status.Rank = %d", st, rank, st.Rank())
		}
	}
}
