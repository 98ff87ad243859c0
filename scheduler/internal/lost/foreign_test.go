package lost

import (
	"testing"
	"time"

	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// A spent trigger is read with the group its subject names: a trigger (or
// a line of a batch) whose body names another group is no run of this
// subject's group, so the monitor must not end that run LOST; it is left
// out and reported, the others of the batch still ended.
func TestSpentTriggerOfAnotherGroupIsNotEnded(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	trig := func(run int64, group string) *wire.Trigger {
		return &wire.Trigger{V: wire.Version, RunID: run, JobID: run, Group: group, Handler: "h",
			TriggerType: wire.TriggerSchedule, ScheduledAt: at}
	}
	one, err := wire.EncodeTrigger(trig(7, "b"))
	if err != nil {
		t.Fatal(err)
	}
	batch, err := wire.EncodeTriggerBatch([]*wire.Trigger{trig(8, "a"), trig(9, "b"), trig(10, "a")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		subject string
		data    []byte
		want    []int64
	}{
		{stream.TriggerAny("a"), one, nil},
		{stream.TriggerWorker("a", "a-1"), one, nil},
		{stream.TriggerBatch("a"), batch, []int64{8, 10}},
	} {
		bad := 0
		got := spentRuns(c.subject, c.data, func(string, error) { bad++ })
		var ids []int64
		for _, tr := range got {
			ids = append(ids, tr.RunID)
			if _, subject, _ := lostEvent(tr, 5, at); subject != stream.Event("a") {
				t.Errorf("%s: run %d's LOST event on %s, want %s", c.subject, tr.RunID, subject, stream.Event("a"))
			}
		}
		if len(ids) != len(c.want) || (len(ids) > 0 && (ids[0] != c.want[0] || ids[len(ids)-1] != c.want[len(c.want)-1])) {
			t.Errorf("%s: spent runs %v, want %v (none of group b)", c.subject, ids, c.want)
		}
		if bad != 1 {
			t.Errorf("%s: %d reports, want one for the trigger of group b", c.subject, bad)
		}
	}
}
