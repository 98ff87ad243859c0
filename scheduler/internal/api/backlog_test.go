package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jetjob/jetjob/scheduler/internal/backlog"
	"github.com/jetjob/jetjob/shared/wire"
)

// Each group's live capacity is put beside its sampled backlog: groups
// with only workers, only a backlog, or both; with ?group=, that group
// alone, even when nothing is known of it.
func TestGroupBacklogs(t *testing.T) {
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	stored := at.Add(-7 * time.Second)
	live := []wire.WorkerInfo{
		{ID: "w1", Group: "a", Capacity: 4, Running: []int64{1, 2, 3, 4}},
		{ID: "w2", Group: "a", Capacity: 8, Running: []int64{5}},
		{ID: "w3", Group: "c", Capacity: 2},
	}
	snap := backlog.Snapshot{At: at, Groups: []backlog.Group{
		{Group: "a", Pending: 200, InFlight: 5, Redelivered: 1, OldestPendingAt: stored, OldestPending: 7 * time.Second},
		{Group: "b", Pending: 3, OldestPendingAt: stored, OldestPending: 7 * time.Second},
	}}
	cases := []struct{ group, want string }{
		{"", `[{"group":"a","live_workers":2,"slots":12,"running":5,"pending":200,"oldest_pending_seconds":7,"oldest_pending_at":"2026-11-23T09:59:53Z","in_flight":5,"redelivered":1,"sampled_at":"2026-11-23T10:00:00Z"},` +
			`{"group":"b","live_workers":0,"slots":0,"running":0,"pending":3,"oldest_pending_seconds":7,"oldest_pending_at":"2026-11-23T09:59:53Z","in_flight":0,"redelivered":0,"sampled_at":"2026-11-23T10:00:00Z"},` +
			`{"group":"c","live_workers":1,"slots":2,"running":0,"pending":0,"oldest_pending_seconds":0,"in_flight":0,"redelivered":0,"sampled_at":"2026-11-23T10:00:00Z"}]`},
		{"b", `[{"group":"b","live_workers":0,"slots":0,"running":0,"pending":3,"oldest_pending_seconds":7,"oldest_pending_at":"2026-11-23T09:59:53Z","in_flight":0,"redelivered":0,"sampled_at":"2026-11-23T10:00:00Z"}]`},
		{"nobody", `[{"group":"nobody","live_workers":0,"slots":0,"running":0,"pending":0,"oldest_pending_seconds":0,"in_flight":0,"redelivered":0,"sampled_at":"2026-11-23T10:00:00Z"}]`},
	}
	for _, tc := range cases {
		var ws []wire.WorkerInfo
		for _, w := range live {
			if tc.group == "" || w.Group == tc.group {
				ws = append(ws, w)
			}
		}
		b, err := json.Marshal(groupBacklogs(tc.group, ws, snap))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("group %q:\n got %s\nwant %s", tc.group, b, tc.want)
		}
	}
	// Before the first sample: capacity only, no sample time.
	b, _ := json.Marshal(groupBacklogs("", live[2:], backlog.Snapshot{}))
	if want := `[{"group":"c","live_workers":1,"slots":2,"running":0,"pending":0,"oldest_pending_seconds":0,"in_flight":0,"redelivered":0}]`; string(b) != want {
		t.Errorf("no sample yet:\n got %s\nwant %s", b, want)
	}
}
