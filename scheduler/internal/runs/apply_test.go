package runs_test

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// Applying events moves a run only up in rank, and only a run of the
// update's group: a late RUNNING after SUCCEEDED, or an update naming
// another group, changes nothing.
func TestApplyEventsMonotonic(t *testing.T) {
	f := setup(t)
	in := f.plan(f.fire(0))[0]
	now := time.Now().UTC().Truncate(time.Microsecond)
	up := func(group string, st wire.Status) runs.Update {
		u := runs.Update{RunID: in.RunID, Group: group, ScheduledAt: in.ScheduledAt, Status: st, StartedAt: &now}
		if st.Terminal() {
			u.FinishedAt = &now
		}
		return u
	}
	if moved := f.apply(up("other", wire.StatusSucceeded)); len(moved) != 0 {
		t.Fatalf("an update of another group moved %+v", moved)
	}
	moved := f.apply(up("g", wire.StatusSucceeded))
	if len(moved) != 1 || moved[0].RunID != in.RunID || moved[0].Status != wire.StatusSucceeded || moved[0].JobID != f.jobID {
		t.Fatalf("moved %+v, want run %d SUCCEEDED", moved, in.RunID)
	}
	if moved := f.apply(up("g", wire.StatusRunning)); len(moved) != 0 {
		t.Fatalf("a late RUNNING moved %+v", moved)
	}
	if r := f.row(in.RunID); r.status != wire.StatusSucceeded {
		t.Fatalf("run after a late RUNNING: %s, want SUCCEEDED", r.status)
	}
}
