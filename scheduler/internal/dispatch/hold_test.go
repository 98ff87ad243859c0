package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/runs"
	"github.com/jetjob/jetjob/shared/wire"
)

// holdBack leaves out the runs that wait for their group's resume and
// keeps the others in order; with no group paused it returns the very
// slice it was given.
func TestHoldBack(t *testing.T) {
	pausedAt := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var paused runs.Paused
	d, err := New(Config{}, Deps{Paused: func() runs.Paused { return paused }})
	if err != nil {
		t.Fatal(err)
	}
	run := func(id int64, group string, typ wire.TriggerType, after time.Duration) runs.Planned {
		return runs.Planned{RunID: id, Group: group, TriggerType: typ, ScheduledAt: pausedAt.Add(after)}
	}
	due := []runs.Planned{
		run(1, "g", wire.TriggerRetry, -time.Second), // due before the pause: in flight
		run(2, "g", wire.TriggerRetry, time.Second),
		run(3, "g", wire.TriggerManual, time.Second), // manual runs never wait
		run(4, "other", wire.TriggerParent, time.Second),
		run(5, "g", wire.TriggerParent, time.Second),
		run(6, "g", wire.TriggerWorkflow, time.Second),
		run(7, "g", wire.TriggerSchedule, time.Second),
	}
	if got := d.holdBack(due); &got[0] != &due[0] || len(got) != len(due) {
		t.Fatal("with no group paused holdBack did not return due as it is")
	}
	paused = runs.Paused{"g": pausedAt}
	var ids []int64
	for _, r := range d.holdBack(due) {
		ids = append(ids, r.RunID)
	}
	if want := []int64{1, 3, 4, 7}; !slices.Equal(ids, want) {
		t.Fatalf("holdBack kept %v, want %v", ids, want)
	}
	if due[1].RunID != 2 {
		t.Fatal("holdBack changed the slice it was given")
	}
}
